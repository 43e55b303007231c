/**
 * Benchmark: 200 Datasets on one Environment against a real kube-apiserver.
 *
 *   npm run bench:operator            (builds dist/, then runs this)
 *   npx tsx operator/bench/bench-200.ts [--datasets 200]
 *
 * The operator runs compiled (`node dist/operator/src/main.js`), as in its container image.
 * Prints: time from applying the Datasets until every one is Ready, the operator's peak resident
 * memory (sampled from /proc every 50 ms) and its V8 heap after the load, and the API write
 * requests of a full resync with nothing changed (must be 0; the run fails otherwise).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startKubeCluster } from '../../e2e/peers/kube/cluster.js';
import {
  REPO_ROOT,
  apiServerWrites,
  createNamespace,
  kubectl,
  kubectlJson,
  quiescentApiServerWrites,
  resyncAndCountWrites,
  startOperator,
  waitFor,
  waitForCondition,
} from '../../e2e/operator/harness.js';

const { values } = parseArgs({ options: { datasets: { type: 'string', default: '200' } } });
const COUNT = Number(values.datasets);

function datasetManifest(index: number): string {
  const name = `ds-${String(index).padStart(3, '0')}`;
  return `apiVersion: dataaccess.dev/v1alpha1
kind: Dataset
metadata: {name: ${name}}
spec:
  environment: local
  location: {kind: postgres, databaseSchema: ${name.replace(/-/g, '_')}}
  auth: {iam: {principals: [demo-admin], rawSqlEndpointEnabled: ${index % 2 === 0}}}
  schemas:
    demo.Company:
      properties: {name: {type: string}}
    demo.Person:
      properties:
        name: {type: string}
        age: {type: integer}
        address: {type: object, properties: {street: {type: string}, postcode: {type: string}}}
        employer: {type: link, schema: demo.Company}
`;
}

function rssBytes(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

async function main(): Promise<void> {
  const cluster = await startKubeCluster();
  let operator: Awaited<ReturnType<typeof startOperator>> | undefined;
  let sampler: NodeJS.Timeout | undefined;
  try {
    await kubectl(cluster, ['apply', '-f', join(REPO_ROOT, 'crds')]);
    await waitFor('the CRDs to be served', async () => (await cluster.kubectl(['get', 'datasets', '-A'])).code === 0);
    const ns = await createNamespace(cluster, 'bench');
    await kubectl(cluster, ['-n', ns, 'apply', '-f', join(REPO_ROOT, 'examples', 'environment.yaml')]);

    // As the chart runs it (values.yaml nodeOptions).
    operator = await startOperator(cluster.kubeconfigPath, { LEASE_NAMESPACE: ns, RESYNC_PERIOD_SECONDS: '0', LOG_LEVEL: 'warn', NODE_OPTIONS: '--max-semi-space-size=2' });
    const pid = operator.child.pid!;
    let peakRss = rssBytes(pid);
    sampler = setInterval(() => (peakRss = Math.max(peakRss, rssBytes(pid))), 50);
    await waitForCondition(cluster, ns, 'environment', 'local', 'Reconciled', 'True');
    const idleRss = rssBytes(pid);
    const before = await operator.metrics();

    const started = performance.now();
    const manifest = Array.from({ length: COUNT }, (_, i) => datasetManifest(i + 1)).join('---\n');
    await kubectl(cluster, ['-n', ns, 'apply', '-f', '-'], { input: manifest, timeoutMs: 300_000 });
    const applied = performance.now();
    await waitFor(
      `all ${COUNT} Datasets Ready`,
      async () => {
        const list = await kubectlJson(cluster, ['-n', ns, 'get', 'datasets']);
        const ready = list.items.filter((d: any) =>
          d.status?.conditions?.some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True') && d.status.observedGeneration === d.metadata.generation,
        ).length;
        return ready === COUNT;
      },
      600_000,
    );
    const allReady = performance.now();
    const afterLoad = await operator.metrics();
    const env = await kubectlJson(cluster, ['-n', ns, 'get', 'environment', 'local']);

    const serverCountedBefore = await quiescentApiServerWrites(cluster);
    const resync = await resyncAndCountWrites(operator);
    const serverCounted = (await apiServerWrites(cluster)) - serverCountedBefore;
    clearInterval(sampler);
    sampler = undefined;

    const loadWrites = afterLoad.writes() - before.writes();
    const figures = {
      datasets: COUNT,
      'kubectl apply of all Datasets (s)': ((applied - started) / 1000).toFixed(2),
      'apply start → every Dataset Ready (s)': ((allReady - started) / 1000).toFixed(2),
      'apply done → every Dataset Ready (s)': ((allReady - applied) / 1000).toFixed(2),
      'operator RSS idle (1 Environment, 0 Datasets)': mb(idleRss),
      'operator RSS peak (sampled every 50 ms)': mb(peakRss),
      'operator RSS after the resync': mb(rssBytes(pid)),
      'operator V8 heap used / total after the load': `${mb(afterLoad.sum('data_access_operator_nodejs_heap_size_used_bytes'))} / ${mb(afterLoad.sum('data_access_operator_nodejs_heap_size_total_bytes'))}`,
      'operator external + array buffers after the load': mb(afterLoad.sum('data_access_operator_nodejs_external_memory_bytes')),
      'API writes while loading (total)': loadWrites,
      'API writes per Dataset while loading': (loadWrites / COUNT).toFixed(2),
      'Environment status.datasets': env.status?.datasets,
      'full resync: reconciles': resync.reconciles,
      'full resync: API write requests': resync.writes,
      'full resync: writes the API server counted': serverCounted,
    };
    for (const [name, value] of Object.entries(figures)) process.stdout.write(`${name.padEnd(46)} ${value}\n`);
    if (resync.writes !== 0 || serverCounted !== 0) {
      process.stderr.write('FAIL: a resync with nothing changed made write requests\n');
      process.exitCode = 1;
    }
  } finally {
    if (sampler) clearInterval(sampler);
    await operator?.stop();
    await cluster.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
