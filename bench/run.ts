/**
 * `npm run bench:dataplane`: the data plane against bare node:http + pg handlers on the same
 * database, side by side in one run, in rotating rounds; prints medians and per-round ratios. Not
 * a test: the machine is noisy, so read the ratios, not the absolute numbers.
 *
 * Scenarios (BENCH_SCENARIOS, comma-separated; all by default):
 * - `read`: GET /demo/demo.Person/{id} against two bare handlers (bench/bare-server.ts): the
 *   yardstick, which reads through pg's own Query, and one that reads exactly as the PostgreSQL
 *   driver does (PreparedRead). The first ratio is what a user gets from the data plane compared
 *   with hand-written code on pg; the second isolates the cost of the data plane's own layers
 *   (gateway, auth, firewall, engine, access log). Platformatic DB 2 (installed on demand outside
 *   the repository, see bench/peers/platformatic.ts) shows where the data plane stands against a
 *   product of its kind. BENCH_TRACED=1 adds `data plane, traced`: a second data plane of this
 *   checkout started as the first (same environment, same database) plus OpenTelemetry exporting
 *   every trace (OTEL_TRACES_SAMPLER=always_on, OTLP over http/protobuf) to a sink in this process
 *   (bench/otlp-sink.ts, which counts the exports and does not decode them); its ratio to the
 *   untraced data plane is what tracing costs per read at full load (issue 32). The run fails if
 *   the sink received no export.
 * - `graphql`: the same read as a GraphQL query by id over HTTP (POST /demo/graphql, the id as a
 *   variable), against the REST read of the same run; and against REST's `read` action sent as a
 *   POST body (`POST /demo`), which splits GraphQL's cost into the POST path's (body, its firewall
 *   rules) and GraphQL's own; with BENCH_BASELINE_DIR, against the baseline's GraphQL too.
 *   (With BENCH_BASELINE_DIR the baseline's process also serves the POST read, create and batch.)
 * - `create`, `batch`: an ATOMIC create of one record, and an ATOMIC batch of 10 creates, through
 *   POST /demo, against a bare handler doing the statements of an ATOMIC batch in one
 *   transaction (bench/bare-write-server.ts: BEGIN, the row with its history, the change log,
 *   COMMIT), for the create too, where the driver sends one statement (the change inline).
 *
 * The records are seeded by a data plane of its own, stopped before the measured servers start.
 * Each round measures the reading targets first and the writing ones after, each group in a
 * balanced order (`balancedOrder`: every target first once every n rounds and after each other one
 * equally often), then checkpoints and pauses (BENCH_SETTLE_MS, 1500): no read is measured right
 * after a write round while PostgreSQL still works off its writes.
 *
 * Besides throughput it reports each server's CPU time per request (user + system, from
 * /proc/<pid>/stat over the round): load from other tenants of a noisy machine moves throughput
 * a lot and CPU per request much less, so the two ratios together say more than either.
 *
 * BENCH_SECONDS (10), BENCH_ROUNDS (3), BENCH_WARMUP (2 s), BENCH_CONNECTIONS (32),
 * BENCH_RECORDS (10000), BENCH_LOG_LEVEL (info); BENCH_PROFILE_DIR=<dir> writes a CPU profile of
 * each server there (one subfolder each); BENCH_PLATFORMATIC=0 leaves Platformatic DB out;
 * BENCH_RESULT_FILE=<file> also writes the per-round ratios there as JSON (bench/check.ts reads them);
 * BENCH_BASELINE_DIR=<another checkout> runs that checkout's data plane beside this one in every
 * scenario given (before/after of a change, measured in the same rounds); BENCH_GC_DIR=<dir> traces each
 * server's garbage collections there and reports KiB allocated per request.
 */
import { writeFileSync } from 'node:fs';
import autocannon from 'autocannon';
import pg from 'pg';
import type { ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startEmbeddedPostgres } from '../dataplane/src/db/embedded.js';
import { call } from '../dataplane/test-support/http.js';
import { startOtlpSink } from './otlp-sink.js';
import { ensurePlatformatic } from './peers/platformatic.js';
import { allocatedBetween, cpuMs, HEADERS, kernelCounters, median, start, waitFor } from './support.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
// Many distinct ids, as traffic over many records would have: a memo keyed on the URL (the data
// plane had one for firewall verdicts, 2048 entries) cannot flatter the figure.
const RECORDS = Number(process.env.BENCH_RECORDS ?? 10_000);
const SCENARIOS = new Set((process.env.BENCH_SCENARIOS ?? 'read,graphql,create,batch').split(',').map((s) => s.trim()));
const SEED_BATCH = 1000;
/** BENCH_BASELINE_DIR=<checkout>: that checkout's data plane too, on the same database, side by side in every round (a before/after of a change). */
const BASELINE = process.env.BENCH_BASELINE_DIR;
/** BENCH_TRACED=1: a traced data plane beside the untraced one in scenario `read`. */
const TRACED = process.env.BENCH_TRACED === '1' && SCENARIOS.has('read');
const BATCH_SIZE = 10;
/** The pause after each round's writes (and the checkpoint), before the next round's reads. */
const SETTLE_MS = Number(process.env.BENCH_SETTLE_MS ?? 1500);

const NAMES = {
  read: 'data plane',
  baseline: 'data plane (baseline)',
  traced: 'data plane, traced',
  pgQuery: 'bare node:http + pg',
  sameRead: 'bare, same read as driver',
  platformatic: 'Platformatic DB 2',
  graphql: 'data plane GraphQL',
  baselineGraphql: 'data plane GraphQL (baseline)',
  postRead: 'data plane POST read',
  create: 'data plane create',
  bareCreate: 'bare create',
  batch: 'data plane batch of 10',
  bareBatch: 'bare batch of 10',
  baselinePostRead: 'data plane POST read (baseline)',
  baselineCreate: 'data plane create (baseline)',
  baselineBatch: 'data plane batch of 10 (baseline)',
} as const;

/** What a round compares: subject / floor, throughput and CPU per request. */
const COMPARISONS: { subject: string; floor: string; scenario: string }[] = [
  { subject: NAMES.read, floor: NAMES.pgQuery, scenario: 'read' },
  { subject: NAMES.read, floor: NAMES.sameRead, scenario: 'read' },
  { subject: NAMES.read, floor: NAMES.platformatic, scenario: 'read' },
  { subject: NAMES.read, floor: NAMES.baseline, scenario: 'read' },
  { subject: NAMES.traced, floor: NAMES.read, scenario: 'read' },
  { subject: NAMES.baseline, floor: NAMES.pgQuery, scenario: 'read' },
  { subject: NAMES.baseline, floor: NAMES.sameRead, scenario: 'read' },
  { subject: NAMES.graphql, floor: NAMES.read, scenario: 'graphql' },
  { subject: NAMES.graphql, floor: NAMES.postRead, scenario: 'graphql' },
  { subject: NAMES.postRead, floor: NAMES.read, scenario: 'graphql' },
  { subject: NAMES.graphql, floor: NAMES.baselineGraphql, scenario: 'graphql' },
  { subject: NAMES.baselineGraphql, floor: NAMES.baseline, scenario: 'graphql' },
  { subject: NAMES.create, floor: NAMES.bareCreate, scenario: 'create' },
  { subject: NAMES.batch, floor: NAMES.bareBatch, scenario: 'batch' },
  { subject: NAMES.postRead, floor: NAMES.baselinePostRead, scenario: 'graphql' },
  { subject: NAMES.baselineCreate, floor: NAMES.bareCreate, scenario: 'create' },
  { subject: NAMES.create, floor: NAMES.baselineCreate, scenario: 'create' },
  { subject: NAMES.baselineBatch, floor: NAMES.bareBatch, scenario: 'batch' },
  { subject: NAMES.batch, floor: NAMES.baselineBatch, scenario: 'batch' },
];

interface Request {
  method?: string;
  path: string;
  body?: string;
}

interface Target {
  name: string;
  url: string;
  child: ChildProcess;
  /** The n-th request of a measurement on this server. */
  request: (n: number) => Request;
}

const recordPath = (n: number) => `/demo/demo.Person/p${n % RECORDS}`;
const read = (n: number): Request => ({ path: recordPath(n) });
const GRAPHQL_READ = 'query Person($id: ID!) { demo_Person(id: $id) { id version name email age address { street postcode } } }';
const graphqlRead = (n: number): Request => ({ method: 'POST', path: '/demo/graphql', body: JSON.stringify({ query: GRAPHQL_READ, variables: { id: `p${n % RECORDS}` } }) });
/** The same read as REST's `read` action in a POST body: what GraphQL pays for the POST path alone (body, its firewall rules), without GraphQL. */
const postRead = (n: number): Request => ({ method: 'POST', path: '/demo', body: JSON.stringify({ read: { schema: 'demo.Person', id: `p${n % RECORDS}` } }) });

const person = (id: string, n: number) => ({ name: `Person ${id}`, email: `${id}@example.com`, age: 20 + (n % 50), address: { street: `${n} Main St`, postcode: 'N1' } });
/** Writes with ids no other server or round uses: `<prefix>-<round-unique counter>`. */
let written = 0;
const createOne = (prefix: string) => (): Request => {
  const id = `${prefix}-${written++}`;
  return { method: 'POST', path: '/demo', body: JSON.stringify({ create: { schema: 'demo.Person', id, data: person(id, written), consistency: 'ATOMIC' } }) };
};
const createBatch = (prefix: string) => (): Request => {
  const actions: Record<string, unknown> = {};
  for (let i = 0; i < BATCH_SIZE; i++) {
    const id = `${prefix}-${written++}`;
    actions[`a${i}`] = { create: { schema: 'demo.Person', id, data: person(id, written), consistency: 'ATOMIC' } };
  }
  return { method: 'POST', path: '/demo', body: JSON.stringify({ batch: { actions } }) };
};

interface Measurement {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  cpuUs?: number;
  /** Of cpuUs: the kernel's part, and the main thread's (the rest is libuv's pool, V8's helper threads, the kernel). */
  systemUs?: number;
  mainThreadUs?: number;
  /** KiB allocated on the JavaScript heap per request (BENCH_GC_DIR). */
  allocKiB?: number;
}

async function measure(target: Target, seconds: number): Promise<Measurement> {
  let i = 0;
  const from = performance.now();
  const cpuBefore = cpuMs(target.child.pid);
  const kernelBefore = kernelCounters(target.child.pid);
  const mainBefore = cpuMs(target.child.pid, true);
  const result = await autocannon({
    url: target.url,
    connections: CONNECTIONS,
    duration: seconds,
    headers: { ...HEADERS, 'content-type': 'application/json' },
    requests: [{ setupRequest: (req: any) => ({ ...req, ...target.request(i++) }) }],
  });
  const cpuAfter = cpuMs(target.child.pid);
  const kernelAfter = kernelCounters(target.child.pid);
  const mainAfter = cpuMs(target.child.pid, true);
  const perRequest = (before: number | undefined, after: number | undefined) => (before === undefined || after === undefined ? undefined : ((after - before) * 1000) / result.requests.total);
  const systemUs = perRequest(kernelBefore?.systemMs, kernelAfter?.systemMs);
  const mainThreadUs = perRequest(mainBefore, mainAfter);
  const cpuUs = cpuBefore === undefined || cpuAfter === undefined ? undefined : ((cpuAfter - cpuBefore) * 1000) / result.requests.total;
  // The GC trace reaches its file a moment after the collection: read it once the next one is due.
  const to = performance.now();
  const allocated = allocatedBetween(target.child, from, to) !== undefined ? (await new Promise((r) => setTimeout(r, 500)), allocatedBetween(target.child, from, to)) : undefined;
  const allocKiB = allocated === undefined ? undefined : allocated / 1024 / result.requests.total;
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.errors + result.non2xx, cpuUs, systemUs, mainThreadUs, allocKiB };
}

/** The targets that write: measured after the reads of each round. */
const WRITES = new Set<string>([NAMES.create, NAMES.bareCreate, NAMES.batch, NAMES.bareBatch, NAMES.baselineCreate, NAMES.baselineBatch]);

/** PostgreSQL's work after a round of writes done before anything else is measured: dirty buffers written out, then a pause. */
async function settle(client: pg.Client): Promise<void> {
  await client.query('CHECKPOINT');
  await new Promise((r) => setTimeout(r, SETTLE_MS));
}

/** BENCH_RECORDS Person records, written in batches through a data plane of their own that is stopped afterwards. */
async function seed(databaseUrl: string): Promise<void> {
  const port = await freePort();
  const seeder = start('dataplane/src/main.ts', { DATABASE_URL: databaseUrl, PORT: String(port), LOG_LEVEL: 'warn' }, { label: 'seeder-main.ts' });
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitFor(url, '/readyz', seeder);
    for (let first = 0; first < RECORDS; first += SEED_BATCH) {
      const batch: Record<string, unknown> = {};
      for (let n = first; n < Math.min(first + SEED_BATCH, RECORDS); n++) batch[`p${n}`] = { create: { schema: 'demo.Person', id: `p${n}`, data: person(`p${n}`, n) } };
      const seeded = await call(url, { path: '/demo', host: HEADERS.host, headers: { authorization: HEADERS.authorization }, body: { batch: { actions: batch } } });
      if (seeded.status !== 200) throw new Error(`seeding failed: ${seeded.status} ${seeded.text.slice(0, 300)}`);
    }
  } finally {
    const exited = new Promise((r) => (seeder.exitCode !== null ? r(null) : seeder.on('exit', r)));
    seeder.kill('SIGTERM');
    await exited;
  }
}

async function main() {
  const sink = TRACED ? await startOtlpSink() : undefined;
  const dir = mkdtempSync(join(tmpdir(), 'das-bench-'));
  chmodSync(dir, 0o755);
  const db = await startEmbeddedPostgres({ dir });
  await db.createDatabase('bench');
  const databaseUrl = db.urlFor('bench');
  const targets: Target[] = [];
  const children: ChildProcess[] = [];
  try {
    // The records are written by a data plane of their own, stopped before the measured ones start:
    // every data plane measured then starts as alike as the bare handlers (none has served ten
    // batches of a thousand creates the others have not).
    await seed(databaseUrl);
    const dpPort = await freePort();
    const dpEnv = { LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info' };
    const dp = start('dataplane/src/main.ts', { DATABASE_URL: databaseUrl, PORT: String(dpPort), ...dpEnv });
    children.push(dp);
    const dpUrl = `http://127.0.0.1:${dpPort}`;
    await waitFor(dpUrl, '/readyz', dp);
    // Servers start side by side (their start-up dominated bench:check's time); each target keeps
    // its place in the rotation, and all are ready before the warm-up.
    const starting: Promise<void>[] = [];
    const add = (name: string, script: string, env: Record<string, string>, request: Target['request'], ready: string, options?: Parameters<typeof start>[2]) => {
      const target = { name, url: '', child: undefined as unknown as ChildProcess, request };
      targets.push(target);
      starting.push(
        (async () => {
          const port = await freePort();
          target.child = start(script, { DATABASE_URL: databaseUrl, PORT: String(port), ...env }, options);
          children.push(target.child);
          target.url = `http://127.0.0.1:${port}`;
          await waitFor(target.url, ready, target.child);
        })(),
      );
    };
    const same = (name: string, request: Target['request']) => targets.push({ name, url: dpUrl, child: dp, request });

    const readScenario = SCENARIOS.has('read') || SCENARIOS.has('graphql');
    if (readScenario) same(NAMES.read, read);
    // The baseline's process starts whenever BENCH_BASELINE_DIR is given (its writes are measured
    // with `create`/`batch` alone too); its GET is measured only in the read scenarios (below).
    if (BASELINE) {
      add(NAMES.baseline, 'dataplane/src/main.ts', { LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info' }, read, '/readyz', { cwd: BASELINE, label: 'baseline-main.ts' });
    }
    if (SCENARIOS.has('read')) {
      // Two floors: the yardstick (pg's own Query) and the same read the driver does, which
      // leaves only the cost of everything the data plane does besides the database round trip.
      add(NAMES.pgQuery, 'bench/bare-server.ts', { BARE_READ: 'pg' }, read, recordPath(1));
      add(NAMES.sameRead, 'bench/bare-server.ts', { BARE_READ: 'prepared' }, read, recordPath(1));
      if (sink) {
        const tracing = { OTEL_EXPORTER_OTLP_ENDPOINT: sink.endpoint, OTEL_TRACES_SAMPLER: 'always_on' };
        add(NAMES.traced, 'dataplane/src/main.ts', { ...dpEnv, ...tracing }, read, '/readyz', { label: 'traced-main.ts' });
      }
      const platformatic = ensurePlatformatic((line) => console.log(line));
      if (platformatic) {
        add(NAMES.platformatic, 'bench/platformatic-server.ts', { PLATFORMATIC_DIR: platformatic }, (n) => ({ path: `/demoDemoPerson/p${n % RECORDS}` }), '/demoDemoPerson/p1');
      }
    }
    if (SCENARIOS.has('graphql')) {
      same(NAMES.graphql, graphqlRead);
      same(NAMES.postRead, postRead);
    }
    if (SCENARIOS.has('create') || SCENARIOS.has('batch')) {
      const port = await freePort();
      const bare = start('bench/bare-write-server.ts', { DATABASE_URL: databaseUrl, PORT: String(port) });
      children.push(bare);
      const bareUrl = `http://127.0.0.1:${port}`;
      await waitFor(bareUrl, '/', bare);
      if (SCENARIOS.has('create')) {
        same(NAMES.create, createOne('dc'));
        targets.push({ name: NAMES.bareCreate, url: bareUrl, child: bare, request: createOne('bc') });
      }
      if (SCENARIOS.has('batch')) {
        same(NAMES.batch, createBatch('db'));
        targets.push({ name: NAMES.bareBatch, url: bareUrl, child: bare, request: createBatch('bb') });
      }
    }

    await Promise.all(starting);
    // The baseline's GraphQL on the baseline's process, beside its REST read, as this checkout's: both ratios come from alike processes.
    const baselineRead = targets.find((t) => t.name === NAMES.baseline);
    if (baselineRead && !readScenario) targets.splice(targets.indexOf(baselineRead), 1);
    if (SCENARIOS.has('graphql') && baselineRead) targets.push({ name: NAMES.baselineGraphql, url: baselineRead.url, child: baselineRead.child, request: graphqlRead });
    // The baseline's POST read and writes on the baseline's process too: before/after of the body and write paths in the same rounds.
    if (baselineRead) {
      const onBaseline = (name: string, request: (n: number) => Request) => targets.push({ name, url: baselineRead.url, child: baselineRead.child, request });
      if (SCENARIOS.has('graphql')) onBaseline(NAMES.baselinePostRead, postRead);
      if (SCENARIOS.has('create')) onBaseline(NAMES.baselineCreate, createOne('dcb'));
      if (SCENARIOS.has('batch')) onBaseline(NAMES.baselineBatch, createBatch('dbb'));
    }
    if (SCENARIOS.has('graphql')) {
      // GraphQL answers errors with 200 too: check once that the query reads the record.
      const answer = await call(dpUrl, { path: '/demo/graphql', host: HEADERS.host, headers: { authorization: HEADERS.authorization }, body: JSON.parse(graphqlRead(1).body!) });
      if ((answer.json as { data?: { demo_Person?: { id?: string } } })?.data?.demo_Person?.id !== 'p1') throw new Error(`the GraphQL read failed: ${answer.text.slice(0, 300)}`);
    }
    // Warm up every server and path (JIT, prepared statements, pool connections).
    for (const t of targets) {
      const m = await measure(t, WARMUP);
      if (m.errors) throw new Error(`${t.name}: ${m.errors} errors while warming up`);
    }

    const results = new Map<string, { rps: number[]; p50: number[]; p99: number[]; cpuUs: number[]; allocKiB: number[]; errors: number }>();
    for (const t of targets) results.set(t.name, { rps: [], p50: [], p99: [], cpuUs: [], allocKiB: [], errors: 0 });
    // Reads first, then writes, each group in its own balanced order, then a checkpoint and a pause: a
    // read measured right after a write round paid for PostgreSQL's work after the writes (WAL,
    // dirty buffers, autovacuum on the same two cores). In one fixed rotation of all targets the
    // data plane's GET always followed the baseline's batches and the baseline's GraphQL the bare
    // batches, and each came out ~1.4× dearer than its twin (docs/performance.md, "A bias of place").
    const reads = targets.filter((t) => !WRITES.has(t.name));
    const writes = targets.filter((t) => WRITES.has(t.name));
    const rotated = (group: Target[], round: number) => balancedOrder(group.length, round).map((i) => group[i]);
    const settler = new pg.Client({ connectionString: databaseUrl });
    await settler.connect();
    for (let round = 0; round < ROUNDS; round++) {
      // Each round starts with another server of each group, so none is always measured first or
      // last, nor always right after the same other one (balancedOrder).
      const order = [...rotated(reads, round), ...rotated(writes, round)];
      for (const [at, t] of order.entries()) {
        if (at === reads.length && writes.length) await settle(settler);
        const m = await measure(t, SECONDS);
        const r = results.get(t.name)!;
        r.rps.push(m.rps);
        r.p50.push(m.p50);
        r.p99.push(m.p99);
        r.errors += m.errors;
        if (m.cpuUs !== undefined) r.cpuUs.push(m.cpuUs);
        if (m.allocKiB !== undefined) r.allocKiB.push(m.allocKiB);
        const cpu = m.cpuUs === undefined ? '' : `  cpu ${m.cpuUs.toFixed(0)} µs/req (system ${m.systemUs?.toFixed(0)}, main thread ${m.mainThreadUs?.toFixed(0)})`;
        const alloc = m.allocKiB === undefined ? '' : `  alloc ${m.allocKiB.toFixed(1)} KiB/req`;
        console.log(`round ${round + 1} ${t.name.padEnd(26)} ${m.rps.toFixed(0).padStart(7)} req/s  p50 ${m.p50} ms  p99 ${m.p99} ms${cpu}${alloc}  errors ${m.errors}`);
      }
      if (writes.length) await settle(settler);
    }
    await settler.end();
    console.log(`\n${CONNECTIONS} connections, ${SECONDS}s x ${ROUNDS} rounds (medians):`);
    for (const [name, r] of results) {
      const cpu = r.cpuUs.length ? `  cpu ${median(r.cpuUs).toFixed(0)} µs/req` : '';
      const alloc = r.allocKiB.length ? `  alloc ${median(r.allocKiB).toFixed(1)} KiB/req` : '';
      console.log(`  ${name.padEnd(26)} ${median(r.rps).toFixed(0).padStart(7)} req/s  p50 ${median(r.p50)} ms  p99 ${median(r.p99)} ms${cpu}${alloc}  errors ${r.errors}`);
    }
    const ratios: Record<string, { throughput: number[]; cpu?: number[] }> = {};
    let errors = 0;
    for (const { subject, floor } of COMPARISONS) {
      const s = results.get(subject);
      const f = results.get(floor);
      if (!s || !f) continue;
      errors += s.errors;
      // Each round measures every server back to back, so its own ratio cancels the machine's slow drift.
      const perRound = s.rps.map((rps, i) => rps / f.rps[i]);
      const key = `${subject} / ${floor}`;
      ratios[key] = { throughput: perRound };
      console.log(`\n${key}:`);
      console.log(`  throughput, ratio of medians ${(median(s.rps) / median(f.rps)).toFixed(2)}`);
      console.log(`  throughput per round: ${perRound.map((r) => r.toFixed(2)).join(' ')}  (median ${median(perRound).toFixed(2)})`);
      if (s.cpuUs.length === ROUNDS && f.cpuUs.length === ROUNDS) {
        const cpuRatios = s.cpuUs.map((us, i) => us / f.cpuUs[i]);
        ratios[key].cpu = cpuRatios;
        console.log(`  server CPU per request, per round: ${cpuRatios.map((r) => r.toFixed(2)).join(' ')}  (median ${median(cpuRatios).toFixed(2)}, range ${Math.min(...cpuRatios).toFixed(2)}–${Math.max(...cpuRatios).toFixed(2)})`);
      }
    }
    if (sink) {
      // A traced plane that exported nothing measured tracing off: its ratio would say tracing is free.
      const received = await sink.counts();
      console.log(`\nOTLP sink: ${received.exports} exports received (${(received.bytes / 1e6).toFixed(1)} MB)`);
      if (received.exports === 0) throw new Error(`${NAMES.traced}: the OTLP sink received no export; its figures are not tracing's`);
    }
    if (process.env.BENCH_RESULT_FILE) writeFileSync(process.env.BENCH_RESULT_FILE, JSON.stringify({ rounds: ROUNDS, seconds: SECONDS, errors, ratios }));
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.on('exit', r)))));
    await db.stop();
    await sink?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The order of `n` targets in round `round`: a Williams design. Each target comes first once every
 * n rounds and, for an even n, right after each other target once every n rounds (an odd n: over
 * 2n rounds, every other block of n reversed). A plain rotation kept every target right after the
 * same one in every round, and what that one left behind (a process's GC, PostgreSQL's work) was
 * always charged to the same target.
 */
function balancedOrder(n: number, round: number): number[] {
  const first = Array.from({ length: n }, (_, i) => (i === 0 ? 0 : i % 2 === 1 ? (i + 1) / 2 : n - i / 2));
  const row = first.map((v) => (v + round) % n);
  return n % 2 === 1 && Math.floor(round / n) % 2 === 1 ? row.reverse() : row;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
