import { expect } from 'chai';
import { createMetrics, resourceOfPath } from './metrics.js';

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
});
