import { expect } from 'chai';
import { createMetrics, resourceOfPath } from './metrics.js';
import { promtool } from '../../e2e/operator/promtool.js';

describe('operator: metrics', () => {
  it('names the resource of an API request path', () => {
    expect(resourceOfPath('/api/v1/namespaces/ns/configmaps/local-dataplane')).to.equal('configmaps');
    expect(resourceOfPath('/api/v1/namespaces/ns/configmaps')).to.equal('configmaps');
    expect(resourceOfPath('/apis/dataaccess.dev/v1alpha1/namespaces/ns/datasets/demo/status')).to.equal('datasets/status');
    expect(resourceOfPath('/apis/apps/v1/deployments?labelSelector=x')).to.equal('deployments');
    expect(resourceOfPath('/apis/coordination.k8s.io/v1/namespaces/ops/leases/data-access-operator')).to.equal('leases');
    expect(resourceOfPath('/apis/apps/v1')).to.equal('discovery');
  });

  it('exposes reconciles, errors, queue depth, duration and API requests', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    metrics.reconciles.inc({ kind: 'Dataset', result: 'success' });
    metrics.reconcileDuration.observe({ kind: 'Dataset' }, 0.02);
    const text = await metrics.registry.metrics();
    for (const name of [
      'data_access_operator_reconciles_total{kind="Dataset",result="success"} 1',
      'data_access_operator_reconcile_errors_total',
      'data_access_operator_workqueue_depth',
      'data_access_operator_reconcile_duration_seconds_bucket',
      'data_access_operator_api_requests_total',
    ]) {
      expect(text).to.contain(name);
    }
  });

  it('default Node.js metrics without *_total gauges (counters only end in _total): promtool check metrics finds nothing', async () => {
    const text = await createMetrics().registry.metrics();
    const types = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1], m[2]]));
    expect(types.get('data_access_operator_nodejs_active_handles')).to.equal('gauge');
    expect(types.get('data_access_operator_process_cpu_seconds_total')).to.equal('counter');
    for (const [name, type] of types) if (name.endsWith('_total')) expect(type, name).to.equal('counter');
    const checked = await promtool(['check', 'metrics'], text);
    expect(checked.code, checked.output).to.equal(0);
    expect(checked.output).to.equal('');
  });
});
