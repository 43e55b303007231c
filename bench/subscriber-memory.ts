/**
 * `npm run bench:subscriber-memory`: the memory one subscriber costs a replica, the figure behind
 * the caps derived from the Pod's memory limit (dataplane/src/memory-caps.ts, docs/subscriptions.md
 * "Memory"). One compiled data plane (`node dist/dataplane/src/main.js`, as the image runs it) on an
 * embedded PostgreSQL; its RSS (from /proc) settled with 0, 1,000 and 10,000 idle subscribers
 * (BENCH_IDLE_MAX), then with 1,000 subscribers (BENCH_SUBSCRIBERS) during BENCH_WRITES_PER_SECOND
 * (200) writes/s for BENCH_SECONDS (20). The subscribers are bare `ws` clients speaking
 * graphql-transport-ws in separate client processes (2,000 each), one subscription per connection;
 * under load each filters on `age == k` (k = 0..99), so a write reaches about 10 of them.
 *
 * Prints RSS per stage, KB per subscriber, and where the derived cap lands for the default 512Mi
 * limit with the default reserve and per-subscriber figure, with the RSS predicted at that cap.
 */
import { fork, type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { freePort, startEmbeddedPostgres } from '../dataplane/src/db/embedded.js';
import { DEFAULT_BYTES_PER_SUBSCRIBER, DEFAULT_RESERVE_BYTES, memoryCaps, MiB } from '../dataplane/src/memory-caps.js';
import { call } from '../dataplane/test-support/http.js';
import { HEADERS, ROOT, waitFor } from './support.js';

const IDLE_MAX = Number(process.env.BENCH_IDLE_MAX ?? 10_000);
const LOADED = Number(process.env.BENCH_SUBSCRIBERS ?? 1000);
const RATE = Number(process.env.BENCH_WRITES_PER_SECOND ?? 200);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const PER_PROCESS = 2000;
const SETTLE_MS = 5000;

type ToClients = { url: string; count: number; filtered: boolean; offset: number };

/** A client process: opens `count` subscribers, reports 'ready' once each is acknowledged and subscribed, then holds them. */
function clientProcess(): void {
  process.once('message', (m: ToClients) => {
    let ready = 0;
    let received = 0;
    for (let i = 0; i < m.count; i++) {
      const ws = new WebSocket(m.url.replace('http://', 'ws://') + '/demo/graphql', 'graphql-transport-ws', { headers: { host: HEADERS.host } });
      ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: HEADERS.authorization } })));
      ws.on('message', (data) => {
        const message = JSON.parse(String(data));
        if (message.type === 'connection_ack') {
          const filter = m.filtered ? `age == ${(m.offset + i) % 100}` : undefined;
          ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: 'subscription S($f: String) { demo_Person(filter: $f) { op cursor record { id name age } } }', variables: { f: filter } } }));
          if (++ready === m.count) process.send!({ kind: 'ready' });
        } else if (message.type === 'next') received++;
      });
      ws.on('error', (err) => process.send!({ kind: 'error', message: err.message }));
      ws.on('close', (code) => code !== 1000 && code !== 1005 && process.send!({ kind: 'error', message: `closed ${code}` }));
    }
    setInterval(() => process.send!({ kind: 'received', n: received }), 1000).unref();
  });
}

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function subscriptionsOf(url: string): Promise<number> {
  const res = await call(url, { path: '/metrics' });
  return Number(/^das_subscriptions (\d+)/m.exec(res.text)?.[1] ?? NaN);
}

async function main(): Promise<void> {
  const compiled = resolve(ROOT, 'dist/dataplane/src/main.js');
  if (!existsSync(compiled)) throw new Error('run npm run build first (the npm script does)');
  const dir = mkdtempSync(join(tmpdir(), 'das-bench-mem-'));
  chmodSync(dir, 0o755);
  const db = await startEmbeddedPostgres({ dir: join(dir, 'pg') });
  const clients: ChildProcess[] = [];
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  // The caps are set high here: the benchmark measures what the derived caps are made from.
  const server = spawn(process.execPath, [compiled], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: db.url, DATA_DIR: join(dir, 'data'), LOG_LEVEL: 'warn', DAS_SUBSCRIPTIONS_PER_REPLICA: '50000', DAS_WS_CONNECTIONS_PER_REPLICA: '50000' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const errors: string[] = [];
  const open = async (count: number, filtered: boolean, base: number) => {
    const started: Promise<void>[] = [];
    for (let offset = 0; offset < count; offset += PER_PROCESS) {
      const child = fork(fileURLToPath(import.meta.url), [], { execArgv: ['--import', 'tsx'], env: { ...process.env, BENCH_ROLE: 'clients' }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      clients.push(child);
      started.push(
        new Promise((resolveReady) =>
          child.on('message', (m: { kind: string; message?: string }) => {
            if (m.kind === 'ready') resolveReady();
            if (m.kind === 'error' && errors.length < 20) errors.push(m.message!);
          }),
        ),
      );
      child.send({ url, count: Math.min(PER_PROCESS, count - offset), filtered, offset: offset + base } satisfies ToClients);
    }
    await Promise.all(started);
  };
  const closeAll = async () => {
    for (const c of clients.splice(0)) c.kill();
    for (let i = 0; i < 100 && (await subscriptionsOf(url)) > 0; i++) await sleep(200);
  };
  const settled = async (expected: number) => {
    for (let i = 0; i < 150 && (await subscriptionsOf(url)) < expected; i++) await sleep(200);
    const n = await subscriptionsOf(url);
    if (n < expected) throw new Error(`only ${n} of ${expected} subscriptions registered`);
    await sleep(SETTLE_MS);
    return rssMb(server.pid!);
  };
  const write = (n: number) =>
    call(url, { path: '/demo', host: HEADERS.host, headers: { authorization: HEADERS.authorization }, body: { create: { schema: 'demo.Person', id: `w-${n}`, data: { name: `writer ${n}`, age: n % 100 } } } });

  try {
    await waitFor(url, '/readyz', server);
    for (let n = 0; n < 200; n++) await write(-1 - n); // warm: pools, schema caches, JIT
    const rss0 = await settled(0);
    await open(1000, false, 0);
    const rss1k = await settled(1000);
    await open(IDLE_MAX - 1000, false, 1000);
    const rss10k = await settled(IDLE_MAX);
    await closeAll();
    const rssAfterIdle = await settled(0);

    await open(LOADED, true, 0);
    const rssLoadedIdle = await settled(LOADED);
    const samples: number[] = [];
    const sampler = setInterval(() => samples.push(rssMb(server.pid!)), 250);
    const begin = Date.now();
    const inflight: Promise<unknown>[] = [];
    let failed = 0;
    for (let n = 0; n < RATE * SECONDS; n++) {
      const wait = begin + (n * 1000) / RATE - Date.now();
      if (wait > 0) await sleep(wait);
      inflight.push(write(n).then((r) => r.status !== 201 && failed++, () => failed++));
    }
    await Promise.all(inflight);
    clearInterval(sampler);
    const achieved = (RATE * SECONDS) / ((Date.now() - begin) / 1000);
    const peak = Math.max(...samples);
    const mean = samples.reduce((a, b) => a + b, 0) / samples.length;

    const kb = (mb: number, n: number) => ((mb * 1024) / n).toFixed(1);
    const caps = memoryCaps(512 * MiB, { reserveBytes: DEFAULT_RESERVE_BYTES, bytesPerSubscriber: DEFAULT_BYTES_PER_SUBSCRIBER });
    const idlePerSub = ((rss10k - rss0) * MiB) / IDLE_MAX;
    const loadedPerSub = ((peak - rss0) * MiB) / LOADED;
    console.log(`\nsubscriber memory on the compiled build (node ${process.version}, RSS from /proc, settled ${SETTLE_MS / 1000} s)`);
    console.log(`  0 subscribers                          ${rss0.toFixed(0)} MB`);
    console.log(`  1,000 idle subscribers                 ${rss1k.toFixed(0)} MB   (${kb(rss1k - rss0, 1000)} KB per subscriber)`);
    console.log(`  ${IDLE_MAX.toLocaleString('en')} idle subscribers                ${rss10k.toFixed(0)} MB   (${kb(rss10k - rss0, IDLE_MAX)} KB per subscriber)`);
    console.log(`  all closed again                       ${rssAfterIdle.toFixed(0)} MB`);
    console.log(`  ${LOADED.toLocaleString('en')} subscribers, idle                ${rssLoadedIdle.toFixed(0)} MB`);
    console.log(`  ${LOADED.toLocaleString('en')} subscribers at ${RATE} writes/s    peak ${peak.toFixed(0)} MB, mean ${mean.toFixed(0)} MB (${kb(peak - rss0, LOADED)} KB per subscriber at the peak); ${achieved.toFixed(0)} writes/s achieved, ${failed} failed`);
    console.log(`\nderived cap for the default 512Mi limit: (512 MiB - ${DEFAULT_RESERVE_BYTES / MiB} MiB) / ${DEFAULT_BYTES_PER_SUBSCRIBER / 1024} KiB = ${caps.subscriptions} subscribers`);
    console.log(`  RSS predicted at the cap: idle ${((rss0 * MiB + caps.subscriptions * idlePerSub) / MiB).toFixed(0)} MB, at the loaded rate ${((rss0 * MiB + caps.subscriptions * Math.max(idlePerSub, loadedPerSub)) / MiB).toFixed(0)} MB (limit 512 MiB)`);
    if (errors.length) console.log(`client errors: ${errors.join('; ')}`);
  } finally {
    for (const c of clients) c.kill();
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    await db.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.env.BENCH_ROLE === 'clients') clientProcess();
else
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
