/** What the benchmarks share: starting servers the same way, waiting for them, CPU time from /proc, medians. */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { call } from '../dataplane/test-support/http.js';

export const ROOT = resolve(import.meta.dirname, '..');
/** The iam gateway as the example dataset's super principal. */
export const HEADERS = { host: 'iam.localhost', authorization: 'Proxy demo-admin' };

/**
 * Node with tsx's loader in the same process (the tsx CLI would put a wrapper process in between,
 * and its CPU in the figures). BENCH_PROFILE_DIR writes a CPU profile per server.
 */
export function start(script: string, env: Record<string, string>, options: { cwd?: string; label?: string } = {}): ChildProcess {
  const folder = [options.label ?? script.split('/').pop(), env.BARE_READ].filter(Boolean).join('-');
  const profile = process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${resolve(process.env.BENCH_PROFILE_DIR, folder)}`] : [];
  // BENCH_GC_DIR: V8's GC trace (bytes allocated between collections, on stdout) into a file per
  // server; a 1 MiB semi-space makes collections frequent, so a window's total is close.
  const gcDir = process.env.BENCH_GC_DIR;
  const gc = gcDir ? ['--trace-gc-nvp', '--max-semi-space-size=1'] : [];
  const stdout = gcDir ? openSync(resolve(gcDir, `${folder}.log`), 'w') : 'ignore';
  const spawnedAt = performance.now();
  // NODE_ENV as the image sets it (Dockerfile): graphql-js checks every type test in development
  // mode, a cost no deployment pays. BENCH_NODE_ENV=development measures that mode.
  const nodeEnv = process.env.BENCH_NODE_ENV ?? 'production';
  const child = spawn(process.execPath, [...profile, ...gc, '--import', 'tsx', script], { cwd: options.cwd ?? ROOT, env: { ...process.env, NODE_ENV: nodeEnv, ...env }, stdio: ['ignore', stdout, 'inherit'] });
  if (gcDir) gcTraces.set(child, { file: resolve(gcDir, `${folder}.log`), spawnedAt });
  return child;
}

/** Above this a scavenge's `allocated` is not young-generation allocation (see allocatedBetween). */
const YOUNG_LIMIT = 4 * 1024 * 1024;

const gcTraces = new Map<ChildProcess, { file: string; spawnedAt: number }>();

/**
 * Bytes a server allocated on its JavaScript heap between two moments of this process
 * (`performance.now()`), from its GC trace (BENCH_GC_DIR); undefined without one. Sums what the
 * scavenges inside the window found allocated in the young generation (every allocation but large
 * objects starts there; a mark-compact's own figure would count it twice): accurate to about one
 * semi-space (1 MiB).
 */
export function allocatedBetween(child: ChildProcess, from: number, to: number): number | undefined {
  const trace = gcTraces.get(child);
  if (!trace) return undefined;
  let bytes = 0;
  for (const m of readFileSync(trace.file, 'utf8').matchAll(/^\[\d+:0x[0-9a-f]+\]\s+(\d+) ms: .*? gc=s .*?\ballocated=(\d+)/gm)) {
    const at = trace.spawnedAt + Number(m[1]);
    // A scavenge just before a mark-compact reports tens of MiB (allocation in the old generation
    // since the last one): not the young garbage of requests, left out.
    if (at >= from && at < to && Number(m[2]) <= YOUNG_LIMIT) bytes += Number(m[2]);
  }
  return bytes;
}

/** Polls `path` until the server answers below 500 (or fails when it exits or takes a minute). */
export async function waitFor(url: string, path: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`${url} exited`);
    try {
      if ((await call(url, { path, host: HEADERS.host, headers: { authorization: HEADERS.authorization } })).status < 500) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not start`);
}

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/**
 * CPU time (user + system) a process has used, in ms; undefined where /proc is not there. With
 * `mainThreadOnly`, only its main thread's (where JavaScript runs; the rest is V8's GC and compiler
 * threads and libuv's pool).
 *
 * From the scheduler's nanosecond counters of each thread (/proc/<pid>/task/<tid>/schedstat) where
 * the kernel keeps them: /proc/<pid>/stat counts in ticks of 10 ms, which at 400 reads/s over a 5 s
 * round (2,000 reads) is 5 µs per read, and made each round's ratio jump by ±5%. A node process's
 * threads live as long as it does, so their sum is the process's time.
 */
export function cpuMs(pid: number | undefined, mainThreadOnly = false): number | undefined {
  const file = mainThreadOnly ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`;
  if (pid === undefined || !existsSync(file)) return undefined;
  const precise = scheduledMs(pid, mainThreadOnly);
  if (precise !== undefined) return precise;
  // Fields after the parenthesised command name: state is 3rd, utime 14th and stime 15th overall.
  const stat = readFileSync(file, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}

/** The first field of schedstat (ns on a CPU) of the main thread or of every thread; undefined without schedstat. */
function scheduledMs(pid: number, mainThreadOnly: boolean): number | undefined {
  const runNs = (tid: number | string): number => Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
  let ns: number;
  try {
    ns = runNs(pid);
  } catch {
    return undefined; // a kernel without scheduler statistics
  }
  if (!Number.isFinite(ns)) return undefined;
  if (mainThreadOnly) return ns / 1e6;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    if (tid === String(pid)) continue;
    try {
      const thread = runNs(tid);
      if (Number.isFinite(thread)) ns += thread;
    } catch {
      // The thread ended between the listing and its read.
    }
  }
  return ns / 1e6;
}

/**
 * A process's kernel-side counters from /proc: its system CPU time in ms and its minor page faults
 * (memory mapped anew and touched: large buffers allocated per batch show here); undefined where
 * /proc is not there.
 */
export function kernelCounters(pid: number | undefined): { systemMs: number; minorFaults: number } | undefined {
  const file = `/proc/${pid}/stat`;
  if (pid === undefined || !existsSync(file)) return undefined;
  // After the parenthesised command name: minflt is the 10th field overall, stime the 15th.
  const stat = readFileSync(file, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { systemMs: (Number(fields[12]) * 1000) / TICKS_PER_SECOND, minorFaults: Number(fields[7]) };
}

/** CPU ms of the whole PostgreSQL server: the postmaster with its reaped children, and its live processes (and theirs). */
export function postgresCpuMs(postmaster: number): number {
  const ms = (pid: number) => {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 1000) / TICKS_PER_SECOND;
  };
  let total = ms(postmaster);
  for (const entry of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    try {
      if (Number(/PPid:\s+(\d+)/.exec(readFileSync(`/proc/${entry}/status`, 'utf8'))?.[1]) === postmaster) total += ms(Number(entry));
    } catch {
      /* gone meanwhile */
    }
  }
  return total;
}

/**
 * CPU ms of each live PostgreSQL process that serves a connection (a backend, by its process title
 * `postgres: user db host…`), by pid: the rest of postgresCpuMs is the server's own work
 * (autovacuum, checkpointer, WAL writer; and backends that exited meanwhile).
 */
export function postgresBackendCpuMs(postmaster: number): Map<number, number> {
  const backends = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    try {
      if (Number(/PPid:\s+(\d+)/.exec(readFileSync(`/proc/${entry}/status`, 'utf8'))?.[1]) !== postmaster) continue;
      const title = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (/autovacuum|checkpointer|walwriter|background writer|launcher|startup|archiver|walsummarizer|io worker/.test(title)) continue;
      backends.set(Number(entry), cpuMs(Number(entry)) ?? 0);
    } catch {
      /* gone meanwhile */
    }
  }
  return backends;
}

/** The backends' CPU ms between two postgresBackendCpuMs samples (those alive at the second; new ones from 0). */
export function backendCpuDelta(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, ms] of after) total += ms - (before.get(pid) ?? 0);
  return total;
}

/** The true median (the mean of the middle two for an even count). */
export function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
