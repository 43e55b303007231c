/**
 * `npm run bench:snowflake`: the data plane on a warehouse dataset (examples/warehouse, `sales`)
 * against a bare node:http handler sending the same statements directly with snowflake-sdk
 * (bench/bare-snowflake-server.ts), side by side in one run on one Snowflake TEST PEER (the real
 * SDK's protocol; PostgreSQL behind it), rotating rounds; medians and ratios of:
 *
 *   read   GET of one record by id (ids spread over the seeded records)
 *   batch  a 100-action ATOMIC batch of creates (fresh ids each request)
 *
 * and the round trips per request (statements the peer received, divided by requests answered):
 * a batch must cost a constant number, whatever its size. The peer answers in-process here, so the
 * figures measure the service's overhead over the SDK, not a warehouse's latency. Not a test: read
 * the ratios. BENCH_SECONDS (5), BENCH_ROUNDS (3), BENCH_CONNECTIONS (8), BENCH_RECORDS (1000).
 */
import autocannon from 'autocannon';
import type { ChildProcess } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startEmbeddedPostgres } from '../dataplane/src/db/embedded.js';
import { call } from '../dataplane/test-support/http.js';
import { startSnowflakeTestPeer, type SnowflakeTestPeerHandle } from '../e2e/peers/snowflake/peer.js';
import { cpuMs, median, ROOT, start, waitFor } from './support.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 8);
const RECORDS = Number(process.env.BENCH_RECORDS ?? 1000);
const BATCH = 100;
const HEADERS = { host: 'iam.localhost', authorization: 'Proxy sales-admin' };

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
        Array.from({ length: BATCH }, (_, i) => [`a${i}`, { create: { schema: 'sales.Customer', id: `${prefix}-${++seq}-${i}`, data: { name: `Customer ${seq}`, region: 'EU' }, consistency: 'ATOMIC' } }]),
      ),
    },
  });

async function measure(peer: SnowflakeTestPeerHandle, target: Target, kind: 'read' | 'batch') {
  let n = 0;
  const before = cpuMs(target.child.pid);
  peer.clearQueries();
  const result = await autocannon({
    url: target.url,
    connections: kind === 'read' ? CONNECTIONS : Math.max(1, CONNECTIONS / 4),
    duration: SECONDS,
    headers: HEADERS,
    requests: [
      kind === 'read'
        ? { method: 'GET', setupRequest: (req: { path: string }) => ({ ...req, path: `/sales/sales.Customer/c${(n++ * 7919) % RECORDS}` }) }
        : { method: 'POST', headers: { 'content-type': 'application/json' }, setupRequest: (req: object) => ({ ...req, path: '/sales', body: batchBody(`${target.name.replace(/\W/g, '')}${process.pid}`) }) },
    ] as never,
  });
  const statements = peer.queries().length;
  const after = cpuMs(target.child.pid);
  const ok = result.requests.total - result.non2xx - result.errors;
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.non2xx + result.errors,
    roundTrips: ok > 0 ? statements / result.requests.total : NaN,
    ...(before !== undefined && after !== undefined && ok > 0 ? { cpuUs: ((after - before) * 1000) / ok } : {}),
  };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'das-bench-sf-'));
  chmodSync(dir, 0o755); // embedded PostgreSQL runs as user postgres when root
  const pg = await startEmbeddedPostgres({ dir: join(dir, 'peer-pg') });
  const peer = await startSnowflakeTestPeer({ adminUrl: pg.url });
  const children: ChildProcess[] = [];
  try {
    const manifests = join(dir, 'manifests');
    mkdirSync(manifests);
    cpSync(join(ROOT, 'examples/warehouse/environment.yaml'), join(manifests, 'environment.yaml'));
    writeFileSync(join(manifests, 'dataset-sales.yaml'), readFileSync(join(ROOT, 'examples/warehouse/dataset-sales.yaml'), 'utf8').replace('accessUrl: http://127.0.0.1:8085', `accessUrl: ${peer.url}`));
    const secrets = join(dir, 'data', 'secrets', 'warehouse-login');
    mkdirSync(secrets, { recursive: true });
    writeFileSync(join(secrets, 'login'), JSON.stringify({ username: 'das', password: 'das' }));

    const dpPort = await freePort();
    const dp: Target = {
      name: 'data plane',
      url: `http://127.0.0.1:${dpPort}`,
      child: start('dataplane/src/main.ts', { PORT: String(dpPort), HOST: '127.0.0.1', DATA_DIR: join(dir, 'data'), DAS_MANIFESTS: manifests, LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn' }),
    };
    children.push(dp.child);
    await waitFor(dp.url, '/healthz', dp.child);
    for (let i = 0; i < 300; i++) {
      if ((await call(dp.url, { path: '/sales/sales.Customer/none', host: HEADERS.host, headers: { authorization: HEADERS.authorization } })).status === 404) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    for (let i = 0; i < RECORDS; i += 100) {
      const actions = Object.fromEntries(Array.from({ length: Math.min(100, RECORDS - i) }, (_, j) => [`s${j}`, { create: { schema: 'sales.Customer', id: `c${i + j}`, data: { name: `Seeded ${i + j}`, region: 'EU' } } }]));
      const res = await call(dp.url, { method: 'POST', path: '/sales', host: HEADERS.host, headers: { authorization: HEADERS.authorization }, body: { batch: { actions } } });
      if (res.status !== 200) throw new Error(`seeding failed: ${res.status} ${res.text.slice(0, 300)}`);
    }

    const barePort = await freePort();
    const bareChild = start('bench/bare-snowflake-server.ts', {
      PORT: String(barePort),
      DAS_MANIFESTS: join(manifests, 'dataset-sales.yaml'),
      SF_ACCESS_URL: peer.url,
      SF_DATABASE: 'SALES',
      SF_SCHEMA: 'SALES',
      SF_WAREHOUSE: 'LOADING_WH',
      SF_ROLE: 'SERVICE_WRITER',
      POOL: '8',
    });
    children.push(bareChild);
    const bare: Target = { name: 'bare snowflake-sdk', url: `http://127.0.0.1:${barePort}`, child: bareChild };
    await waitFor(bare.url, '/sales/sales.Customer/c0', bareChild);
    const check = await call(bare.url, { path: '/sales/sales.Customer/c1' });
    if (check.status !== 200) throw new Error(`the bare handler cannot read the seeded records: ${check.status} ${check.text}`);
    const targets = [dp, bare];

    for (const kind of ['read', 'batch'] as const) {
      const runs = new Map<string, Awaited<ReturnType<typeof measure>>[]>(targets.map((t) => [t.name, []]));
      for (const t of targets) await measure(peer, t, kind); // warm-up
      for (let round = 0; round < ROUNDS; round++) {
        const order = targets.map((_, i) => targets[(i + round) % targets.length]);
        for (const t of order) runs.get(t.name)!.push(await measure(peer, t, kind));
      }
      console.log(`\n${kind === 'read' ? 'read by id (GET)' : `${BATCH}-action ATOMIC batch of creates (POST)`}: ${ROUNDS} rounds of ${SECONDS} s`);
      const dpRuns = runs.get(dp.name)!;
      const bareRuns = runs.get(bare.name)!;
      const perRound = dpRuns.map((r, i) => r.rps / bareRuns[i].rps);
      for (const t of targets) {
        const rs = runs.get(t.name)!;
        const cpu = rs.every((r) => r.cpuUs !== undefined) ? median(rs.map((r) => r.cpuUs!)) : undefined;
        console.log(
          `  ${t.name.padEnd(20)} ${median(rs.map((r) => r.rps)).toFixed(1).padStart(7)} req/s  p50 ${median(rs.map((r) => r.p50)).toFixed(1)} ms  p99 ${median(rs.map((r) => r.p99)).toFixed(1)} ms  errors ${rs.reduce((a, r) => a + r.errors, 0)}` +
            `  round trips ${median(rs.map((r) => r.roundTrips)).toFixed(2)}/req` +
            (cpu !== undefined ? `  CPU ${(cpu / 1000).toFixed(2)} ms/req` : ''),
        );
      }
      console.log(`  ratio data plane / bare: ${(median(dpRuns.map((r) => r.rps)) / median(bareRuns.map((r) => r.rps))).toFixed(2)} (per round: ${perRound.map((r) => r.toFixed(2)).join(', ')})`);
    }
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await peer.stop();
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
