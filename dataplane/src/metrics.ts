/**
 * The data plane's Prometheus metrics on GET /metrics, beside the subscriptions' (graphql/metrics.ts):
 * requests by dataset, gateway, method and status with their latency, and bulk loads' rows and
 * outcomes. Label values come only from bounded sets: a dataset this replica serves (else `-`, so
 * a client cannot grow the series with made-up names), the gateway, the method, the status code.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
/** Seconds: from well under a millisecond (a cached read) to a slow query. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export interface RequestSample {
  /** The dataset the path or host named, if any (kept only when `served` says this replica serves it). */
  dataset?: string;
  gateway?: string;
  method?: string;
  status: number;
  seconds: number;
}

export interface RequestMetrics {
  observe(sample: RequestSample): void;
}

/** `served`: whether a dataset id is one this replica serves (a label value); anything else counts as `-`. */
export function requestMetrics(registry: Registry, served: (dataset: string) => boolean): RequestMetrics {
  const labelNames = ['dataset', 'gateway', 'method', 'status'] as const;
  const total = new Counter({ name: 'das_http_requests_total', help: 'HTTP requests answered, by dataset, gateway, method and status code', labelNames, registers: [registry] });
  const latency = new Histogram({
    name: 'das_http_request_duration_seconds',
    help: 'Time from a request arriving to its response finishing, by dataset, gateway and method',
    labelNames: ['dataset', 'gateway', 'method'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  // The labelled children, kept per label set: the hot path then skips prom-client's label hashing.
  const children = new Map<string, { count: { inc(): void }; time: { observe(v: number): void } }>();
  return {
    observe({ dataset, gateway, method, status, seconds }) {
      const d = dataset && served(dataset) ? dataset : '-';
      const g = gateway === 'iam' || gateway === 'public' ? gateway : '-';
      const m = method && METHODS.has(method) ? method : 'other';
      const key = `${d} ${g} ${m} ${status}`;
      let child = children.get(key);
      if (!child) {
        child = { count: total.labels({ dataset: d, gateway: g, method: m, status: String(status) }), time: latency.labels({ dataset: d, gateway: g, method: m }) };
        children.set(key, child);
      }
      child.count.inc();
      child.time.observe(seconds);
    },
  };
}

/**
 * `das_dataset_paused{dataset}`: 1 while a dataset this replica serves is paused (its requests
 * answer 503 DATASET_PAUSED on purpose), 0 otherwise; the store-unavailable alert leaves those out.
 */
export function datasetMetrics(registry: Registry, datasets: () => Iterable<{ id: string; paused: boolean }>): void {
  new Gauge({
    name: 'das_dataset_paused',
    help: 'Whether a dataset this replica serves is paused (1) or not (0)',
    labelNames: ['dataset'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const { id, paused } of datasets()) this.set({ dataset: id }, paused ? 1 : 0);
    },
  });
}

export interface BulkLoadMetrics {
  /** What one committed chunk added: rows read, written and refused. */
  chunk(dataset: string, rows: { read: number; written: number; rejected: number }): void;
  finished(dataset: string, status: 'SUCCEEDED' | 'FAILED'): void;
}

/** `running`: the loads this replica runs now. */
export function bulkLoadMetrics(registry: Registry, running: () => number): BulkLoadMetrics {
  const rows = new Counter({ name: 'das_bulk_load_rows_total', help: 'Rows of bulk loads (transactions) committed by this replica, by dataset and outcome (read, written, rejected)', labelNames: ['dataset', 'outcome'] as const, registers: [registry] });
  const transactions = new Counter({ name: 'das_bulk_load_transactions_total', help: 'Bulk loads this replica finished, by dataset and status', labelNames: ['dataset', 'status'] as const, registers: [registry] });
  new Gauge({
    name: 'das_bulk_load_running',
    help: 'Bulk loads this replica runs now',
    registers: [registry],
    collect() {
      this.set(running());
    },
  });
  return {
    chunk(dataset, { read, written, rejected }) {
      if (read) rows.inc({ dataset, outcome: 'read' }, read);
      if (written) rows.inc({ dataset, outcome: 'written' }, written);
      if (rejected) rows.inc({ dataset, outcome: 'rejected' }, rejected);
    },
    finished(dataset, status) {
      transactions.inc({ dataset, status });
    },
  };
}
