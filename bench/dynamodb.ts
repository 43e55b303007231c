/**
 * `npm run bench:dynamodb`: the data plane on a DynamoDB dataset (examples/dynamodb) against bare
 * node:http handlers making the same calls directly with the AWS SDK (bench/bare-dynamodb-server.ts),
 * side by side in one run on one DynamoDB Local, rotating rounds; medians and ratios of:
 *
 *   read   GET of one record by id (ids spread over the seeded records)
 *   batch  a 25-action ATOMIC batch of creates (fresh ids each request)
 *
 * Two floors: `bare` writes the 25 record items alone (what a hand-written service would do); `bare,
 * same layout` also writes each record's history item, as the data plane does (50 items a
 * transaction), which isolates the data plane's own cost from its storage design. Not a test: read
 * the ratios. BENCH_SECONDS (5), BENCH_ROUNDS (3), BENCH_CONNECTIONS (16), BENCH_RECORDS (2000).
 */
import autocannon from 'autocannon';
import type { ChildProcess } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDynamoDbLocal } from '../e2e/peers/dynamodb/peer.js';
import { freePort } from '../dataplane/src/db/embedded.js';
import { call } from '../dataplane/test-support/http.js';
import { cpuMs, median, ROOT, start, waitFor } from './support.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const RECORDS = Number(process.env.BENCH_RECORDS ?? 2000);
const BATCH = 25;
const HEADERS = { host: 'iam.localhost', authorization: 'Proxy shop-admin' };

interface Target {
  name: string;
  url: string;
  child: ChildProcess;
}

let seq = 0;
const batchBody = (prefix: string) =>
  JSON.stringify({
    batch: {
      actions: Object.fromEntries(
        Array.from({ length: BATCH }, (_, i) => [`a${i}`, { create: { schema: 'shop.Customer', id: `${prefix}-${++seq}-${i}`, data: { name: `Customer ${seq}` }, consistency: 'ATOMIC' } }]),
      ),
    },
  });

async function measure(target: Target, kind: 'read' | 'batch'): Promise<{ rps: number; p50: number; p99: number; errors: number; cpuUs?: number }> {
  let n = 0;
  const before = cpuMs(target.child.pid);
  const result = await autocannon({
    url: target.url,
    connections: kind === 'read' ? CONNECTIONS : Math.max(1, CONNECTIONS / 4),
    duration: SECONDS,
    headers: HEADERS,
    requests: [
      kind === 'read'
        ? { method: 'GET', setupRequest: (req: { path: string }) => ({ ...req, path: `/shop/shop.Customer/c${(n++ * 7919) % RECORDS}` }) }
        : { method: 'POST', headers: { 'content-type': 'application/json' }, setupRequest: (req: object) => ({ ...req, path: '/shop', body: batchBody(`${target.name.replace(/\W/g, '')}${process.pid}`) }) },
    ] as never,
  });
  const after = cpuMs(target.child.pid);
  const ok = result.requests.total - result.non2xx - result.errors;
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.non2xx + result.errors,
    ...(before !== undefined && after !== undefined && ok > 0 ? { cpuUs: ((after - before) * 1000) / ok } : {}),
  };
}

async function main(): Promise<void> {
  const peer = await startDynamoDbLocal();
  const dir = mkdtempSync(join(tmpdir(), 'das-bench-ddb-'));
  // The data plane's embedded PostgreSQL (its other datasets' store) runs as user postgres when root.
  chmodSync(dir, 0o755);
  const children: ChildProcess[] = [];
  try {
    const manifests = join(dir, 'manifests');
    cpSync(join(ROOT, 'examples/dynamodb'), manifests, { recursive: true });
    const file = join(manifests, 'dataset-shop.yaml');
    writeFileSync(file, readFileSync(file, 'utf8').replace('endpoint: http://127.0.0.1:8000', `endpoint: ${peer.endpoint}`).replace('tablePrefix: local-', 'tablePrefix: bench-'));
    const aws = { AWS_ACCESS_KEY_ID: peer.credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: peer.credentials.secretAccessKey, AWS_REGION: peer.region };

    const dpPort = await freePort();
    const dp: Target = {
      name: 'data plane',
      url: `http://127.0.0.1:${dpPort}`,
      child: start('dataplane/src/main.ts', { ...aws, PORT: String(dpPort), HOST: '127.0.0.1', DATA_DIR: join(dir, 'data'), DAS_MANIFESTS: manifests, LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info' }),
    };
    children.push(dp.child);
    await waitFor(dp.url, '/shop/shop.Customer/none', dp.child);
    for (let i = 0; i < 100; i++) {
      if ((await call(dp.url, { path: '/shop/shop.Customer/none', host: HEADERS.host, headers: { authorization: HEADERS.authorization } })).status === 404) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    // Seed through the data plane (its layout), 50 an atomic batch.
    for (let i = 0; i < RECORDS; i += 50) {
      const actions = Object.fromEntries(Array.from({ length: Math.min(50, RECORDS - i) }, (_, j) => [`s${j}`, { create: { schema: 'shop.Customer', id: `c${i + j}`, data: { name: `Seeded ${i + j}` } } }]));
      const res = await call(dp.url, { method: 'POST', path: '/shop', host: HEADERS.host, headers: { authorization: HEADERS.authorization }, body: { batch: { actions } } });
      if (res.status !== 200) throw new Error(`seeding failed: ${res.status} ${res.text.slice(0, 300)}`);
    }

    const bare = async (name: string, layout: string): Promise<Target> => {
      const port = await freePort();
      const child = start('bench/bare-dynamodb-server.ts', { ...aws, PORT: String(port), DDB_ENDPOINT: peer.endpoint, DDB_REGION: peer.region, DDB_TABLE_PREFIX: 'bench-', DDB_DATASET: 'shop', BARE_LAYOUT: layout });
      children.push(child);
      const target = { name, url: `http://127.0.0.1:${port}`, child };
      await waitFor(target.url, '/shop/shop.Customer/c0', child);
      return target;
    };
    const targets = [dp, await bare('bare', 'plain'), await bare('bare, same layout', 'history')];
    const check = await call(targets[1].url, { path: '/shop/shop.Customer/c1' });
    if (check.status !== 200) throw new Error(`the bare handler cannot read the seeded records: ${check.status}`);

    for (const kind of ['read', 'batch'] as const) {
      const runs = new Map<string, Awaited<ReturnType<typeof measure>>[]>(targets.map((t) => [t.name, []]));
      for (const t of targets) await measure(t, kind); // warm-up
      for (let round = 0; round < ROUNDS; round++) {
        const order = targets.map((_, i) => targets[(i + round) % targets.length]);
        for (const t of order) runs.get(t.name)!.push(await measure(t, kind));
      }
      console.log(`\n${kind === 'read' ? 'read by id (GET)' : `${BATCH}-action ATOMIC batch of creates (POST)`}: ${ROUNDS} rounds of ${SECONDS} s`);
      const dpRps = median(runs.get(dp.name)!.map((r) => r.rps));
      for (const t of targets) {
        const rs = runs.get(t.name)!;
        const rps = median(rs.map((r) => r.rps));
        const cpu = rs.every((r) => r.cpuUs !== undefined) ? median(rs.map((r) => r.cpuUs!)) : undefined;
        console.log(
          `  ${t.name.padEnd(20)} ${rps.toFixed(0).padStart(6)} req/s  p50 ${median(rs.map((r) => r.p50)).toFixed(1)} ms  p99 ${median(rs.map((r) => r.p99)).toFixed(1)} ms  errors ${rs.reduce((a, r) => a + r.errors, 0)}` +
            (cpu !== undefined ? `  CPU ${(cpu / 1000).toFixed(2)} ms/req` : '') +
            (t === dp ? '' : `  data plane / this: ${(dpRps / rps).toFixed(2)}`),
        );
      }
    }
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await peer.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
