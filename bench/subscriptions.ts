/**
 * `npm run bench:subscriptions`: two data-plane processes (replicas) on one PostgreSQL; a fixed
 * write load through both (BENCH_WRITES_PER_SECOND, 200, alternating replicas) for BENCH_SECONDS
 * (30), first with no subscriber, then with BENCH_SUBSCRIBERS (1,000) spread over both replicas.
 *
 * Subscribers: BENCH_FULL (10) take every change (`demo_Person` without a filter); the others
 * filter on `age == k` (k = 0..99, a write's age is random), so each write fans out to about
 * 1/100 of them — 1,000 subscribers each receiving all 200 writes/s would be 200,000 messages/s
 * into this one benchmark process on a 2-core machine, which would measure the benchmark, not the
 * data plane.
 *
 * Subscribers are bare `ws` clients speaking graphql-transport-ws (BENCH_CLIENT=graphql-ws: the
 * graphql-ws client instead, which costs this process far more).
 *
 * Reports: delivery latency p50/p99 from the write's request to the client (an upper bound of
 * commit-to-client: the commit happens inside that request), changes lost (every subscriber must
 * get exactly the writes it matches: must be 0), duplicates, write latency p50/p99 and the writes
 * per second achieved in both runs (their ratio is the feed's cost on writes), and the data
 * planes' RSS.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { freePort, startEmbeddedPostgres } from '../dataplane/src/db/embedded.js';
import { call } from '../dataplane/test-support/http.js';
import { cpuMs, HEADERS, start, waitFor } from './support.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 30);
const RATE = Number(process.env.BENCH_WRITES_PER_SECOND ?? 200);
const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 1000);
const FULL = Number(process.env.BENCH_FULL ?? 10);
const AGES = 100;

const percentile = (xs: number[], p: number) => {
  if (!xs.length) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};
const rssMb = (pid: number | undefined) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : NaN;
};

interface Sub {
  age?: number;
  seen: Set<string>;
  duplicates: number;
  latencies: number[];
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'das-bench-subs-'));
  chmodSync(dir, 0o755); // the embedded server runs as "postgres" when we are root
  const db = await startEmbeddedPostgres({ dir: join(dir, 'pg') });
  const replicas: { url: string; child: ChildProcess }[] = [];
  const clients: Client[] = [];
  const sockets: WebSocket[] = [];
  try {
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      const child = start('dataplane/src/main.ts', { PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: db.url, DATA_DIR: join(dir, 'data'), LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn' });
      const url = `http://127.0.0.1:${port}`;
      await waitFor(url, '/readyz', child);
      replicas.push({ url, child });
    }

    /** Issues RATE writes a second for SECONDS, alternating replicas; `sentAt` per id. */
    const writeLoad = async (prefix: string, sentAt = new Map<string, number>()) => {
      const ages = new Map<string, number>();
      const latencies: number[] = [];
      let failed = 0;
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
              if (r.status === 201 || r.status === 200) latencies.push(Date.now() - t0);
              else failed++;
            },
            () => void failed++,
          ),
        );
      }
      await Promise.all(inflight);
      const seconds = (Date.now() - begin) / 1000;
      return { sentAt, ages, latencies, failed, perSecond: (total - failed) / seconds };
    };

    const baseline = await writeLoad('base');
    const rssBefore = replicas.map((r) => rssMb(r.child.pid));

    const subs: Sub[] = [];
    const sentAt = new Map<string, number>();
    let ready = 0;
    for (let i = 0; i < SUBSCRIBERS; i++) {
      const replica = replicas[i % 2];
      const sub: Sub = { age: i < FULL ? undefined : i % AGES, seen: new Set(), duplicates: 0, latencies: [] };
      subs.push(sub);
      // BENCH_NO_MATCH=1: filters no write matches (what subscriptions cost when nothing is delivered).
      const filter = sub.age === undefined ? undefined : `age == ${process.env.BENCH_NO_MATCH ? -1 : sub.age}`;
      const payload = { query: 'subscription($f: String) { demo_Person(filter: $f) { op record { id } } }', variables: { f: filter } };
      const onNext = (result: { data?: unknown }) => {
        const id = (result.data as { demo_Person: { record: { id: string } } }).demo_Person.record.id;
        if (sub.seen.has(id)) sub.duplicates++;
        sub.seen.add(id);
        const t0 = sentAt.get(id);
        if (t0 !== undefined) sub.latencies.push(Date.now() - t0);
      };
      const url = replica.url.replace('http', 'ws') + '/demo/graphql';
      if (process.env.BENCH_CLIENT !== 'graphql-ws') {
        // Bare ws clients speaking graphql-transport-ws: a thousand graphql-ws client instances in
        // this one process were the bottleneck (delivery p50 of seconds with the data planes at a
        // quarter of a core); BENCH_CLIENT=graphql-ws uses them anyway.
        const ws = new WebSocket(url, 'graphql-transport-ws');
        sockets.push(ws);
        ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: HEADERS.authorization } })));
        ws.on('message', (data) => {
          const m = JSON.parse(String(data)) as { type: string; payload: { data?: unknown } };
          if (m.type === 'connection_ack') {
            ready++;
            ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload }));
          } else if (m.type === 'next') onNext(m.payload);
          else if (m.type === 'error') console.error('subscription error', m.payload);
        });
        continue;
      }
      const client = createClient({ url, webSocketImpl: WebSocket, connectionParams: { Authorization: HEADERS.authorization }, retryAttempts: 0, lazy: false, onNonLazyError: () => undefined });
      clients.push(client);
      client.subscribe(payload, { next: onNext, error: (err) => console.error('subscription error', err), complete: () => undefined });
      client.on('connected', () => void ready++);
    }
    while (ready < SUBSCRIBERS) await new Promise((r) => setTimeout(r, 100));
    // Subscriptions are registered once their subscribe message is handled: give them a moment.
    for (;;) {
      const counts = await Promise.all(replicas.map((r) => call(r.url, { path: '/metrics' }).then((m) => Number(/^das_subscriptions (\d+)/m.exec(m.text)?.[1] ?? 0))));
      if (counts[0] + counts[1] >= SUBSCRIBERS) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const rssIdle = replicas.map((r) => rssMb(r.child.pid));
    const cpuStart = { planes: replicas.map((r) => cpuMs(r.child.pid) ?? 0), bench: process.cpuUsage() };
    const pending = writeLoad('load', sentAt);
    const rssPeak = [0, 0];
    const sampler = setInterval(() => replicas.forEach((r, i) => (rssPeak[i] = Math.max(rssPeak[i], rssMb(r.child.pid)))), 500);
    const loaded = await pending;
    const loadEnd = Date.now();
    const cpu = {
      planes: replicas.map((r, i) => ((cpuMs(r.child.pid) ?? 0) - cpuStart.planes[i]) / SECONDS),
      bench: ((u) => (u.user + u.system) / 1000 / SECONDS)(process.cpuUsage(cpuStart.bench)),
    };
    // Let the last changes arrive: until nothing new came for 3 s (at most 2 minutes).
    const delivered = () => subs.reduce((n, sub) => n + sub.seen.size, 0);
    for (let last = -1, since = Date.now(), end = Date.now() + 120_000; Date.now() < end && Date.now() - since < 3000; ) {
      await new Promise((r) => setTimeout(r, 250));
      const now = delivered();
      if (now !== last) [last, since] = [now, Date.now()];
    }
    const drainedAfterMs = Date.now() - loadEnd - 3000;
    clearInterval(sampler);

    const written = [...loaded.sentAt.keys()];
    let lost = 0;
    let duplicates = 0;
    const latencies: number[] = [];
    for (const sub of subs) {
      const expected = sub.age !== undefined && process.env.BENCH_NO_MATCH ? [] : written.filter((id) => sub.age === undefined || loaded.ages.get(id) === sub.age);
      lost += expected.filter((id) => !sub.seen.has(id)).length;
      duplicates += sub.duplicates;
      latencies.push(...sub.latencies);
    }
    const ms = (x: number) => `${x.toFixed(0)} ms`;
    console.log(`two replicas, ${RATE} writes/s for ${SECONDS} s, ${SUBSCRIBERS} subscribers (${FULL} unfiltered, the rest age == k)`);
    console.log(`delivery (write request → client): p50 ${ms(percentile(latencies, 50))}, p99 ${ms(percentile(latencies, 99))}, ${latencies.length} events`);
    console.log(`lost ${lost}, duplicates ${duplicates}; the last event arrived about ${Math.max(0, drainedAfterMs)} ms after the last write returned`);
    console.log(`writes without subscribers: ${baseline.perSecond.toFixed(1)}/s, p50 ${ms(percentile(baseline.latencies, 50))}, p99 ${ms(percentile(baseline.latencies, 99))}, failed ${baseline.failed}`);
    console.log(`writes with subscribers:    ${loaded.perSecond.toFixed(1)}/s, p50 ${ms(percentile(loaded.latencies, 50))}, p99 ${ms(percentile(loaded.latencies, 99))}, failed ${loaded.failed}`);
    console.log(`write throughput ratio ${(loaded.perSecond / baseline.perSecond).toFixed(3)}, p99 write latency ratio ${(percentile(loaded.latencies, 99) / percentile(baseline.latencies, 99)).toFixed(2)}`);
    console.log(`CPU under load (ms per s): data planes ${cpu.planes.map((x) => x.toFixed(0)).join(' / ')}, this benchmark process (the clients) ${cpu.bench.toFixed(0)}`);
    console.log(`data-plane RSS (MB): after the baseline ${rssBefore.join(' / ')}, with subscribers idle ${rssIdle.join(' / ')}, peak under load ${rssPeak.join(' / ')}`);
  } finally {
    await Promise.all(clients.map((c) => c.dispose()));
    for (const ws of sockets) ws.terminate();
    for (const r of replicas) r.child.kill('SIGTERM');
    await Promise.all(replicas.map((r) => new Promise((res) => (r.child.exitCode !== null ? res(null) : r.child.once('exit', res)))));
    await db.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
