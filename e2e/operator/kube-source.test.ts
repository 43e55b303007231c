/**
 * The data plane's ConfigMap config source (dataplane/src/config/kube-source.ts) against a real
 * API server, with a recording sink: initial list, updates, deletes, malformed JSON, a purge
 * request, and a severed connection (watch drop plus an unreachable API server).
 */
import { KubeConfig } from '@kubernetes/client-node';
import { expect } from 'chai';
import { pino } from 'pino';
import { startKubeConfigSource } from '../../dataplane/src/config/kube-source.js';
import { RecordingSink } from '../../dataplane/test-support/recording-sink.js';
import { renderDatasetConfig, renderEnvironmentConfig } from '../../model/render.js';
import { startKubeCluster, type KubeCluster } from '../peers/kube/cluster.js';
import { apply, createNamespace, kubeconfigWithServer, kubectl, waitFor } from './harness.js';
import { CuttableProxy } from './tcp-proxy.js';

const labels = (env: string, kind: 'environment' | 'dataset', dataset?: string) =>
  `labels: {app.kubernetes.io/managed-by: data-access-operator, dataaccess.dev/environment: ${env}, dataaccess.dev/config: ${kind}${dataset ? `, dataaccess.dev/dataset: ${dataset}` : ''}}`;

function environmentConfigMap(env: string): string {
  // As the operator publishes it: the rendered config (the data plane validates it).
  const json = JSON.stringify(renderEnvironmentConfig({ apiVersion: 'dataaccess.dev/v1alpha1', kind: 'Environment', metadata: { name: env, namespace: 'default' }, spec: { type: 'internal' } }));
  return `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${env}-dataplane, ${labels(env, 'environment')}}\ndata:\n  environment.json: '${json}'\n`;
}

/** A dataset config as the operator publishes it: rendered (the data plane validates it). */
const datasetConfig = (env: string, id: string, generation: number) =>
  renderDatasetConfig({ apiVersion: 'dataaccess.dev/v1alpha1', kind: 'Dataset', metadata: { name: id, generation }, spec: { environment: env, location: { kind: 'postgres' }, schemas: { 'demo.A': { properties: {} } } } });

function datasetConfigMap(env: string, id: string, generation: number, extra = ''): string {
  const json = JSON.stringify(datasetConfig(env, id, generation));
  return `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${env}-dataset-${id}, ${labels(env, 'dataset', id)}${extra}}\ndata:\n  dataset.json: '${json}'\n`;
}

describe('data plane ConfigMap source e2e (kube-apiserver)', function () {
  this.timeout(120_000);
  let cluster: KubeCluster;
  let kubeConfig: KubeConfig;
  const logger = pino({ level: 'silent' });

  before(async () => {
    cluster = await startKubeCluster();
    kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(cluster.kubeconfigPath);
  });
  after(async () => cluster?.stop());

  it('resolves after the initial list was delivered, and only sees its own Environment\'s managed ConfigMaps', async () => {
    const ns = await createNamespace(cluster, 'source-list');
    await apply(cluster, ns, [environmentConfigMap('local'), datasetConfigMap('local', 'a', 1), datasetConfigMap('local', 'b', 1), datasetConfigMap('other', 'c', 1)].join('---\n'));
    await apply(cluster, ns, `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: local-dataset-stray, labels: {dataaccess.dev/environment: local}}\ndata: {dataset.json: '{}'}\n`);
    const sink = new RecordingSink();
    const source = await startKubeConfigSource({ namespace: ns, environment: 'local', kubeConfig, logger }, sink);
    try {
      expect(sink.environment?.id).to.equal('local');
      expect([...sink.datasets.keys()].sort()).to.deep.equal(['a', 'b']);
    } finally {
      await source.stop();
    }
  });

  it('delivers updates and deletions; skips malformed JSON and keeps the last good config; passes on a purge request', async () => {
    const ns = await createNamespace(cluster, 'source-watch');
    await apply(cluster, ns, [environmentConfigMap('local'), datasetConfigMap('local', 'a', 1), datasetConfigMap('local', 'b', 1)].join('---\n'));
    const sink = new RecordingSink();
    const source = await startKubeConfigSource({ namespace: ns, environment: 'local', kubeConfig, logger }, sink);
    try {
      await apply(cluster, ns, datasetConfigMap('local', 'a', 2));
      await waitFor('generation 2 of a', async () => sink.datasets.get('a')?.generation === 2);

      const before = sink.calls.length;
      await kubectl(cluster, ['-n', ns, 'patch', 'configmap', 'local-dataset-a', '--type', 'merge', '-p', JSON.stringify({ data: { 'dataset.json': '{"id": "a", ' } })]);
      // JSON, but not a valid dataset config (an unknown location kind): refused the same way.
      const invalid = { ...datasetConfig('local', 'a', 3), location: { kind: 'mysql', defaultConsistency: 'ATOMIC' } };
      await kubectl(cluster, ['-n', ns, 'patch', 'configmap', 'local-dataset-a', '--type', 'merge', '-p', JSON.stringify({ data: { 'dataset.json': JSON.stringify(invalid) } })]);
      // A later good change proves the malformed one went by without reaching the sink.
      await apply(cluster, ns, datasetConfigMap('local', 'b', 2));
      await waitFor('generation 2 of b', async () => sink.datasets.get('b')?.generation === 2);
      expect(sink.calls.slice(before)).to.deep.equal(['upsert b g2']);
      expect(sink.datasets.get('a')?.generation).to.equal(2);
      // The refusal stands while the ConfigMap holds it: /readyz reports it (degraded).
      expect(sink.problem?.file).to.equal(`ConfigMap ${ns}/local-dataset-a`);
      expect(sink.problem?.problem).to.contain('$.location.kind');

      await kubectl(cluster, ['-n', ns, 'delete', 'configmap', 'local-dataset-a']);
      await waitFor('a to be removed', async () => !sink.datasets.has('a'));
      expect(sink.problem, 'its ConfigMap gone, nothing refused is left').to.equal(undefined);

      await kubectl(cluster, ['-n', ns, 'annotate', 'configmap', 'local-dataset-b', 'dataaccess.dev/purge-data=true']);
      await kubectl(cluster, ['-n', ns, 'delete', 'configmap', 'local-dataset-b']);
      await waitFor('b to be removed and purged', async () => !sink.datasets.has('b') && sink.purged.includes('b'));
    } finally {
      await source.stop();
    }
  });

  it('survives a severed connection: catches up on what changed while the API server was unreachable', async () => {
    const ns = await createNamespace(cluster, 'source-drop');
    await apply(cluster, ns, [environmentConfigMap('local'), datasetConfigMap('local', 'a', 1), datasetConfigMap('local', 'b', 1)].join('---\n'));
    const url = new URL(cluster.server);
    const proxy = new CuttableProxy(url.hostname, Number(url.port));
    await proxy.start();
    const viaProxy = new KubeConfig();
    viaProxy.loadFromFile(kubeconfigWithServer(cluster, `https://127.0.0.1:${proxy.port}`));
    const sink = new RecordingSink();
    const source = await startKubeConfigSource({ namespace: ns, environment: 'local', kubeConfig: viaProxy, logger, retryBaseMs: 100, retryMaxMs: 500 }, sink);
    try {
      proxy.sever();
      await kubectl(cluster, ['-n', ns, 'delete', 'configmap', 'local-dataset-a']);
      await apply(cluster, ns, datasetConfigMap('local', 'b', 2));
      await apply(cluster, ns, datasetConfigMap('local', 'c', 1));
      expect([...sink.datasets.keys()].sort()).to.deep.equal(['a', 'b']); // nothing got through
      proxy.restore();
      await waitFor('the source to catch up', async () => !sink.datasets.has('a') && sink.datasets.get('b')?.generation === 2 && sink.datasets.has('c'));
    } finally {
      await source.stop();
      await proxy.stop();
    }
  });

  it('gives up with a clear error when it cannot list at all', async () => {
    const proxy = new CuttableProxy('127.0.0.1', 1);
    await proxy.start();
    proxy.sever();
    const unreachable = new KubeConfig();
    unreachable.loadFromFile(kubeconfigWithServer(cluster, `https://127.0.0.1:${proxy.port}`));
    let error: Error | undefined;
    await startKubeConfigSource({ namespace: 'x', environment: 'local', kubeConfig: unreachable, logger, initialListAttempts: 2, retryBaseMs: 10 }, new RecordingSink()).catch((err: Error) => (error = err));
    await proxy.stop();
    expect(error?.message).to.match(/could not list ConfigMaps dataaccess\.dev\/environment=local,app\.kubernetes\.io\/managed-by=data-access-operator in namespace x/);
  });
});
