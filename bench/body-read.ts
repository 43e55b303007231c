/**
 * The POST body path alone, before/after: two bare servers that only read each body with
 * `readRawBody` (bench/body-server.ts), one with this checkout's http/body.ts and one with
 * BENCH_BEFORE_ROOT's, measured in alternating rounds with the bench's POST read body (43 B).
 * Prints server CPU per request per round and the per-round ratio (now / before).
 *
 *   BENCH_BEFORE_ROOT=/work/base-fec0f10 npx tsx bench/body-read.ts
 *
 * BENCH_ROUNDS (6), BENCH_SECONDS (3), BENCH_CONNECTIONS (32). Run it under the shared bench lock.
 */
import autocannon from 'autocannon';
import type { ChildProcess } from 'node:child_process';
import { freePort } from '../dataplane/src/db/embedded.js';
import { cpuMs, median, start } from './support.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const BEFORE = process.env.BENCH_BEFORE_ROOT;
if (!BEFORE) throw new Error('BENCH_BEFORE_ROOT=<another checkout> is required');
const BODY = JSON.stringify({ read: { schema: 'demo.Person', id: 'p123' } });

async function server(root: string | undefined): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = start('bench/body-server.ts', { PORT: String(port), ...(root ? { BODY_ROOT: root } : {}) });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(url, { method: 'POST', body: BODY, headers: { 'content-type': 'application/json' } })).ok) break;
    } catch {
      if (i > 200) throw new Error(`${url} did not start`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return { url, child };
}

async function measure(target: { url: string; child: ChildProcess }): Promise<number> {
  const before = cpuMs(target.child.pid)!;
  const result = await autocannon({ url: target.url, connections: CONNECTIONS, duration: SECONDS, method: 'POST', body: BODY, headers: { 'content-type': 'application/json' } });
  if (result.errors + result.non2xx) throw new Error(`${result.errors + result.non2xx} errors`);
  return ((cpuMs(target.child.pid)! - before) * 1000) / result.requests.total;
}

const now = await server(undefined);
const before = await server(BEFORE);
try {
  await measure(now);
  await measure(before);
  const ratios: number[] = [];
  const cpu = { now: [] as number[], before: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate which goes first, so neither is always measured after the other.
    const order = round % 2 ? (['before', 'now'] as const) : (['now', 'before'] as const);
    const us: Record<string, number> = {};
    for (const which of order) us[which] = await measure(which === 'now' ? now : before);
    cpu.now.push(us.now);
    cpu.before.push(us.before);
    ratios.push(us.now / us.before);
    console.log(`round ${round + 1}: now ${us.now.toFixed(1)} µs/req, before ${us.before.toFixed(1)} µs/req, ratio ${(us.now / us.before).toFixed(2)}`);
  }
  console.log(`medians: now ${median(cpu.now).toFixed(1)} µs/req, before ${median(cpu.before).toFixed(1)} µs/req; per-round ratio ${median(ratios).toFixed(2)} (${ratios.map((r) => r.toFixed(2)).join(' ')})`);
} finally {
  for (const c of [now.child, before.child]) c.kill('SIGTERM');
}
