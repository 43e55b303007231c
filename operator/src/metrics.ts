/** The operator's Prometheus metrics, in a registry of its own. */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface OperatorMetrics {
  registry: Registry;
  reconciles: Counter<'kind' | 'result'>;
  reconcileErrors: Counter<'kind' | 'reason'>;
  reconcileDuration: Histogram<'kind'>;
  queueDepth: Gauge;
  apiRequests: Counter<'verb' | 'resource'>;
  resyncsCompleted: Counter;
  isLeader: Gauge;
}

export function createMetrics(options: { defaultMetrics?: boolean } = {}): OperatorMetrics {
  const registry = new Registry();
  if (options.defaultMetrics ?? true) {
    collectDefaultMetrics({ register: registry, prefix: 'data_access_operator_' });
    dropNonCounterTotals(registry);
  }
  return {
    registry,
    reconciles: new Counter({
      name: 'data_access_operator_reconciles_total',
      help: 'Reconciles run, by primary kind and result (success, error).',
      labelNames: ['kind', 'result'],
      registers: [registry],
    }),
    reconcileErrors: new Counter({
      name: 'data_access_operator_reconcile_errors_total',
      help: 'Reconciles that failed and were requeued with backoff, by kind and reason (conflict, api, internal).',
      labelNames: ['kind', 'reason'],
      registers: [registry],
    }),
    reconcileDuration: new Histogram({
      name: 'data_access_operator_reconcile_duration_seconds',
      help: 'Time spent in one reconcile, by kind.',
      labelNames: ['kind'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    queueDepth: new Gauge({
      name: 'data_access_operator_workqueue_depth',
      help: 'Keys waiting in the work queue (not counting keys waiting out a backoff).',
      registers: [registry],
    }),
    apiRequests: new Counter({
      name: 'data_access_operator_api_requests_total',
      help: 'Requests sent to the Kubernetes API (watch streams excluded), by HTTP verb and resource.',
      labelNames: ['verb', 'resource'],
      registers: [registry],
    }),
    resyncsCompleted: new Counter({
      name: 'data_access_operator_resyncs_completed_total',
      help: 'Full resyncs (periodic or on SIGHUP) whose every resource has been reconciled.',
      registers: [registry],
    }),
    isLeader: new Gauge({
      name: 'data_access_operator_leader',
      help: '1 while this replica holds the leader lease and reconciles, else 0.',
      registers: [registry],
    }),
  };
}

/**
 * prom-client's default metrics include gauges named `*_total` (`nodejs_active_handles_total`…),
 * which Prometheus reserves for counters (`promtool check metrics` refuses them). Each is the sum of
 * the per-type gauge of the same name without `_total`, which stays.
 */
export function dropNonCounterTotals(registry: Registry): string[] {
  const dropped = registry
    .getMetricsAsArray()
    .filter((metric) => metric.name.endsWith('_total') && (metric as { type?: unknown }).type !== 'counter')
    .map((metric) => metric.name);
  for (const name of dropped) registry.removeSingleMetric(name);
  return dropped;
}

/** The resource (and subresource) a request path addresses: `/api/v1/namespaces/n/configmaps/x` → `configmaps`. */
export function resourceOfPath(path: string): string {
  const parts = path.split('?')[0].split('/').filter(Boolean);
  // /api/v1/... or /apis/group/version/...
  let rest = parts[0] === 'api' ? parts.slice(2) : parts.slice(3);
  if (rest[0] === 'namespaces' && rest.length > 2) rest = rest.slice(2);
  if (rest.length === 0) return 'discovery';
  return rest.length >= 3 ? `${rest[0]}/${rest[2]}` : rest[0];
}
