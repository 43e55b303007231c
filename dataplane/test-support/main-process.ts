/**
 * The data plane's real entry point as a child process: `dataplane/src/main.ts` under tsx (what
 * `npm start` runs) or the compiled `dist/dataplane/src/main.js` (what the container runs).
 * Spawned as `node …` directly, so signals reach the data plane itself.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from '../src/db/embedded.js';
import { call } from './http.js';

export const ROOT = resolve(import.meta.dirname, '../..');
export const COMPILED_MAIN = resolve(ROOT, 'dist/dataplane/src/main.js');

export type EntryPoint = 'tsx' | 'compiled';

export interface MainProcess {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** The environment without the test runner's database settings (main then starts its own embedded one). */
export function cleanEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const key of ['DATABASE_URL', 'PGHOST', 'PGDATABASE', 'PGUSER', 'PGPASSWORD', 'PGPORT']) delete env[key];
  return env;
}

/** Where bench/tracing.ts runs a data plane: another checkout (its untraced build), node flags (`--cpu-prof`). */
export interface MainPlacement {
  root?: string;
  nodeArgs?: string[];
}

/** `node` is the Node.js binary to run it with (default this one; node24.test.ts passes Node 24's). */
export function startMain(env: Record<string, string>, entry: EntryPoint = 'tsx', node = process.execPath, { root = ROOT, nodeArgs = [] }: MainPlacement = {}): MainProcess {
  if (entry === 'compiled' && !existsSync(COMPILED_MAIN)) throw new Error(`${COMPILED_MAIN} is missing: run npm run build (npm test's pretest does)`);
  const args = [...nodeArgs, ...(entry === 'tsx' ? ['--import', 'tsx', 'dataplane/src/main.ts'] : [COMPILED_MAIN])];
  const child = spawn(node, args, { cwd: root, env: { ...cleanEnv(), LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((res) => child.on('exit', (code) => res(code)));
  return { child, output: () => output, exited };
}

export async function waitReady(url: string, started: MainProcess, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const res = await call(url, { path: '/readyz' });
      if (res.status === 200) return;
      last = res.text;
    } catch {
      /* not listening yet */
    }
    if (started.child.exitCode !== null) throw new Error(`data plane exited ${started.child.exitCode}: ${started.output().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`data plane not ready; last /readyz: ${last}; output: ${started.output().slice(-3000)}`);
}

/** A process's resident set in bytes (Linux /proc). */
export function rssOf(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) * 1024;
}

/** main.ts on a free port of 127.0.0.1 with a fresh DATA_DIR (embedded PostgreSQL, the examples), once ready. */
export type ReadyMain = MainProcess & { port: number; url: string };

export async function startReadyMain(env: Record<string, string> = {}, placement: MainPlacement & { node?: string } = {}): Promise<ReadyMain> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'das-main-'));
  chmodSync(dataDir, 0o755); // as root, the embedded server runs as the postgres user and must reach it
  const main = startMain({ DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', ...env }, 'tsx', placement.node ?? process.execPath, placement);
  await waitReady(url, main);
  return { ...main, port, url };
}

/** SIGTERM, and the exit awaited (if it is still running). */
export async function stopMain(main: MainProcess | undefined): Promise<void> {
  if (main?.child.exitCode !== null || main.child.signalCode !== null) return;
  main.child.kill('SIGTERM');
  await main.exited;
}

/** A process's resident set now and at its peak (VmHWM), in MiB, from /proc. */
export function memoryOf(pid: number): { now: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { now: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

