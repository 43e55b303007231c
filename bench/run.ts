/**
 * `npm run bench`: read-by-id throughput and latency of the data plane against bare node:http + pg
 * handlers on the same database, side by side in one run, rotating rounds; prints medians and
 * ratios. Not a test: the machine is noisy, so read the ratios, not the absolute numbers.
 *
 * Two bare handlers (bench/bare-server.ts): the yardstick, which reads through pg's own Query, and
 * one that reads exactly as the PostgreSQL driver does (PreparedRead). The first ratio is what a
 * user gets from the data plane compared with hand-written code on pg; the second isolates the
 * cost of the data plane's own layers (gateway, auth, firewall, engine, access log).
 *
 * A third peer, Platformatic DB 2 (REST generated over the same tables; installed on demand
 * outside the repository, see bench/peers/platformatic.ts), shows where the data plane stands
 * against a product of its kind.
 *
 * Besides throughput it reports each server's CPU time per request (user + system, from
 * /proc/<pid>/stat over the round): load from other tenants of a noisy machine moves throughput
 * a lot and CPU per request much less, so the two ratios together say more than either.
 *
 * BENCH_SECONDS (10), BENCH_ROUNDS (3), BENCH_CONNECTIONS (32), BENCH_RECORDS (10000), BENCH_LOG_LEVEL (info);
 * BENCH_PROFILE_DIR=<dir> writes a CPU profile of each server there (one subfolder each);
 * BENCH_PLATFORMATIC=0 leaves Platformatic DB out; BENCH_RESULT_FILE=<file> also writes the
 * per-round ratios there as JSON (bench/check.ts reads them).
 */
import { writeFileSync } from 'node:fs';
import autocannon from 'autocannon';
import type { ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startEmbeddedPostgres } from '../dataplane/src/db/embedded.js';
import { call } from '../dataplane/test-support/http.js';
import { ensurePlatformatic } from './peers/platformatic.js';

import { cpuMs, HEADERS, median, ROOT, start, waitFor } from './support.js';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
// Many distinct ids, as traffic over many records would have: a memo keyed on the URL (the data
// plane had one for firewall verdicts, 2048 entries) cannot flatter the figure.
const RECORDS = Number(process.env.BENCH_RECORDS ?? 10_000);
const SEED_BATCH = 1000;
const DATA_PLANE = 'data plane';
const PG_QUERY_FLOOR = 'bare node:http + pg';
const SAME_READ_FLOOR = 'bare, same read as driver';
const PLATFORMATIC = 'Platformatic DB 2';

interface Target {
  name: string;
  url: string;
  child: ChildProcess;
  /** The read-by-id path of record `p<n>` on this server. */
  pathOf: (n: number) => string;
}

const recordPath = (n: number) => `/demo/demo.Person/p${n}`;





async function measure(target: Target): Promise<{ rps: number; p50: number; p99: number; errors: number; cpuUs?: number }> {
  let i = 0;
  const cpuBefore = cpuMs(target.child.pid);
  const result = await autocannon({
    url: target.url,
    connections: CONNECTIONS,
    duration: SECONDS,
    headers: HEADERS,
    requests: [{ setupRequest: (req: any) => ({ ...req, path: target.pathOf(i++ % RECORDS) }) }],
  });
  const cpuAfter = cpuMs(target.child.pid);
  const cpuUs = cpuBefore === undefined || cpuAfter === undefined ? undefined : ((cpuAfter - cpuBefore) * 1000) / result.requests.total;
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.errors + result.non2xx, cpuUs };
}


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
    targets.push({ name: DATA_PLANE, url: `http://127.0.0.1:${dpPort}`, child: dp, pathOf: recordPath });
    await waitFor(targets[0].url, '/readyz', dp);
    for (let first = 0; first < RECORDS; first += SEED_BATCH) {
      const batch: Record<string, unknown> = {};
      for (let n = first; n < Math.min(first + SEED_BATCH, RECORDS); n++) {
        batch[`p${n}`] = { create: { schema: 'demo.Person', id: `p${n}`, data: { name: `Person ${n}`, email: `p${n}@example.com`, age: 20 + (n % 50), address: { street: `${n} Main St`, postcode: 'N1' } } } };
      }
      const seeded = await call(targets[0].url, { path: '/demo', host: HEADERS.host, headers: { authorization: HEADERS.authorization }, body: { batch: { actions: batch } } });
      if (seeded.status !== 200) throw new Error(`seeding failed: ${seeded.status} ${seeded.text.slice(0, 300)}`);
    }

    // Two floors: the yardstick (pg's own Query) and the same read the driver does, which
    // leaves only the cost of everything the data plane does besides the database round trip.
    for (const [name, read] of [
      [PG_QUERY_FLOOR, 'pg'],
      [SAME_READ_FLOOR, 'prepared'],
    ] as const) {
      const port = await freePort();
      const child = start('bench/bare-server.ts', { DATABASE_URL: databaseUrl, PORT: String(port), BARE_READ: read });
      targets.push({ name, url: `http://127.0.0.1:${port}`, child, pathOf: recordPath });
      await waitFor(targets.at(-1)!.url, recordPath(1), child);
    }
    const platformatic = ensurePlatformatic((line) => console.log(line));
    if (platformatic) {
      const port = await freePort();
      const child = start('bench/platformatic-server.ts', { DATABASE_URL: databaseUrl, PORT: String(port), PLATFORMATIC_DIR: platformatic });
      targets.push({ name: PLATFORMATIC, url: `http://127.0.0.1:${port}`, child, pathOf: (n) => `/demoDemoPerson/p${n}` });
      await waitFor(targets.at(-1)!.url, '/demoDemoPerson/p1', child);
    }

    // Warm up every server (JIT, prepared statements, pool connections).
    for (const t of targets) await autocannon({ url: `${t.url}${t.pathOf(1)}`, connections: CONNECTIONS, duration: 2, headers: HEADERS });

    const results = new Map<string, { rps: number[]; p50: number[]; p99: number[]; cpuUs: number[]; errors: number }>();
    for (const t of targets) results.set(t.name, { rps: [], p50: [], p99: [], cpuUs: [], errors: 0 });
    for (let round = 0; round < ROUNDS; round++) {
      // Each round starts with another server, so none is always measured first or last.
      const order = targets.map((_, i) => targets[(i + round) % targets.length]);
      for (const t of order) {
        const m = await measure(t);
        const r = results.get(t.name)!;
        r.rps.push(m.rps);
        r.p50.push(m.p50);
        r.p99.push(m.p99);
        r.errors += m.errors;
        if (m.cpuUs !== undefined) r.cpuUs.push(m.cpuUs);
        const cpu = m.cpuUs === undefined ? '' : `  cpu ${m.cpuUs.toFixed(0)} µs/req`;
        console.log(`round ${round + 1} ${t.name.padEnd(24)} ${m.rps.toFixed(0).padStart(7)} req/s  p50 ${m.p50} ms  p99 ${m.p99} ms${cpu}  errors ${m.errors}`);
      }
    }
    console.log(`\nread-by-id, ${CONNECTIONS} connections, ${SECONDS}s x ${ROUNDS} rounds (medians):`);
    for (const [name, r] of results) {
      const cpu = r.cpuUs.length ? `  cpu ${median(r.cpuUs).toFixed(0)} µs/req` : '';
      console.log(`  ${name.padEnd(24)} ${median(r.rps).toFixed(0).padStart(7)} req/s  p50 ${median(r.p50)} ms  p99 ${median(r.p99)} ms${cpu}  errors ${r.errors}`);
    }
    const plane = results.get(DATA_PLANE)!;
    const ratios: Record<string, { throughput: number[]; cpu?: number[] }> = {};
    for (const floor of targets.slice(1).map((t) => t.name)) {
      const bare = results.get(floor)!;
      // Each round measures every server back to back, so its own ratio cancels the machine's slow drift.
      const perRound = plane.rps.map((rps, i) => rps / bare.rps[i]);
      ratios[floor] = { throughput: perRound };
      const expectation = floor === PG_QUERY_FLOOR ? ' (expectation: >= 0.85)' : '';
      console.log(`\ndata plane / ${floor}:`);
      console.log(`  throughput, ratio of medians ${(median(plane.rps) / median(bare.rps)).toFixed(2)}${expectation}`);
      console.log(`  throughput per round: ${perRound.map((r) => r.toFixed(2)).join(' ')}  (median ${median(perRound).toFixed(2)})`);
      if (plane.cpuUs.length === ROUNDS && bare.cpuUs.length === ROUNDS) {
        const cpuRatios = plane.cpuUs.map((us, i) => us / bare.cpuUs[i]);
        ratios[floor].cpu = cpuRatios;
        console.log(`  server CPU per request, per round: ${cpuRatios.map((r) => r.toFixed(2)).join(' ')}  (median ${median(cpuRatios).toFixed(2)})`);
      }
    }
    if (process.env.BENCH_RESULT_FILE) writeFileSync(process.env.BENCH_RESULT_FILE, JSON.stringify({ rounds: ROUNDS, seconds: SECONDS, errors: plane.errors, ratios }));
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
