/**
 * The data plane's current configs. Sources (files, ConfigMap watches) push into it; the engine
 * reads from it. Each dataset is prepared (DDL) before it is served; a refused change keeps the
 * previous config serving and is reported.
 */
import { EventEmitter } from 'node:events';
import type { DatasetConfig, EnvironmentConfig } from '../../../model/types.js';
import { firstOverlap } from '../../../model/storage.js';
import type { ConfigSink } from './sink.js';

export type DatasetState =
  | { status: 'ready'; config: DatasetConfig; warning?: string }
  | { status: 'pending'; config: DatasetConfig; problem?: string }
  | { status: 'failed'; config: DatasetConfig; problem: string };

export interface DatasetPreparer {
  /** Returns undefined when the config can be served, or the reason it cannot. */
  prepare(config: DatasetConfig, previous?: DatasetConfig): Promise<string | undefined>;
  /** Drops a deleted dataset's stored data (`deletionPolicy: Delete`). */
  purge?(config: DatasetConfig): Promise<void>;
  /** A failure worth retrying (the store is unreachable): the preparation runs again later. */
  retryable?(err: unknown): boolean;
}

const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 15_000;

export class ConfigStore extends EventEmitter implements ConfigSink {
  private env: EnvironmentConfig | undefined;
  private readonly datasets = new Map<string, DatasetState>();
  /** One preparation chain per dataset, so updates apply in arrival order. */
  private readonly chains = new Map<string, Promise<void>>();
  /** The newest config received per dataset, and its pending retry after an unreachable store. */
  private readonly latest = new Map<string, DatasetConfig>();
  private readonly retries = new Map<string, { timer: NodeJS.Timeout; delay: number }>();
  /** Datasets whose newest config was refused because its storage overlaps another's (model/storage.ts); tried again when that one goes or moves. */
  private readonly overlapping = new Set<string>();
  /** The refused configs themselves: they hold no storage. */
  private readonly refusedConfigs = new WeakSet<DatasetConfig>();

  constructor(private readonly preparer: DatasetPreparer) {
    super();
  }

  get environment(): EnvironmentConfig | undefined {
    return this.env;
  }

  setEnvironment(config: EnvironmentConfig): void {
    this.env = config;
    this.emit('environment', config);
  }

  dataset(id: string): DatasetState | undefined {
    return this.datasets.get(id);
  }

  datasetIds(): string[] {
    return [...this.datasets.keys()];
  }

  upsertDataset(config: DatasetConfig): void {
    const moved = this.latest.get(config.id);
    if (this.refuseOverlap(config)) return;
    this.overlapping.delete(config.id);
    const held = this.datasets.get(config.id);
    const previous = held && !this.refusedConfigs.has(held.config) ? held : undefined;
    this.refusedConfigs.delete(config); // a refused config tried again (reconsiderOverlapping) now holds its storage
    if (!previous) this.datasets.set(config.id, { status: 'pending', config });
    this.latest.set(config.id, config);
    // A dataset that moved its storage before it was served frees the old one at once (served ones: below).
    if (moved && JSON.stringify(moved.location) !== JSON.stringify(config.location)) queueMicrotask(() => this.reconsiderOverlapping());
    const chain = (this.chains.get(config.id) ?? Promise.resolve()).then(async () => {
      if (this.latest.get(config.id) !== config) return; // superseded, or removed
      const current = this.datasets.get(config.id);
      const served = current?.status === 'ready' ? current.config : undefined;
      let problem: string | undefined;
      try {
        problem = await this.preparer.prepare(config, served);
      } catch (err) {
        problem = `storage could not be prepared: ${(err as Error).message}`;
        if (this.preparer.retryable?.(err) && this.latest.get(config.id) === config) {
          this.retryLater(config, problem);
          if (!served) this.datasets.set(config.id, { status: 'pending', config, problem });
          this.emit('dataset', config.id, this.datasets.get(config.id));
          return;
        }
      }
      this.clearRetry(config.id);
      if (!this.datasets.has(config.id) && previous) return; // removed meanwhile
      if (!problem) {
        this.datasets.set(config.id, { status: 'ready', config });
        // Serving a new location frees the old one: a dataset refused for it may fit now.
        if (served && JSON.stringify(served.location) !== JSON.stringify(config.location)) queueMicrotask(() => this.reconsiderOverlapping());
      } else if (served) this.datasets.set(config.id, { status: 'ready', config: served, warning: `generation ${config.generation} refused: ${problem}` });
      else this.datasets.set(config.id, { status: 'failed', config, problem });
      this.emit('dataset', config.id, this.datasets.get(config.id));
    });
    this.chains.set(config.id, chain);
  }

  /**
   * The data plane never serves two datasets on one storage area: a config whose storage overlaps
   * a dataset this store already holds (serving, being prepared or waiting for its store) is
   * refused and reported; the one already held keeps it. Sources deliver datasets in name order,
   * so at start the first by name wins. A served dataset whose update would overlap keeps serving
   * its previous config, as with any refused change.
   */
  private refuseOverlap(config: DatasetConfig): boolean {
    const overlap = firstOverlap(config, this.holders(config.id));
    if (!overlap) return false;
    const problem = `storage in use: ${overlap.message}; a dataset's storage may not overlap another's`;
    this.latest.set(config.id, config);
    this.refusedConfigs.add(config);
    this.overlapping.add(config.id);
    this.clearRetry(config.id);
    const current = this.datasets.get(config.id);
    if (current?.status === 'ready' && !this.refusedConfigs.has(current.config)) {
      this.datasets.set(config.id, { status: 'ready', config: current.config, warning: `generation ${config.generation} refused: ${problem}` });
    } else {
      this.datasets.set(config.id, { status: 'failed', config, problem });
    }
    this.emit('dataset', config.id, this.datasets.get(config.id));
    return true;
  }

  /** The configs holding storage, other than `id`'s: served or being prepared, not refused. */
  private holders(id: string): DatasetConfig[] {
    return [...this.datasets.entries()]
      .filter(([other]) => other !== id)
      .flatMap(([other, state]) => [state.config, this.latest.get(other)].filter((c): c is DatasetConfig => c !== undefined && !this.refusedConfigs.has(c)));
  }

  /** Refused datasets, in name order, get another look: one may now fit, the others' reports name the current holder. */
  private reconsiderOverlapping(): void {
    for (const id of [...this.overlapping].sort()) {
      const config = this.latest.get(id);
      if (config && this.overlapping.has(id)) this.upsertDataset(config);
    }
  }

  /** Prepares the config again after a delay that doubles up to MAX_RETRY_MS. */
  private retryLater(config: DatasetConfig, problem: string): void {
    const delay = Math.min((this.retries.get(config.id)?.delay ?? FIRST_RETRY_MS / 2) * 2, MAX_RETRY_MS);
    this.clearRetry(config.id);
    const timer = setTimeout(() => {
      if (this.latest.get(config.id) === config) this.upsertDataset(config);
    }, delay);
    timer.unref();
    this.retries.set(config.id, { timer, delay });
    this.emit('retry', config.id, delay, problem);
  }

  private clearRetry(id: string): void {
    const retry = this.retries.get(id);
    if (retry) clearTimeout(retry.timer);
    this.retries.delete(id);
  }

  /** Stops retrying preparations (shutdown). */
  close(): void {
    for (const id of [...this.retries.keys()]) this.clearRetry(id);
    this.latest.clear();
  }

  removeDataset(id: string): void {
    this.latest.delete(id);
    this.clearRetry(id);
    this.datasets.delete(id);
    this.overlapping.delete(id);
    // The preparation chain stays: a purge waits for it, and a re-created dataset continues it.
    this.emit('dataset', id, undefined);
    this.reconsiderOverlapping();
  }

  /**
   * Called by the ConfigMap source for a deleted dataset whose policy is Delete. Runs after any
   * preparation still under way, so a late CREATE TABLE cannot resurrect what was dropped.
   */
  async purgeDataset(config: DatasetConfig): Promise<void> {
    await this.chains.get(config.id);
    if (this.datasets.has(config.id)) throw new Error(`dataset "${config.id}" is being served again; its data is kept`);
    await this.preparer.purge?.(config);
  }

  /** Resolves once every dataset update received so far has been prepared. */
  async settled(): Promise<void> {
    await Promise.all([...this.chains.values()]);
  }
}
