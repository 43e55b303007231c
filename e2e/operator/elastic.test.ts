/**
 * Elastic workloads and monitoring end to end, against a real etcd + kube-apiserver 1.20 +
 * kube-controller-manager (its HPA controller and garbage collector run): the chart's RBAC, the
 * operator as a local process with the chart's ServiceAccount. The 1.20 API server serves
 * autoscaling/v2beta2 and policy/v1beta1 only, so those are what the operator must discover and use.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { startKubeCluster, type KubeCluster } from '../peers/kube/cluster.js';
import {
  CHART,
  apply,
  condition,
  createNamespace,
  getObject,
  httpGet,
  kubectl,
  resyncAndCountWrites,
  startChartOperator,
  waitFor,
  waitForCondition,
  type OperatorProcess,
} from './harness.js';
import { promtool } from './promtool.js';

const RELEASE_NAMESPACE = 'dao-system';
const MONITORING_CRDS = join(import.meta.dirname, 'fixtures', 'monitoring-crds.yaml');
const HPA = 'horizontalpodautoscalers.v2beta2.autoscaling';
const PDB = 'poddisruptionbudgets.v1beta1.policy';
const MONITORING_VALUES = ['--set', 'monitoring.podMonitor.enabled=true', '--set', 'monitoring.prometheusRule.enabled=true', '--set', 'monitoring.grafanaDashboard.enabled=true'];

function environment(name: string, spec: object): string {
  return JSON.stringify({ apiVersion: 'dataaccess.dev/v1alpha1', kind: 'Environment', metadata: { name }, spec: { type: 'internal', ...spec } });
}

describe('operator e2e: autoscaling, disruption budgets, spread, PodMonitors (kube-apiserver 1.20)', function () {
  this.timeout(180_000);
  let cluster: KubeCluster;
  let operator: OperatorProcess;

  before(async () => {
    cluster = await startKubeCluster({ controllerManager: true });
    operator = await startChartOperator(cluster, 'dao', `elastic-${process.pid}`);
  });

  after(async () => {
    await operator?.stop();
    await cluster?.stop();
  });

  const get = (ns: string, resource: string, name: string) => getObject(cluster, ns, resource, name);
  const patchEnv = (ns: string, name: string, patch: object[]) => kubectl(cluster, ['-n', ns, 'patch', 'environment', name, '--type', 'json', '-p', JSON.stringify(patch)]);

  it('renders the HPA (v2beta2), PDBs (v1beta1), spread and grace period; a replica count set by someone else survives resyncs while autoscaling is on, and is restored when it is removed', async () => {
    const ns = await createNamespace(cluster, 'elastic');
    await apply(
      cluster,
      ns,
      environment('shop', {
        dataplane: {
          replicas: 3,
          resources: { requests: { cpu: '0.5', memory: '1024Mi', 'ephemeral-storage': '1000Ki' }, limits: { cpu: '1.5', memory: '1.5Gi', 'ephemeral-storage': '2048Ki' } },
          autoscaling: { minReplicas: 2, maxReplicas: 6 },
        },
        functionGateway: { replicas: 2, resources: { requests: { cpu: '2000m', memory: '1e8' }, limits: { memory: '1000M' } } },
      }),
    );
    await waitForCondition(cluster, ns, 'environment', 'shop', 'Reconciled', 'True');

    const hpa = await waitFor('the HPA', () => get(ns, HPA, 'shop-dataplane'));
    expect(hpa.apiVersion).to.equal('autoscaling/v2beta2');
    expect(hpa.spec).to.deep.include({ minReplicas: 2, maxReplicas: 6, scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'shop-dataplane' } });
    expect(hpa.spec.metrics).to.deep.equal([{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } } }]);
    expect(hpa.metadata.ownerReferences[0]).to.include({ kind: 'Environment', name: 'shop', controller: true });
    expect(await get(ns, HPA, 'service-shop-function-service-gateway')).to.equal(undefined);

    for (const name of ['shop-dataplane', 'service-shop-function-service-gateway']) {
      const pdb = await get(ns, PDB, name);
      expect(pdb?.apiVersion, name).to.equal('policy/v1beta1');
      expect(pdb.spec.maxUnavailable).to.equal(1);
      const deployment = await get(ns, 'deployment', name);
      expect(pdb.spec.selector).to.deep.equal(deployment.spec.selector);
      const pod = deployment.spec.template.spec;
      expect(pod.terminationGracePeriodSeconds).to.equal(35);
      expect(pod.topologySpreadConstraints.map((c: { topologyKey: string; whenUnsatisfiable: string }) => `${c.topologyKey} ${c.whenUnsatisfiable}`)).to.deep.equal([
        'kubernetes.io/hostname ScheduleAnyway',
        'topology.kubernetes.io/zone ScheduleAnyway',
      ]);
      const env = Object.fromEntries(pod.containers[0].env.map((e: { name: string; value: string }) => [e.name, e.value]));
      expect(env).to.include({ DAS_SHUTDOWN_DELAY_MS: '5000', SHUTDOWN_TIMEOUT_MS: '25000' });
      expect(pod.containers[0].readinessProbe.httpGet.path).to.equal('/readyz');
    }
    // The quantities as the API server stores them: what the operator renders, so nothing to rewrite.
    const dataplane = await get(ns, 'deployment', 'shop-dataplane');
    expect(dataplane.spec.template.spec.containers[0].resources).to.deep.equal({
      requests: { cpu: '500m', memory: '1Gi', 'ephemeral-storage': '1000Ki' },
      limits: { cpu: '1500m', memory: '1536Mi', 'ephemeral-storage': '2Mi' },
    });
    const gateway = await get(ns, 'deployment', 'service-shop-function-service-gateway');
    expect(gateway.spec.template.spec.containers[0].resources).to.deep.equal({ requests: { cpu: '2', memory: '100e6' }, limits: { memory: '1G' } });

    // Created with the spec's 3 (within the autoscaler's [2, 6]), not Kubernetes' default of 1.
    expect(dataplane.spec.replicas).to.equal(3);
    // What the HPA does: the scale subresource. Inside [min, max] and without metrics the HPA controller leaves it.
    await kubectl(cluster, ['-n', ns, 'scale', 'deployment', 'shop-dataplane', '--replicas=5']);
    // The Deployment's change wakes the Environment, whose status then reports the new count.
    await waitFor('status.replicas 5', async () => (await get(ns, 'environment', 'shop')).status?.replicas === 5);
    const resync = await resyncAndCountWrites(operator);
    expect(resync.reconciles).to.be.greaterThan(0);
    expect(resync.writes, 'a resync writes nothing (no replicas reset, no quantity rewritten)').to.equal(0);
    expect((await get(ns, 'deployment', 'shop-dataplane')).spec.replicas).to.equal(5);

    // Autoscaling removed: the spec's count comes back, the HPA goes; 3 replicas keep the PDB.
    await patchEnv(ns, 'shop', [{ op: 'remove', path: '/spec/dataplane/autoscaling' }]);
    await waitFor('spec.dataplane.replicas restored', async () => (await get(ns, 'deployment', 'shop-dataplane')).spec.replicas === 3);
    await waitFor('the HPA deleted', async () => (await get(ns, HPA, 'shop-dataplane')) === undefined);
    expect(await get(ns, PDB, 'shop-dataplane')).to.not.equal(undefined);

    // One replica: a budget would block node drains, so there is none.
    await patchEnv(ns, 'shop', [{ op: 'replace', path: '/spec/dataplane/replicas', value: 1 }]);
    await waitFor('the PDB deleted', async () => (await get(ns, PDB, 'shop-dataplane')) === undefined);
    expect(await get(ns, PDB, 'service-shop-function-service-gateway')).to.not.equal(undefined);
  });

  it('validation: the API server refuses what the CRD can say; the operator reports minReplicas above maxReplicas (Degraded, nothing applied)', async () => {
    const ns = await createNamespace(cluster, 'invalid');
    const refused = await cluster.kubectl(['-n', ns, 'apply', '-f', '-'], { input: environment('bad', { dataplane: { autoscaling: { maxReplicas: 3, targetCPUUtilizationPercentage: 150 } } }) });
    expect(refused.code).to.not.equal(0);
    expect(refused.stderr).to.contain('targetCPUUtilizationPercentage');
    await apply(cluster, ns, environment('inverted', { dataplane: { autoscaling: { minReplicas: 4, maxReplicas: 2 } } }));
    const env = await waitForCondition(cluster, ns, 'environment', 'inverted', 'Degraded', 'True', 'InvalidSpec');
    expect(condition(env, 'Degraded')!.message).to.contain('minReplicas (4) must not exceed maxReplicas (2)');
    expect(await get(ns, 'deployment', 'inverted-dataplane')).to.equal(undefined);
    expect(await get(ns, HPA, 'inverted-dataplane')).to.equal(undefined);
  });

  it('PodMonitors appear once their CRD is applied, without restarting the operator; opting out deletes them; deleting the Environment collects everything', async () => {
    const ns = await createNamespace(cluster, 'monitored');
    await apply(cluster, ns, environment('watched', { dataplane: { autoscaling: { minReplicas: 2, maxReplicas: 4 } } }));
    await waitForCondition(cluster, ns, 'environment', 'watched', 'Reconciled', 'True');
    const pid = operator.child.pid;

    await kubectl(cluster, ['apply', '-f', MONITORING_CRDS]);
    for (const name of ['watched-dataplane', 'service-watched-function-service-gateway']) {
      const monitor = await waitFor(`PodMonitor ${name}`, () => get(ns, 'podmonitors.monitoring.coreos.com', name));
      const deployment = await get(ns, 'deployment', name);
      expect(monitor.spec).to.deep.equal({ selector: deployment.spec.selector, podMetricsEndpoints: [{ port: 'http', path: '/metrics' }] });
      expect(monitor.metadata.ownerReferences[0]).to.include({ kind: 'Environment', name: 'watched', controller: true });
    }
    expect(operator.child.pid).to.equal(pid);
    expect(operator.child.exitCode).to.equal(null);

    await patchEnv(ns, 'watched', [{ op: 'add', path: '/spec/monitoring/podMonitor', value: false }]);
    await waitFor('PodMonitors deleted after the opt-out', async () => !(await get(ns, 'podmonitors.monitoring.coreos.com', 'watched-dataplane')));

    await kubectl(cluster, ['-n', ns, 'delete', 'environment', 'watched']);
    for (const resource of [HPA, PDB, 'deployment']) {
      await waitFor(`${resource} watched-dataplane garbage-collected`, async () => (await get(ns, resource, 'watched-dataplane')) === undefined);
    }
  });

  it('the chart\'s monitoring values render what the API server accepts; the alert rules pass promtool check rules; the operator\'s /metrics passes promtool check metrics', async () => {
    await kubectl(cluster, ['apply', '-f', MONITORING_CRDS]);
    const rendered = await cluster.helm(['template', 'probe', CHART, '--namespace', RELEASE_NAMESPACE, ...MONITORING_VALUES]);
    expect(rendered.code, rendered.stderr).to.equal(0);
    const dryRun = await cluster.kubectl(['apply', '--dry-run=server', '-f', '-'], { input: rendered.stdout });
    expect(dryRun.code, dryRun.stderr).to.equal(0);
    expect(dryRun.stdout).to.match(/podmonitor.monitoring.coreos.com\/probe-data-access-operator created/);
    expect(dryRun.stdout).to.match(/prometheusrule.monitoring.coreos.com\/probe-data-access-operator created/);
    expect(dryRun.stdout).to.match(/configmap\/probe-data-access-operator-dashboard created/);

    const docs = parseAllDocuments(rendered.stdout).map((d) => d.toJS()).filter(Boolean);
    const rule = docs.find((d) => d.kind === 'PrometheusRule');
    const { stringify } = await import('yaml');
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const rulesFile = join(mkdtempSync(join(tmpdir(), 'rules-')), 'rules.yaml');
    writeFileSync(rulesFile, stringify(rule.spec));
    const rules = await promtool(['check', 'rules', rulesFile]);
    expect(rules.code, rules.output).to.equal(0);
    expect(rules.output).to.contain('SUCCESS: 6 rules found');
    // promtool test rules: a dataset answering 503 for its store fires DataAccessStoreUnavailable;
    // a paused one (das_dataset_paused 1) answers 503 on purpose and does not.
    const unavailable = rule.spec.groups.flatMap((g: { rules: Record<string, unknown>[] }) => g.rules).find((r: { alert?: string }) => r.alert === 'DataAccessStoreUnavailable');
    const expand = (text: string) => text.replace(/\{\{ \$labels\.dataset \}\}/g, 'down').replace(/\{\{ \$labels\.namespace \}\}/g, 'ns');
    const series = (dataset: string) => `das_http_requests_total{namespace="ns",pod="p",dataset="${dataset}",gateway="iam",method="GET",status="503"}`;
    const unitFile = join(rulesFile, '..', 'unit.yaml');
    writeFileSync(
      unitFile,
      stringify({
        rule_files: ['rules.yaml'],
        evaluation_interval: '1m',
        tests: [
          {
            interval: '1m',
            input_series: [
              { series: series('down'), values: '0+60x20' },
              { series: series('paused'), values: '0+60x20' },
              { series: 'das_dataset_paused{namespace="ns",pod="p",dataset="down"}', values: '0x20' },
              { series: 'das_dataset_paused{namespace="ns",pod="p",dataset="paused"}', values: '1x20' },
            ],
            alert_rule_test: [
              {
                eval_time: '15m',
                alertname: 'DataAccessStoreUnavailable',
                exp_alerts: [{ exp_labels: { severity: 'critical', namespace: 'ns', dataset: 'down' }, exp_annotations: { summary: expand(unavailable.annotations.summary), description: unavailable.annotations.description } }],
              },
            ],
          },
        ],
      }),
    );
    const unit = await promtool(['test', 'rules', unitFile]);
    expect(unit.code, unit.output).to.equal(0);

    const dashboard = docs.find((d) => d.kind === 'ConfigMap' && d.metadata.name === 'probe-data-access-operator-dashboard');
    expect(dashboard.metadata.labels).to.include({ grafana_dashboard: '1' });
    expect(JSON.parse(dashboard.data['data-access.json']).panels.length).to.be.greaterThan(5);

    const metrics = await httpGet(operator.metricsPort, '/metrics');
    expect(metrics.body).to.contain('data_access_operator_reconciles_total');
    const checked = await promtool(['check', 'metrics'], metrics.body);
    expect(checked.code, checked.output).to.equal(0);
    expect(checked.output).to.equal('');
  });

  it('every metric the alerts and the dashboard query is one the data plane or the operator exports', () => {
    const sources = ['dataplane/src/metrics.ts', 'dataplane/src/graphql/metrics.ts', 'operator/src/metrics.ts'].map((f) => readFileSync(join(CHART, '..', '..', f), 'utf8')).join('\n');
    const exported = new Set([...sources.matchAll(/name: '((?:das|data_access_operator)_[a-z_]+)'/g)].map((m) => m[1]));
    const queries = readFileSync(join(CHART, 'templates', 'monitoring.yaml'), 'utf8') + readFileSync(join(CHART, 'dashboards', 'data-access.json'), 'utf8');
    const used = new Set([...queries.matchAll(/\b((?:das|data_access_operator)_[a-z_]+)/g)].map((m) => m[1].replace(/_bucket$/, '')));
    expect(used.size).to.be.greaterThan(8);
    for (const name of used) expect(exported, name).to.include(name);
  });
});
