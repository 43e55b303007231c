/**
 * `npm run bench:verified`: read-by-id through the iam gateway with a verified ServiceAccount
 * token (trust verified, cached verdicts) against the same read with a `Proxy` assertion from a
 * proxyFrom address, in one run, rotating rounds; and the cold latency of a token's first
 * request (one TokenReview against the real kube-apiserver peer) next to its second.
 * Expectation: token throughput ≥ 0.95 of Proxy's. Not a test: read the ratios (throughput, and the
 * data plane's CPU per request, which a noisy machine moves less), not the numbers.
 *
 * BENCH_SECONDS (10), BENCH_ROUNDS (3), BENCH_CONNECTIONS (32), BENCH_RECORDS (2000),
 * BENCH_COLD_TOKENS (20).
 */
import autocannon from 'autocannon';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startEmbeddedPostgres } from '../dataplane/src/db/embedded.js';
import { call } from '../dataplane/test-support/http.js';
import { startKubeCluster } from '../e2e/peers/kube/cluster.js';
import { cpuMs, median, start, waitFor } from './support.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const RECORDS = Number(process.env.BENCH_RECORDS ?? 2000);
const COLD_TOKENS = Number(process.env.BENCH_COLD_TOKENS ?? 20);
const NS = 'bench';
const AUDIENCE = 'dataaccess.dev/default/local';
const HOST = 'iam.localhost';
const PROXY = 'Proxy bench-front';

const MANIFESTS = `apiVersion: dataaccess.dev/v1alpha1
kind: Environment
metadata: {name: local}
spec:
  type: internal
  gateways:
    iam: {trust: verified, proxyFrom: ["127.0.0.1/32"]}
---
apiVersion: dataaccess.dev/v1alpha1
kind: Dataset
metadata: {name: demo}
spec:
  environment: local
  location: {kind: postgres, databaseSchema: demo}
  auth: {iam: {principals: ["system:serviceaccount:${NS}:*", bench-front]}}
  schemas:
    demo.Person: {properties: {name: {type: string}, age: {type: integer}}}
`;

async function main() {
  const cluster = await startKubeCluster({ controllerManager: false });
  const kubectl = (args: string[]) => execFileSync(join(cluster.binDir, 'kubectl'), args, { env: { ...process.env, ...cluster.env }, encoding: 'utf8' }).trim();
  const dir = mkdtempSync(join(tmpdir(), 'das-bench-verified-'));
  chmodSync(dir, 0o755);
  const db = await startEmbeddedPostgres({ dir: join(dir, 'pg') });
  let dp: ReturnType<typeof start> | undefined;
  try {
    kubectl(['create', 'namespace', NS]);
    kubectl(['-n', NS, 'create', 'serviceaccount', 'reader']);
    // Distinct durations: the same claims in the same second would be the same token.
    const token = (seconds: number) => kubectl(['-n', NS, 'create', 'token', 'reader', '--audience', AUDIENCE, '--duration', `${seconds}s`]);

    await db.createDatabase('bench');
    writeFileSync(join(dir, 'manifests.yaml'), MANIFESTS);
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    // The admin kubeconfig: TokenReview permission without the operator (the e2e covers the RBAC).
    dp = start('dataplane/src/main.ts', { DATABASE_URL: db.urlFor('bench'), PORT: String(port), DAS_MANIFESTS: join(dir, 'manifests.yaml'), DATA_DIR: join(dir, 'data'), KUBECONFIG: cluster.kubeconfigPath, LOG_LEVEL: 'warn' });
    await waitFor(url, '/readyz', dp);
    for (let first = 0; first < RECORDS; first += 1000) {
      const actions: Record<string, unknown> = {};
      for (let n = first; n < Math.min(first + 1000, RECORDS); n++) actions[`p${n}`] = { create: { schema: 'demo.Person', id: `p${n}`, data: { name: `Person ${n}`, age: n % 90 } } };
      const seeded = await call(url, { path: '/demo', host: HOST, headers: { authorization: PROXY }, body: { batch: { actions } } });
      if (seeded.status !== 200) throw new Error(`seeding failed: ${seeded.status} ${seeded.text.slice(0, 300)}`);
    }

    // Cold: a token's first request waits for one TokenReview; its second is served from the cache.
    const cold: number[] = [];
    const warm: number[] = [];
    for (let i = 0; i < COLD_TOKENS; i++) {
      const authorization = `Bearer ${token(600 + i)}`;
      for (const sink of [cold, warm]) {
        const began = performance.now();
        const answer = await call(url, { path: '/demo/demo.Person/p1', host: HOST, headers: { authorization } });
        sink.push(performance.now() - began);
        if (answer.status !== 200) throw new Error(`token read: ${answer.status} ${answer.text.slice(0, 300)}`);
      }
    }

    const modes = { Proxy: PROXY, 'ServiceAccount token': `Bearer ${token(3600)}` };
    const results = new Map<string, number[]>(Object.keys(modes).map((m) => [m, []]));
    const cpu = new Map<string, number[]>(Object.keys(modes).map((m) => [m, []]));
    const measure = async (authorization: string) => {
      let i = 0;
      const cpuBefore = cpuMs(dp!.pid);
      const result = await autocannon({
        url,
        connections: CONNECTIONS,
        duration: SECONDS,
        headers: { host: HOST, authorization },
        requests: [{ setupRequest: (req: any) => ({ ...req, path: `/demo/demo.Person/p${i++ % RECORDS}` }) }],
      });
      if (result.errors + result.non2xx) throw new Error(`${result.errors + result.non2xx} failed requests`);
      // CPU per request moves much less than throughput with the load of other tenants.
      const cpuUs = (((cpuMs(dp!.pid) ?? 0) - (cpuBefore ?? 0)) * 1000) / result.requests.total;
      return { rps: result.requests.average, cpuUs };
    };
    for (const authorization of Object.values(modes)) await autocannon({ url: `${url}/demo/demo.Person/p1`, connections: CONNECTIONS, duration: 2, headers: { host: HOST, authorization } });
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 ? Object.entries(modes).reverse() : Object.entries(modes);
      for (const [name, authorization] of order) {
        const { rps, cpuUs } = await measure(authorization);
        results.get(name)!.push(rps);
        cpu.get(name)!.push(cpuUs);
        console.log(`round ${round + 1} ${name.padEnd(22)} ${rps.toFixed(0).padStart(7)} req/s  cpu ${cpuUs.toFixed(0)} µs/req`);
      }
    }
    const proxy = median(results.get('Proxy')!);
    const verified = median(results.get('ServiceAccount token')!);
    console.log(`\nread-by-id through the iam gateway, ${CONNECTIONS} connections, ${SECONDS}s x ${ROUNDS} rounds (medians):`);
    const proxyCpu = median(cpu.get('Proxy')!);
    const verifiedCpu = median(cpu.get('ServiceAccount token')!);
    console.log(`  Proxy (proxyFrom)       ${proxy.toFixed(0).padStart(7)} req/s  cpu ${proxyCpu.toFixed(0)} µs/req`);
    console.log(`  ServiceAccount token    ${verified.toFixed(0).padStart(7)} req/s  cpu ${verifiedCpu.toFixed(0)} µs/req`);
    console.log(`  throughput ratio ${(verified / proxy).toFixed(3)} (expectation >= 0.95); CPU-per-request ratio (Proxy / token) ${(proxyCpu / verifiedCpu).toFixed(3)}`);
    console.log(`first request of a token (one TokenReview): median ${median(cold).toFixed(1)} ms; its second request: median ${median(warm).toFixed(1)} ms (${COLD_TOKENS} tokens)`);
  } finally {
    dp?.kill('SIGTERM');
    await db.stop();
    await cluster.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
