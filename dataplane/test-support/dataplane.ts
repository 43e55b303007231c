/** Starts a data plane in-process on a fresh real PostgreSQL database, as `npm start` would. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pino, { type Logger } from 'pino';
import { bootstrapDataPlane } from '../src/bootstrap.js';
import type { DataPlane } from '../src/server.js';
import { client } from './http.js';
import { freshDatabase } from './postgres.js';
import { dataPlaneSettings } from '../../model/settings/dataplane.js';

export interface TestDataPlane {
  url: string;
  databaseUrl: string;
  dataDir: string;
  dataPlane: DataPlane;
  stop(): Promise<void>;
}

export const EXAMPLES_DIR = resolve(import.meta.dirname, '../../examples');

export interface TestDataPlaneOptions {
  manifests?: string;
  databaseUrl?: string;
  dataDir?: string;
  env?: NodeJS.ProcessEnv;
  /** Where the data plane logs; silent (or TEST_LOG_LEVEL) by default. */
  logger?: Logger;
}

export async function startTestDataPlane(options: TestDataPlaneOptions = {}): Promise<TestDataPlane> {
  const databaseUrl = options.databaseUrl ?? (await freshDatabase());
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'das-data-'));
  const logger = options.logger ?? pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const dataPlane = await bootstrapDataPlane({
    logger,
    configSource: { kind: 'files', path: options.manifests ?? EXAMPLES_DIR },
    dataDir,
    port: 0,
    host: '127.0.0.1',
    settings: dataPlaneSettings({ ...process.env, ...options.env, DATABASE_URL: databaseUrl }),
  });
  return { url: dataPlane.url, databaseUrl, dataDir, dataPlane, stop: async () => void (await dataPlane.stop()) };
}

/** A client on the data plane's iam gateway as the example dataset's super principal, demo-admin. */
export function adminClient(dp: Pick<TestDataPlane, 'url'>): ReturnType<typeof client> {
  return client(dp.url, { host: 'iam.localhost', headers: { authorization: 'Proxy demo-admin' } });
}

/**
 * Resolves once the data plane at `dp.url` counts `n` subscriptions open and reading
 * (`das_subscriptions` on /metrics): each has taken its start position, so a change committed from
 * then on reaches it, and one committed before may not (docs/subscriptions.md). Tests write after it.
 */
export async function subscriptionsCounted(dp: Pick<TestDataPlane, 'url'>, n = 1, timeoutMs = 30_000): Promise<void> {
  const admin = adminClient(dp);
  for (const deadline = Date.now() + timeoutMs; ; await new Promise((resolve) => setTimeout(resolve, 50))) {
    const metrics = await admin({ path: '/metrics' });
    const counted = Number(/^das_subscriptions (\d+)$/m.exec(metrics.text)?.[1] ?? 0);
    if (counted >= n) return;
    if (Date.now() > deadline) throw new Error(`das_subscriptions stayed at ${counted} (waited for ${n})`);
  }
}
