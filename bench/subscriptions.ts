/**
 * `npm run bench:subscriptions`: two data-plane processes (replicas) on one PostgreSQL; a fixed
 * write load through both (BENCH_WRITES_PER_SECOND, 200, alternating replicas) for BENCH_SECONDS
 * (30), first with no subscriber, then with BENCH_SUBSCRIBERS (1,000) spread over both replicas.
 *
 * Subscribers: BENCH_FULL (10) take every change (`demo_Person` without a filter); the others
 * filter on `age == k` (k = 0..99, a write's age is random), so each write fans out to about
 * 1/100 of them — 1,000 subscribers each receiving all 200 writes/s would be 200,000 messages/s
 * into the benchmark's clients on a 2-core machine, which would measure the clients, not the data
 * plane.
 *
 * The subscribers live in BENCH_CLIENT_PROCESSES (2) client processes, not in this one: a thousand
 * sockets in one process on a busy 2-core machine had event-loop delays (p99 60–110 ms, peaks of
 * seconds) that became part of the measured delivery. Each client process reports its own
 * event-loop delay, so the figures show whether the clients kept up. Subscribers are bare `ws`
 * clients speaking graphql-transport-ws (BENCH_CLIENT=graphql-ws: the graphql-ws client instead,
 * which costs the clients far more).
 *
 * BENCH_LOCATION (postgres): where the demo dataset lives — `dynamodb` (DynamoDB Local, its Streams),
 * `snowflake` or `iceberg` (the Snowflake test peer; the polling queries per minute with and without
 * subscribers are read from its query log). The issue's run per location: BENCH_SUBSCRIBERS=200
 * BENCH_WRITES_PER_SECOND=100. The peer runs in this process, on the benchmark's PostgreSQL (so
 * the PostgreSQL CPU figure holds the warehouse's SQL): this process's CPU is reported as well.
 *
 * Reports: delivery latency p50/p99 from the write's request to the client (an upper bound of
 * commit-to-client: the commit happens inside that request), changes lost (every subscriber must
 * get exactly the successful writes it matches: must be 0), duplicates, write latency p50/p99 and
 * the writes per second achieved in both runs (their ratio is the feed's cost on writes), the failed
 * writes by their answer (a write the data plane could not start within its store's wait, e.g. a
 * warehouse session pool's 10 s, answers 503), CPU and the data planes' RSS, and the load average
 * before and after.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { freePort, startEmbeddedPostgres } from '../dataplane/src/db/embedded.js';
import { call } from '../dataplane/test-support/http.js';
import { dynamoDbSecrets, dynamoDbTransactionManifests } from '../dataplane/test-support/dynamodb.js';
import { sharedSnowflakePeer, warehouseDemoManifests } from '../dataplane/test-support/snowflake-peer.js';
import { cpuMs, HEADERS, postgresCpuMs, start, waitFor } from './support.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 30);
const RATE = Number(process.env.BENCH_WRITES_PER_SECOND ?? 200);
const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 1000);
const FULL = Number(process.env.BENCH_FULL ?? 10);
const CLIENT_PROCESSES = Math.max(1, Number(process.env.BENCH_CLIENT_PROCESSES ?? 2));
const AGES = 100;
const LOCATION = process.env.BENCH_LOCATION ?? 'postgres';

/** The data planes' settings for the demo dataset on BENCH_LOCATION, and how to count the warehouse's change-log reads. */
async function locationSetup(postgresUrl: string): Promise<{ env: Record<string, string>; feedQueries?: () => number; stop?: () => Promise<void> }> {
  if (LOCATION === 'postgres') return { env: {} };
  if (LOCATION === 'dynamodb') {
    const secrets = await dynamoDbSecrets();
    return { env: { DAS_MANIFESTS: await dynamoDbTransactionManifests(secrets.name), DAS_SECRETS_DIR: secrets.dir } };
  }
  if (LOCATION !== 'snowflake' && LOCATION !== 'iceberg') throw new Error(`BENCH_LOCATION: postgres, dynamodb, snowflake or iceberg, not ${LOCATION}`);
  // The peer's databases on the benchmark's PostgreSQL (the test support's admin URL is DATABASE_URL
  // when set): one server on the machine, and its CPU figure counts the warehouse's SQL too.
  process.env.DATABASE_URL = postgresUrl;
  const peer = await sharedSnowflakePeer();
  const { manifests, secretsDir, database } = await warehouseDemoManifests(LOCATION);
  // The change log's reads (polls, numbering, pages), not the writers' appends to it (an insert-only MERGE or an INSERT).
  const feedQueries = () => peer.queries().filter((q) => q.database === database && q.sqlText.includes('"DAS_CHANGES"') && !/^(MERGE|INSERT)\b/.test(q.sqlText)).length;
  // Stopped before the PostgreSQL it is on.
  return { env: { DAS_MANIFESTS: manifests, DAS_SECRETS_DIR: secretsDir }, feedQueries, stop: () => peer.stop() };
}

const percentile = (xs: number[], p: number) => {
  if (!xs.length) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};
const rssMb = (pid: number | undefined) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : NaN;
};
const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');

/** One subscriber, as the main process hands it to a client process. */
interface SubSpec {
  index: number;
  url: string;
  age?: number;
}
/** What a client process saw of one subscriber: [id, received at, cursor] per event. */
interface SubReport {
  index: number;
  seen: Array<[string, number, string]>;
  duplicates: number;
}
type ToClients = { kind: 'open'; specs: SubSpec[] } | { kind: 'measure' } | { kind: 'report' };
type FromClients = { kind: 'ready'; n: number } | { kind: 'count'; n: number } | { kind: 'report'; subs: SubReport[]; loop: { p50: number; p99: number; max: number } };

/** A client process: opens the subscribers it is given, counts what arrives, reports at the end. */
function clientProcess(): void {
  const subs = new Map<number, { seen: Map<string, [number, string]>; duplicates: number }>();
  const sockets: WebSocket[] = [];
  const clients: Client[] = [];
  const loop = monitorEventLoopDelay({ resolution: 5 });
  let ready = 0;
  let counter: NodeJS.Timeout | undefined;
  const send = (m: FromClients) => process.send!(m);
  const open = (spec: SubSpec) => {
    const sub = { seen: new Map<string, [number, string]>(), duplicates: 0 };
    subs.set(spec.index, sub);
    // BENCH_NO_MATCH=1: filters no write matches (what subscriptions cost when nothing is delivered).
    const filter = spec.age === undefined ? undefined : `age == ${process.env.BENCH_NO_MATCH ? -1 : spec.age}`;
    const payload = { query: 'subscription($f: String) { demo_Person(filter: $f) { op cursor record { id } } }', variables: { f: filter } };
    const onNext = (result: { data?: unknown }) => {
      const event = (result.data as { demo_Person: { cursor: string; record: { id: string } } }).demo_Person;
      if (sub.seen.has(event.record.id)) sub.duplicates++;
      else sub.seen.set(event.record.id, [Date.now(), event.cursor]);
    };
    const url = spec.url.replace('http', 'ws') + '/demo/graphql';
    const acked = () => send({ kind: 'ready', n: ++ready });
    if (process.env.BENCH_CLIENT !== 'graphql-ws') {
      const ws = new WebSocket(url, 'graphql-transport-ws');
      sockets.push(ws);
      ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: HEADERS.authorization } })));
      ws.on('message', (data) => {
        const m = JSON.parse(String(data)) as { type: string; payload: { data?: unknown } };
        if (m.type === 'connection_ack') {
          acked();
          ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload }));
        } else if (m.type === 'next') onNext(m.payload);
        else if (m.type === 'error') console.error('subscription error', m.payload);
      });
      return;
    }
    const client = createClient({ url, webSocketImpl: WebSocket, connectionParams: { Authorization: HEADERS.authorization }, retryAttempts: 0, lazy: false, onNonLazyError: () => undefined });
    clients.push(client);
    client.subscribe(payload, { next: onNext, error: (err) => console.error('subscription error', err), complete: () => undefined });
    client.on('connected', acked);
  };
  process.on('message', (m: ToClients) => {
    if (m.kind === 'open') m.specs.forEach(open);
    else if (m.kind === 'measure') {
      loop.reset();
      loop.enable();
      counter = setInterval(() => send({ kind: 'count', n: [...subs.values()].reduce((n, s) => n + s.seen.size, 0) }), 250);
    } else if (m.kind === 'report') {
      loop.disable();
      clearInterval(counter);
      const subsOut = [...subs].map(([index, s]) => ({ index, seen: [...s.seen].map(([id, [t, c]]) => [id, t, c] as [string, number, string]), duplicates: s.duplicates }));
      send({ kind: 'report', subs: subsOut, loop: { p50: loop.percentile(50) / 1e6, p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 } });
    }
  });
  process.on('disconnect', () => {
    void Promise.all(clients.map((c) => c.dispose())).finally(() => {
      for (const ws of sockets) ws.terminate();
      process.exit(0);
    });
  });
}

async function main(): Promise<void> {
  const loadAtStart = load();
  const dir = mkdtempSync(join(tmpdir(), 'das-bench-subs-'));
  chmodSync(dir, 0o755); // the embedded server runs as "postgres" when we are root
  const db = await startEmbeddedPostgres({ dir: join(dir, 'pg') });
  const replicas: { url: string; child: ChildProcess }[] = [];
  const clientProcs: ChildProcess[] = [];
  const location = await locationSetup(db.url);
  try {
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      const child = start('dataplane/src/main.ts', { ...location.env, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: db.url, DATA_DIR: join(dir, 'data'), LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn' });
      const url = `http://127.0.0.1:${port}`;
      await waitFor(url, '/readyz', child);
      replicas.push({ url, child });
    }

    /** Issues RATE writes a second for SECONDS, alternating replicas; `sentAt` per id, `ok` the ids written. */
    const writeLoad = async (prefix: string, sentAt = new Map<string, number>()) => {
      const ages = new Map<string, number>();
      const ok = new Set<string>();
      const answeredAt = new Map<string, number>();
      const latencies: number[] = [];
      let failed = 0;
      /** Failed writes per answer: status and error code, or the client's error. */
      const failures = new Map<string, number>();
      const fail = (why: string) => {
        failed++;
        failures.set(why, (failures.get(why) ?? 0) + 1);
      };
      const total = RATE * SECONDS;
      const begin = Date.now();
      const inflight: Promise<void>[] = [];
      for (let n = 0; n < total; n++) {
        const due = begin + (n * 1000) / RATE;
        const wait = due - Date.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        const id = `${prefix}-${n}`;
        const age = Math.floor(Math.random() * AGES);
        const t0 = Date.now();
        sentAt.set(id, t0);
        ages.set(id, age);
        inflight.push(
          call(replicas[n % 2].url, { path: '/demo', host: HEADERS.host, headers: { authorization: HEADERS.authorization }, body: { create: { schema: 'demo.Person', id, data: { name: id, age } } } }).then(
            (r) => {
              if (r.status === 201 || r.status === 200) {
                latencies.push(Date.now() - t0);
                answeredAt.set(id, Date.now());
                ok.add(id);
              } else fail(`${r.status} ${(r.json as { error?: { code?: string; message?: string } } | undefined)?.error?.message ?? r.text.slice(0, 80)}`);
            },
            (err: Error) => fail(err.message),
          ),
        );
      }
      await Promise.all(inflight);
      const seconds = (Date.now() - begin) / 1000;
      return { sentAt, answeredAt, ages, ok, latencies, failed, failures, perSecond: (total - failed) / seconds };
    };

    const postmaster = Number(readFileSync(join(dir, 'pg', 'pgdata', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const pgBefore = postgresCpuMs(postmaster);
    const selfBefore = cpuMs(process.pid) ?? 0;
    const feedBefore = location.feedQueries?.() ?? 0;
    const baseline = await writeLoad('base');
    const pgBaseline = (postgresCpuMs(postmaster) - pgBefore) / SECONDS;
    const selfBaseline = ((cpuMs(process.pid) ?? 0) - selfBefore) / SECONDS;
    const feedBaseline = ((location.feedQueries?.() ?? 0) - feedBefore) / (SECONDS / 60);
    const rssBefore = replicas.map((r) => rssMb(r.child.pid));

    // The client processes, each with its share of the subscribers.
    const ready = new Array<number>(CLIENT_PROCESSES).fill(0);
    const counts = new Array<number>(CLIENT_PROCESSES).fill(0);
    const reports: Array<Extract<FromClients, { kind: 'report' }> | undefined> = new Array(CLIENT_PROCESSES).fill(undefined);
    const specs: SubSpec[] = Array.from({ length: SUBSCRIBERS }, (_, i) => ({ index: i, url: replicas[i % 2].url, age: i < FULL ? undefined : i % AGES }));
    for (let p = 0; p < CLIENT_PROCESSES; p++) {
      const child = fork(fileURLToPath(import.meta.url), [], { execArgv: ['--import', 'tsx'], env: { ...process.env, BENCH_ROLE: 'clients' }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      clientProcs.push(child);
      child.on('message', (m: FromClients) => {
        if (m.kind === 'ready') ready[p] = m.n;
        else if (m.kind === 'count') counts[p] = m.n;
        else reports[p] = m;
      });
      child.send({ kind: 'open', specs: specs.filter((s) => s.index % CLIENT_PROCESSES === p) } satisfies ToClients);
    }
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    for (let waited = 0; sum(ready) < SUBSCRIBERS; waited += 100) {
      if (waited > 120_000) throw new Error(`only ${sum(ready)} of ${SUBSCRIBERS} subscribers connected`);
      await new Promise((r) => setTimeout(r, 100));
    }
    // Subscriptions are registered once their subscribe message is handled: wait until both replicas count them.
    for (;;) {
      const open = await Promise.all(replicas.map((r) => call(r.url, { path: '/metrics' }).then((m) => Number(/^das_subscriptions (\d+)/m.exec(m.text)?.[1] ?? 0))));
      if (open[0] + open[1] >= SUBSCRIBERS) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const rssIdle = replicas.map((r) => rssMb(r.child.pid));
    const loadBefore = load();
    const cpuStart = { planes: replicas.map((r) => cpuMs(r.child.pid) ?? 0), clients: clientProcs.map((c) => cpuMs(c.pid) ?? 0), postgres: postgresCpuMs(postmaster), self: cpuMs(process.pid) ?? 0 };
    for (const c of clientProcs) c.send({ kind: 'measure' } satisfies ToClients);
    const feedStart = location.feedQueries?.() ?? 0;
    const pending = writeLoad('load', new Map());
    const rssPeak = [0, 0];
    const sampler = setInterval(() => replicas.forEach((r, i) => (rssPeak[i] = Math.max(rssPeak[i], rssMb(r.child.pid)))), 500);
    const loaded = await pending;
    const loadEnd = Date.now();
    const cpu = {
      planes: replicas.map((r, i) => ((cpuMs(r.child.pid) ?? 0) - cpuStart.planes[i]) / SECONDS),
      clients: clientProcs.map((c, i) => ((cpuMs(c.pid) ?? 0) - cpuStart.clients[i]) / SECONDS),
      postgres: (postgresCpuMs(postmaster) - cpuStart.postgres) / SECONDS,
      self: ((cpuMs(process.pid) ?? 0) - cpuStart.self) / SECONDS,
    };
    const loadAfter = load();
    const feedLoaded = ((location.feedQueries?.() ?? 0) - feedStart) / (SECONDS / 60);
    // Let the last changes arrive: until nothing new came for 3 s (at most 2 minutes).
    for (let last = -1, since = Date.now(), end = Date.now() + 120_000; Date.now() < end && Date.now() - since < 3000; ) {
      await new Promise((r) => setTimeout(r, 250));
      const now = sum(counts);
      if (now !== last) [last, since] = [now, Date.now()];
    }
    const drainedAfterMs = Date.now() - loadEnd - 3000;
    clearInterval(sampler);
    for (const c of clientProcs) c.send({ kind: 'report' } satisfies ToClients);
    for (let waited = 0; reports.some((r) => !r); waited += 100) {
      if (waited > 60_000) throw new Error('a client process did not report');
      await new Promise((r) => setTimeout(r, 100));
    }

    // Every subscriber must have received each successful write it matches, once.
    const written = [...loaded.ok];
    const seenBy = new Map<number, SubReport>();
    for (const report of reports) for (const sub of report!.subs) seenBy.set(sub.index, sub);
    let lost = 0;
    let duplicates = 0;
    /** When the lost changes were written (ms after the load began) and by which replica (write n goes to replica n % 2). */
    const lostWrites = new Map<string, number>();
    const latencies: number[] = [];
    const afterAnswer: number[] = [];
    for (const spec of specs) {
      const sub = seenBy.get(spec.index);
      const seen = new Map((sub?.seen ?? []).map(([id, t]) => [id, t]));
      const expected = spec.age !== undefined && process.env.BENCH_NO_MATCH ? [] : written.filter((id) => spec.age === undefined || loaded.ages.get(id) === spec.age);
      const missing = expected.filter((id) => !seen.has(id));
      lost += missing.length;
      for (const id of missing) lostWrites.set(id, (lostWrites.get(id) ?? 0) + 1);
      duplicates += sub?.duplicates ?? 0;
      for (const [id, t] of seen) {
        const t0 = loaded.sentAt.get(id);
        if (t0 !== undefined) latencies.push(t - t0);
        const t1 = loaded.answeredAt.get(id);
        if (t1 !== undefined) afterAnswer.push(t - t1);
      }
    }
    const ms = (x: number) => `${x.toFixed(0)} ms`;
    if (location.feedQueries) console.log(`change-log reads (peer query log): ${feedBaseline.toFixed(1)}/min without subscribers, ${feedLoaded.toFixed(1)}/min with them`);
    console.log(`${LOCATION}: two replicas, ${RATE} writes/s for ${SECONDS} s, ${SUBSCRIBERS} subscribers (${FULL} unfiltered, the rest age == k) in ${CLIENT_PROCESSES} client processes`);
    console.log(`delivery (write request → client): p50 ${ms(percentile(latencies, 50))}, p99 ${ms(percentile(latencies, 99))}, ${latencies.length} events`);
    // The commit happens inside the write's request: commit → client lies between these two figures.
    console.log(`delivery (write answered → client, a lower bound): p50 ${ms(percentile(afterAnswer, 50))}, p99 ${ms(percentile(afterAnswer, 99))}`);
    if (lostWrites.size) {
      const first = Math.min(...loaded.sentAt.values());
      const detail = [...lostWrites].map(([id, n]) => `${id} (replica ${Number(id.split('-').pop()) % 2}, +${(loaded.sentAt.get(id)! - first) / 1000} s, ${n} subscribers)`);
      console.log(`lost writes: ${detail.slice(0, 20).join('; ')}${detail.length > 20 ? '; …' : ''}`);
    }
    console.log(`lost ${lost}, duplicates ${duplicates}; the last event arrived about ${Math.max(0, drainedAfterMs)} ms after the last write returned`);
    console.log(`writes without subscribers: ${baseline.perSecond.toFixed(1)}/s, p50 ${ms(percentile(baseline.latencies, 50))}, p99 ${ms(percentile(baseline.latencies, 99))}, failed ${baseline.failed}`);
    console.log(`writes with subscribers:    ${loaded.perSecond.toFixed(1)}/s, p50 ${ms(percentile(loaded.latencies, 50))}, p99 ${ms(percentile(loaded.latencies, 99))}, failed ${loaded.failed}`);
    const failures = (f: Map<string, number>) => [...f].sort((a, b) => b[1] - a[1]).map(([why, n]) => `${n} × ${why}`).join('; ');
    if (baseline.failed) console.log(`failed writes without subscribers: ${failures(baseline.failures)}`);
    if (loaded.failed) console.log(`failed writes with subscribers: ${failures(loaded.failures)}`);
    console.log(`write throughput ratio ${(loaded.perSecond / baseline.perSecond).toFixed(3)}, p99 write latency ratio ${(percentile(loaded.latencies, 99) / percentile(baseline.latencies, 99)).toFixed(2)}`);
    console.log(`CPU under load (ms per s): data planes ${cpu.planes.map((x) => x.toFixed(0)).join(' / ')}, client processes ${cpu.clients.map((x) => x.toFixed(0)).join(' / ')}, PostgreSQL ${cpu.postgres.toFixed(0)} (without subscribers ${pgBaseline.toFixed(0)}), this process${location.feedQueries ? ' (the write load and the Snowflake test peer)' : ' (the write load)'} ${cpu.self.toFixed(0)} (without subscribers ${selfBaseline.toFixed(0)})`);
    console.log(`client event-loop delay under load (ms, per process): ${reports.map((r) => `p50 ${r!.loop.p50.toFixed(1)} p99 ${r!.loop.p99.toFixed(1)} max ${r!.loop.max.toFixed(0)}`).join('; ')}`);
    console.log(`data-plane RSS (MB): after the baseline ${rssBefore.join(' / ')}, with subscribers idle ${rssIdle.join(' / ')}, peak under load ${rssPeak.join(' / ')}`);
    console.log(`load average (1/5/15 min): at start ${loadAtStart}; under load, before ${loadBefore}, after ${loadAfter}`);
  } finally {
    for (const c of clientProcs) if (c.connected) c.disconnect();
    await Promise.all(clientProcs.map((c) => new Promise((res) => (c.exitCode !== null ? res(null) : c.once('exit', res)))));
    for (const r of replicas) r.child.kill('SIGTERM');
    await Promise.all(replicas.map((r) => new Promise((res) => (r.child.exitCode !== null ? res(null) : r.child.once('exit', res)))));
    await location.stop?.();
    await db.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.env.BENCH_ROLE === 'clients') clientProcess();
else
  main().then(
    // The shared DynamoDB Local and Snowflake peer would keep the process alive.
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
