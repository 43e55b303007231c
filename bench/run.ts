/**
 * `npm run bench`: read-by-id throughput and latency of the data plane against a bare node:http + pg
 * handler on the same database, side by side in one run, alternating rounds; prints medians and
 * the ratio. Not a test: the machine is noisy, so read the ratio, not the absolute numbers.
 *
 * BENCH_SECONDS (10), BENCH_ROUNDS (3), BENCH_CONNECTIONS (32), BENCH_LOG_LEVEL (info).
 */
import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort, startEmbeddedPostgres } from '../dataplane/src/db/embedded.js';
import { call } from '../dataplane/test-support/http.js';

const ROOT = resolve(import.meta.dirname, '..');
const TSX = resolve(ROOT, 'node_modules/.bin/tsx');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const RECORDS = 1000;
const HEADERS = { host: 'iam.localhost', authorization: 'Proxy demo-admin' };

interface Target {
  name: string;
  url: string;
  child: ChildProcess;
}

async function waitFor(url: string, path: string, child: ChildProcess): Promise<void> {
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

function start(script: string, env: Record<string, string>): ChildProcess {
  return spawn(TSX, [script], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
}

async function measure(target: Target): Promise<{ rps: number; p50: number; p99: number; errors: number }> {
  let i = 0;
  const result = await autocannon({
    url: target.url,
    connections: CONNECTIONS,
    duration: SECONDS,
    headers: HEADERS,
    requests: [{ setupRequest: (req: any) => ({ ...req, path: `/demo/demo.Person/p${i++ % RECORDS}` }) }],
  });
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.errors + result.non2xx };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'das-bench-'));
  chmodSync(dir, 0o755);
  const db = await startEmbeddedPostgres({ dir });
  await db.createDatabase('bench');
  const databaseUrl = db.urlFor('bench');
  const targets: Target[] = [];
  try {
    const dpPort = await freePort();
    const dp = start('dataplane/src/main.ts', { DATABASE_URL: databaseUrl, PORT: String(dpPort), LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info' });
    targets.push({ name: 'data plane', url: `http://127.0.0.1:${dpPort}`, child: dp });
    await waitFor(targets[0].url, '/readyz', dp);
    const batch: Record<string, unknown> = {};
    for (let n = 0; n < RECORDS; n++) {
      batch[`p${n}`] = { create: { schema: 'demo.Person', id: `p${n}`, data: { name: `Person ${n}`, email: `p${n}@example.com`, age: 20 + (n % 50), address: { street: `${n} Main St`, postcode: 'N1' } } } };
    }
    const seeded = await call(targets[0].url, { path: '/demo', host: HEADERS.host, headers: { authorization: HEADERS.authorization }, body: { batch: { actions: batch } } });
    if (seeded.status !== 200) throw new Error(`seeding failed: ${seeded.status} ${seeded.text.slice(0, 300)}`);

    const barePort = await freePort();
    const bare = start('bench/bare-server.ts', { DATABASE_URL: databaseUrl, PORT: String(barePort) });
    targets.push({ name: 'bare node:http + pg', url: `http://127.0.0.1:${barePort}`, child: bare });
    await waitFor(targets[1].url, '/demo/demo.Person/p1', bare);

    // Warm up both (JIT, prepared statements, pool connections).
    for (const t of targets) await autocannon({ url: `${t.url}/demo/demo.Person/p1`, connections: CONNECTIONS, duration: 2, headers: HEADERS });

    const results = new Map<string, { rps: number[]; p50: number[]; p99: number[]; errors: number }>();
    for (const t of targets) results.set(t.name, { rps: [], p50: [], p99: [], errors: 0 });
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? targets : [...targets].reverse();
      for (const t of order) {
        const m = await measure(t);
        const r = results.get(t.name)!;
        r.rps.push(m.rps);
        r.p50.push(m.p50);
        r.p99.push(m.p99);
        r.errors += m.errors;
        console.log(`round ${round + 1} ${t.name.padEnd(22)} ${m.rps.toFixed(0).padStart(7)} req/s  p50 ${m.p50} ms  p99 ${m.p99} ms  errors ${m.errors}`);
      }
    }
    console.log(`\nread-by-id, ${CONNECTIONS} connections, ${SECONDS}s x ${ROUNDS} rounds (medians):`);
    for (const [name, r] of results) {
      console.log(`  ${name.padEnd(22)} ${median(r.rps).toFixed(0).padStart(7)} req/s  p50 ${median(r.p50)} ms  p99 ${median(r.p99)} ms  errors ${r.errors}`);
    }
    const dpRps = results.get('data plane')!.rps;
    const bareRps = results.get('bare node:http + pg')!.rps;
    const ratio = median(dpRps) / median(bareRps);
    // Each round measures both back to back, so its own ratio cancels the machine's slow drift.
    const perRound = dpRps.map((rps, i) => rps / bareRps[i]);
    console.log(`\nthroughput ratio data plane / bare handler: ${ratio.toFixed(2)} (expectation: >= 0.85)`);
    console.log(`per-round ratios: ${perRound.map((r) => r.toFixed(2)).join(' ')}  (median ${median(perRound).toFixed(2)})`);
  } finally {
    for (const t of targets) t.child.kill('SIGTERM');
    await Promise.all(targets.map((t) => new Promise((r) => (t.child.exitCode !== null ? r(null) : t.child.on('exit', r)))));
    await db.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
