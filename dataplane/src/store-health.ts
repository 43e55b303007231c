/**
 * Whether each served dataset's store answers, for /readyz. A probe runs at most once per
 * `ttlMs` per dataset and is bounded by `timeoutMs`, so a readiness probe never waits long
 * and never floods the store.
 */
import type { DatasetConfig } from '../../model/types.js';
import type { ConfigStore } from './config/store.js';
import type { LocationDriver } from './engine/contract.js';

export interface StoreHealthOptions {
  ttlMs?: number;
  timeoutMs?: number;
}

export class StoreHealth {
  private readonly cache = new Map<string, { at: number; problem?: string; probe?: Promise<string | undefined> }>();
  private readonly ttlMs: number;
  private readonly timeoutMs: number;

  constructor(
    private readonly store: ConfigStore,
    private readonly driverFor: (dataset: DatasetConfig) => LocationDriver,
    options: StoreHealthOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 2000;
    this.timeoutMs = options.timeoutMs ?? 1500;
  }

  /** Datasets whose store did not answer, with why. */
  async unavailable(): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    const checks = this.store.datasetIds().map(async (id) => {
      const state = this.store.dataset(id);
      if (state?.status !== 'ready') return;
      const problem = await this.check(state.config);
      if (problem) out[id] = problem;
    });
    await Promise.all(checks);
    return out;
  }

  private check(dataset: DatasetConfig): Promise<string | undefined> {
    const now = Date.now();
    const cached = this.cache.get(dataset.id);
    if (cached?.probe) return cached.probe;
    if (cached && now - cached.at < this.ttlMs) return Promise.resolve(cached.problem);
    const probe = this.probe(dataset).then((problem) => {
      this.cache.set(dataset.id, { at: Date.now(), problem });
      return problem;
    });
    this.cache.set(dataset.id, { at: now, problem: cached?.problem, probe });
    return probe;
  }

  private async probe(dataset: DatasetConfig): Promise<string | undefined> {
    let driver: LocationDriver;
    try {
      driver = this.driverFor(dataset);
    } catch {
      return undefined; // no driver: reported as the dataset's own failure, not the store's
    }
    if (!driver.ping) return undefined;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve(`no answer within ${this.timeoutMs} ms`), this.timeoutMs);
    });
    try {
      return await Promise.race([
        driver.ping(dataset).then(
          () => undefined,
          (err: unknown) => (err instanceof Error ? err.message : String(err)),
        ),
        timeout,
      ]);
    } finally {
      clearTimeout(timer);
    }
  }
}
