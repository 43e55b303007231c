/**
 * `npm run bench:subscriber-memory`: the memory one subscriber costs a replica, the figure behind
 * the caps derived from the Pod's memory limit (dataplane/src/memory-caps.ts, docs/subscriptions.md
 * "Memory"). One compiled data plane (`node dist/dataplane/src/main.js`, as the image runs it) on an
 * embedded PostgreSQL; its RSS (from /proc) settled with 0, 1,000 and 10,000 idle subscribers
 * (BENCH_IDLE_MAX; 0 skips the stage). Then, on a fresh replica (a heap does not shrink when its
 * subscribers leave), the peak RSS during BENCH_WRITES_PER_SECOND (200) writes/s for BENCH_SECONDS
 * (20) without subscribers and again with 1,000 (BENCH_SUBSCRIBERS): the difference is what a
 * subscriber receiving events costs. The subscribers are bare `ws` clients speaking
 * graphql-transport-ws in separate client processes (2,000 each), one subscription per connection;
 * under load each filters on `age == k` (k = 0..99), so a write reaches about 10 of them.
 *
 * Prints RSS per stage, KiB per subscriber, and where the derived cap lands for 512Mi and 768Mi
 * limits (the operator's old and current defaults) with the default reserve and per-subscriber
 * figure, with the RSS predicted at that cap.
 */
import { fork, type ChildProcess, spawn } from 'node:child_process';
import { Agent } from 'node:http';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
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
const OPENING = 50;

type ToClients = { url: string; count: number; filtered: boolean; offset: number };

/**
 * A client process: opens `count` subscribers, OPENING at a time (a stampede of thousands on a
 * loaded machine would outlast the init timeout), reports 'ready' once each has been acknowledged
 * and has subscribed, then holds them. A connection closed before that is opened again.
 */
function clientProcess(): void {
  process.once('message', (m: ToClients) => {
    let ready = 0;
    let next = 0;
    const openOne = (i: number) => {
      let subscribed = false;
      const ws = new WebSocket(m.url.replace('http://', 'ws://') + '/demo/graphql', 'graphql-transport-ws', { headers: { host: HEADERS.host } });
      ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: HEADERS.authorization } })));
      ws.on('message', (data) => {
        if (JSON.parse(String(data)).type !== 'connection_ack') return;
        const filter = m.filtered ? `age == ${(m.offset + i) % 100}` : undefined;
        ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: 'subscription S($f: String) { demo_Person(filter: $f) { op cursor record { id name age } } }', variables: { f: filter } } }));
        subscribed = true;
        if (++ready === m.count) process.send!({ kind: 'ready' });
        if (next < m.count) openOne(next++);
      });
      ws.on('error', (err) => process.send!({ kind: 'error', message: err.message }));
      ws.on('close', (code) => {
        if (!subscribed) return void setTimeout(() => openOne(i), 200);
        process.send!({ kind: 'error', message: `closed ${code}` });
      });
    };
    while (next < Math.min(OPENING, m.count)) openOne(next++);
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
  const errors: string[] = [];
  const servers: ChildProcess[] = [];
  /** A fresh replica; the caps are set high: the benchmark measures what the derived caps are made from. */
  const startServer = async () => {
    const port = await freePort();
    const server = spawn(process.execPath, [compiled], {
      cwd: ROOT,
      env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: db.url, DATA_DIR: join(dir, 'data'), LOG_LEVEL: 'warn', DAS_SUBSCRIPTIONS_PER_REPLICA: '50000', DAS_WS_MAX_CONNECTIONS: '50000' },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    servers.push(server);
    const url = `http://127.0.0.1:${port}`;
    await waitFor(url, '/readyz', server);
    return { url, pid: server.pid! };
  };
  const open = async (url: string, count: number, filtered: boolean, base: number) => {
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
  const settled = async (target: { url: string; pid: number }, expected: number) => {
    console.error(`  … waiting for ${expected} subscriptions, then ${SETTLE_MS / 1000} s of quiet`);
    for (let i = 0; i < 600 && (await subscriptionsOf(target.url)) < expected; i++) await sleep(200);
    const n = await subscriptionsOf(target.url);
    if (n < expected) throw new Error(`only ${n} of ${expected} subscriptions registered`);
    await sleep(SETTLE_MS);
    return rssMb(target.pid);
  };
  // Writers as services are: keep-alive connections, a bounded number of them.
  const agent = new Agent({ keepAlive: true, maxSockets: 32 });
  const write = (url: string, n: number) =>
    call(url, { path: '/demo', host: HEADERS.host, headers: { authorization: HEADERS.authorization }, agent, body: { create: { schema: 'demo.Person', id: `w-${n}`, data: { name: `writer ${n}`, age: n % 100 } } } });
  const warm = async (url: string, from: number) => {
    for (let n = 0; n < 200; n++) await write(url, from + n); // pools, schema caches, JIT
  };

  try {
    // Idle subscribers (BENCH_IDLE_MAX=0 skips this stage).
    let rss0 = NaN;
    let rss1k = NaN;
    let rss10k = NaN;
    if (IDLE_MAX > 0) {
      const idle = await startServer();
      await warm(idle.url, -1000);
      rss0 = await settled(idle, 0);
      await open(idle.url, 1000, false, 0);
      rss1k = await settled(idle, 1000);
      await open(idle.url, IDLE_MAX - 1000, false, 1000);
      rss10k = await settled(idle, IDLE_MAX);
      for (const c of clients.splice(0)) c.kill();
      servers[0].kill('SIGTERM');
    }

    // Subscribers under load, on a fresh replica (the first one's heap stays grown after its subscribers leave).
    const loaded = await startServer();
    await warm(loaded.url, -2000);
    const rssLoaded0 = await settled(loaded, 0);
    const failures: string[] = [];
    /** RATE writes/s for SECONDS; the replica's RSS sampled every 250 ms. */
    const writeLoad = async (from: number) => {
      const samples: number[] = [];
      const sampler = setInterval(() => samples.push(rssMb(loaded.pid)), 250);
      const begin = Date.now();
      const inflight: Promise<unknown>[] = [];
      for (let n = 0; n < RATE * SECONDS; n++) {
        const wait = begin + (n * 1000) / RATE - Date.now();
        if (wait > 0) await sleep(wait);
        inflight.push(write(loaded.url, from + n).then((r) => r.status !== 201 && failures.push(`${r.status} ${r.text.slice(0, 120)}`), (err: Error) => failures.push(err.message)));
      }
      await Promise.all(inflight);
      clearInterval(sampler);
      return { achieved: (RATE * SECONDS) / ((Date.now() - begin) / 1000), peak: Math.max(...samples), mean: samples.reduce((a, b) => a + b, 0) / samples.length };
    };
    // The same writes without subscribers first: what the write traffic itself costs.
    const bare = await writeLoad(0);
    await open(loaded.url, LOADED, true, 0);
    const rssLoadedIdle = await settled(loaded, LOADED);
    const { achieved, peak, mean } = await writeLoad(1_000_000);

    const kb = (mb: number, n: number) => ((mb * 1024) / n).toFixed(1);
    const idlePerSub = ((rss10k - rss0) * MiB) / IDLE_MAX;
    const loadedPerSub = ((peak - bare.peak) * MiB) / LOADED;
    console.log(`\nsubscriber memory on the compiled build (node ${process.version}, RSS from /proc in MiB, settled ${SETTLE_MS / 1000} s; load average ${loadavg()[0].toFixed(1)})`);
    console.log(`  0 subscribers                          ${rss0.toFixed(0)} MiB`);
    console.log(`  1,000 idle subscribers                 ${rss1k.toFixed(0)} MiB   (${kb(rss1k - rss0, 1000)} KiB per subscriber)`);
    console.log(`  ${IDLE_MAX.toLocaleString('en')} idle subscribers                ${rss10k.toFixed(0)} MiB   (${kb(rss10k - rss0, IDLE_MAX)} KiB per subscriber)`);
    console.log(`  fresh replica: 0 subscribers           ${rssLoaded0.toFixed(0)} MiB`);
    console.log(`  0 subscribers at ${RATE} writes/s         peak ${bare.peak.toFixed(0)} MiB, mean ${bare.mean.toFixed(0)} MiB; ${bare.achieved.toFixed(0)} writes/s achieved`);
    console.log(`  ${LOADED.toLocaleString('en')} subscribers, idle after that       ${rssLoadedIdle.toFixed(0)} MiB`);
    console.log(`  ${LOADED.toLocaleString('en')} subscribers at ${RATE} writes/s    peak ${peak.toFixed(0)} MiB, mean ${mean.toFixed(0)} MiB (${kb(peak - bare.peak, LOADED)} KiB per subscriber over the peak without them); ${achieved.toFixed(0)} writes/s achieved`);
    console.log(`  writes failed: ${failures.length}${failures.length ? ` (${[...new Set(failures)].slice(0, 3).join('; ')})` : ''}`);
    // 512Mi: the limit the operator rendered before; 768Mi: its default now (model/workloads.ts).
    for (const limitMi of [512, 768]) {
      const caps = memoryCaps(limitMi * MiB, { reserveBytes: DEFAULT_RESERVE_BYTES, bytesPerSubscriber: DEFAULT_BYTES_PER_SUBSCRIBER });
      console.log(`\nderived cap for a ${limitMi}Mi limit: (${limitMi} MiB - ${DEFAULT_RESERVE_BYTES / MiB} MiB) / ${DEFAULT_BYTES_PER_SUBSCRIBER / 1024} KiB = ${caps.subscriptions} subscribers`);
      console.log(`  RSS predicted at the cap: idle ${((rss0 * MiB + caps.subscriptions * idlePerSub) / MiB).toFixed(0)} MiB, under this write load ${((bare.peak * MiB + caps.subscriptions * loadedPerSub) / MiB).toFixed(0)} MiB (limit ${limitMi} MiB)`);
    }
    if (errors.length) console.log(`client errors (retried): ${errors.join('; ')}`);
  } finally {
    for (const c of clients) c.kill();
    for (const s of servers) if (s.exitCode === null) s.kill('SIGTERM');
    await Promise.all(servers.map((s) => (s.exitCode === null ? new Promise((r) => s.once('exit', r)) : undefined)));
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
