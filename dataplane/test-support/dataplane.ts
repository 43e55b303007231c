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
