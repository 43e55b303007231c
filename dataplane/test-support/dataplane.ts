/** Starts a data plane in-process on a fresh real PostgreSQL database, as `npm start` would. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pino from 'pino';
import { bootstrapDataPlane } from '../src/bootstrap.js';
import type { DataPlane } from '../src/server.js';
import { freshDatabase } from './postgres.js';

export interface TestDataPlane {
  url: string;
  databaseUrl: string;
  dataDir: string;
  dataPlane: DataPlane;
  stop(): Promise<void>;
}

export const EXAMPLES_DIR = resolve(import.meta.dirname, '../../examples');

export async function startTestDataPlane(options: { manifests?: string; databaseUrl?: string; dataDir?: string; env?: NodeJS.ProcessEnv } = {}): Promise<TestDataPlane> {
  const databaseUrl = options.databaseUrl ?? (await freshDatabase());
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'das-data-'));
  const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const dataPlane = await bootstrapDataPlane({
    logger,
    configSource: { kind: 'files', path: options.manifests ?? EXAMPLES_DIR },
    dataDir,
    port: 0,
    host: '127.0.0.1',
    env: { ...process.env, ...options.env, DATABASE_URL: databaseUrl },
  });
  return { url: dataPlane.url, databaseUrl, dataDir, dataPlane, stop: () => dataPlane.stop() };
}
