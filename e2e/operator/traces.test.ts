/**
 * The operator's OpenTelemetry traces against the kube-apiserver peer: one span per reconcile of
 * each object, exported to an OTLP receiver in the test; the OTEL_* settings handed on to the
 * Deployments it renders (the data plane's and the function gateway's).
 */
import { expect } from 'chai';
import { join } from 'node:path';
import { startKubeCluster, type KubeCluster } from '../peers/kube/cluster.js';
import { startOtlpReceiver, type OtlpReceiver } from '../../dataplane/test-support/otlp-receiver.js';
import { REPO_ROOT, createNamespace, getObject, kubectl, startOperator, waitFor, waitForCondition, type OperatorProcess } from './harness.js';

describe('operator OpenTelemetry traces e2e (kube-apiserver, OTLP receiver)', function () {
  this.timeout(180_000);
  let cluster: KubeCluster;
  let receiver: OtlpReceiver;
  let operator: OperatorProcess | undefined;

  before(async () => {
    receiver = await startOtlpReceiver();
    cluster = await startKubeCluster();
    await kubectl(cluster, ['apply', '-f', join(REPO_ROOT, 'crds')]);
    await waitFor('the CRDs to be served', async () => (await cluster.kubectl(['get', 'environments', '-A'])).code === 0);
  });
  after(async () => {
    await operator?.stop('SIGKILL');
    await cluster?.stop();
    await receiver?.close();
  });

  it('a span per reconcile, and the rendered workloads get the same collector', async () => {
    operator = await startOperator(cluster.kubeconfigPath, {
      LEADER_ELECTION: 'false',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_BSP_SCHEDULE_DELAY: '50',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=e2e',
    });
    const ns = await createNamespace(cluster, 'otel');
    await kubectl(cluster, ['-n', ns, 'apply', '-f', join(REPO_ROOT, 'examples')]);
    await waitForCondition(cluster, ns, 'dataset', 'demo', 'Ready', 'True');

    const inNamespace = (name: string, object?: string) => (s: { name: string; attributes: Record<string, unknown> }) =>
      s.name === name && s.attributes['k8s.namespace.name'] === ns && (object === undefined || s.attributes['das.name'] === object);
    const spans = await receiver.waitFor((all) => all.some(inNamespace('reconcile Environment')) && all.some(inNamespace('reconcile Dataset', 'demo')));
    const dataset = spans.find(inNamespace('reconcile Dataset', 'demo'))!;
    expect(dataset).to.include({ service: 'data-access-operator', parentSpanId: '' });
    expect(dataset.attributes).to.include({ 'das.kind': 'Dataset', 'das.name': 'demo' });
    expect(receiver.contentTypes).to.include('application/x-protobuf');

    const envOf = async (name: string) => {
      const deployment = await getObject(cluster, ns, 'deployment', name);
      return Object.fromEntries((deployment.spec.template.spec.containers[0].env as { name: string; value?: string }[]).map((e) => [e.name, e.value]));
    };
    // The Dataset can be Ready before the Environment's function gateway is rendered: wait for both.
    const names = await waitFor('the data plane and function gateway Deployments', async () => {
      const listed = (await kubectl(cluster, ['-n', ns, 'get', 'deployments', '-o', 'jsonpath={.items[*].metadata.name}'])).trim().split(/\s+/).filter(Boolean);
      return listed.length >= 2 && listed;
    });
    for (const name of names) {
      const env = await envOf(name);
      expect(env, name).to.include({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=e2e' });
      expect(env, name).not.to.have.property('OTEL_SERVICE_NAME'); // each program names its own service
    }
  });

  it('the chart: otel values become the operator\'s OTEL_* variables; none without an endpoint; a bad protocol is refused', async () => {
    const chart = join(REPO_ROOT, 'charts', 'data-access-operator');
    const traced = await cluster.helm(['template', 'probe', chart, '--set', 'otel.endpoint=http://collector.observability.svc:4318', '--set', 'otel.protocol=http/json', '--set', 'otel.sampler=parentbased_traceidratio', '--set', 'otel.samplerArg=0.25']);
    expect(traced.code, traced.stderr).to.equal(0);
    for (const [name, value] of [['OTEL_EXPORTER_OTLP_ENDPOINT', 'http://collector.observability.svc:4318'], ['OTEL_EXPORTER_OTLP_PROTOCOL', 'http/json'], ['OTEL_TRACES_SAMPLER', 'parentbased_traceidratio'], ['OTEL_TRACES_SAMPLER_ARG', '0.25']]) {
      expect(traced.stdout).to.match(new RegExp(`- name: ${name}\\s+value: "${value.replace(/[./]/g, '\\$&')}"`));
    }
    const untraced = await cluster.helm(['template', 'probe', chart]);
    expect(untraced.stdout).not.to.contain('OTEL_');
    const refused = await cluster.helm(['template', 'probe', chart, '--set', 'otel.endpoint=http://c:4318', '--set', 'otel.protocol=grpc']);
    expect(refused.code).not.to.equal(0);
    expect(refused.stderr).to.contain('/otel/protocol');
  });
});
