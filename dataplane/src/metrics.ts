/**
 * The data plane's Prometheus metrics on GET /metrics, beside the subscriptions' (graphql/metrics.ts):
 * requests by dataset, gateway, method and status with their latency, and bulk loads' rows and
 * outcomes. Label values come only from bounded sets: a dataset this replica serves (else `-`, so
 * a client cannot grow the series with made-up names), the gateway, the method, the status code.
 */
import { Counter, Gauge, Histogram, Registry, type MetricType, type MetricObjectWithValues, type MetricValueWithName } from 'prom-client';

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
  // prom-client validates and hashes the labels on every inc/observe, even through a labelled
  // child (about 3% of a read's CPU). Each label set's figures are kept here instead, in a
  // pre-bound entry, and handed to prom-client only when /metrics is scraped.
  const entries = new Map<string, LabelledRequests>();
  const total = new Counter({
    name: 'das_http_requests_total',
    help: 'HTTP requests answered, by dataset, gateway, method and status code',
    labelNames: ['dataset', 'gateway', 'method', 'status'] as const,
    registers: [registry],
    collect() {
      for (const entry of entries.values()) {
        if (entry.uncounted === 0) continue;
        this.inc(entry.counterLabels, entry.uncounted);
        entry.uncounted = 0;
      }
    },
  });
  new PreboundHistogram(LATENCY_BUCKETS, () => entries.values(), {
    name: 'das_http_request_duration_seconds',
    help: 'Time from a request arriving to its response finishing, by dataset, gateway and method',
    labelNames: ['dataset', 'gateway', 'method'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const timings = new Map<string, LatencyFigures>();
  const index = new Map<string, Map<string, Map<string, Map<number, LabelledRequests>>>>();
  return {
    observe({ dataset, gateway, method, status, seconds }) {
      const d = dataset && served(dataset) ? dataset : '-';
      const g = gateway === 'iam' || gateway === 'public' ? gateway : '-';
      const m = method && METHODS.has(method) ? method : 'other';
      // Found through nested maps of the label values: no key string built per request.
      const byStatus = inner(inner(inner(index, d), g), m);
      let entry = byStatus.get(status);
      if (!entry) {
        const key = `${d} ${g} ${m} ${status}`;
        const timingKey = `${d} ${g} ${m}`;
        let timing = timings.get(timingKey);
        if (!timing) timings.set(timingKey, (timing = { labels: { dataset: d, gateway: g, method: m }, buckets: new Array<number>(LATENCY_BUCKETS.length).fill(0), count: 0, sum: 0 }));
        entries.set(key, (entry = { counterLabels: { dataset: d, gateway: g, method: m, status: String(status) }, uncounted: 0, timing }));
        byStatus.set(status, entry);
      }
      entry.uncounted++;
      const t = entry.timing;
      t.count++;
      t.sum += seconds;
      const bucket = bucketOf(seconds);
      if (bucket >= 0) t.buckets[bucket]++;
    },
  };
}

/** The map under `key`, made on first use. */
function inner<K, V>(map: Map<string, Map<K, V>>, key: string): Map<K, V> {
  let found = map.get(key);
  if (!found) map.set(key, (found = new Map()));
  return found;
}

interface LatencyFigures {
  labels: Record<string, string>;
  /** Observations per bucket (not cumulative), by index into LATENCY_BUCKETS. */
  buckets: number[];
  count: number;
  sum: number;
}

interface LabelledRequests {
  counterLabels: Record<string, string>;
  /** Requests not yet handed to the prom-client counter. */
  uncounted: number;
  /** Shared by every status of one dataset, gateway and method. */
  timing: LatencyFigures;
}

function bucketOf(seconds: number): number {
  for (let i = 0; i < LATENCY_BUCKETS.length; i++) if (seconds <= LATENCY_BUCKETS[i]) return i;
  return -1;
}

/** A prom-client Histogram whose figures come from the pre-bound entries above (same exposition). */
class PreboundHistogram extends Histogram<string> {
  constructor(
    private readonly bounds: number[],
    private readonly figures: () => Iterable<{ timing: LatencyFigures }>,
    private readonly config: { name: string; help: string; labelNames: readonly string[]; buckets: number[]; registers: Registry[] },
  ) {
    super(config);
  }

  override async get(): Promise<MetricObjectWithValues<MetricValueWithName<string>>> {
    const seen = new Set<LatencyFigures>();
    const values: MetricValueWithName<string>[] = [];
    const name = this.config.name;
    for (const { timing } of this.figures()) {
      if (seen.has(timing)) continue;
      seen.add(timing);
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += timing.buckets[i];
        values.push({ labels: { le, ...timing.labels }, value: cumulative, metricName: `${name}_bucket` });
      });
      values.push({ labels: { le: '+Inf', ...timing.labels }, value: timing.count, metricName: `${name}_bucket` });
      values.push({ labels: { ...timing.labels }, value: timing.sum, metricName: `${name}_sum` });
      values.push({ labels: { ...timing.labels }, value: timing.count, metricName: `${name}_count` });
    }
    return { name, help: this.config.help, type: 'histogram' as unknown as MetricType, values, aggregator: 'sum' } as MetricObjectWithValues<MetricValueWithName<string>>;
  }

  /** The registry's text exposition asks for this one when it exists. */
  async getForPromString(): Promise<MetricObjectWithValues<MetricValueWithName<string>>> {
    return this.get();
  }
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
