/**
 * The data plane's current configs. Sources (files, ConfigMap watches) push into it; the engine
 * reads from it. Each dataset is prepared (DDL) before it is served; a refused change keeps the
 * previous config serving and is reported.
 */
import { EventEmitter } from 'node:events';
import type { DatasetConfig, EnvironmentConfig } from '../../../model/types.js';
import type { ConfigSink } from './sink.js';

export type DatasetState =
  | { status: 'ready'; config: DatasetConfig; warning?: string }
  | { status: 'pending'; config: DatasetConfig }
  | { status: 'failed'; config: DatasetConfig; problem: string };

export interface DatasetPreparer {
  /** Returns undefined when the config can be served, or the reason it cannot. */
  prepare(config: DatasetConfig, previous?: DatasetConfig): Promise<string | undefined>;
  /** Drops a deleted dataset's stored data (`deletionPolicy: Delete`). */
  purge?(config: DatasetConfig): Promise<void>;
}

export class ConfigStore extends EventEmitter implements ConfigSink {
  private env: EnvironmentConfig | undefined;
  private readonly datasets = new Map<string, DatasetState>();
  /** One preparation chain per dataset, so updates apply in arrival order. */
  private readonly chains = new Map<string, Promise<void>>();

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
    const previous = this.datasets.get(config.id);
    if (!previous) this.datasets.set(config.id, { status: 'pending', config });
    const chain = (this.chains.get(config.id) ?? Promise.resolve()).then(async () => {
      const current = this.datasets.get(config.id);
      const served = current?.status === 'ready' ? current.config : undefined;
      let problem: string | undefined;
      try {
        problem = await this.preparer.prepare(config, served);
      } catch (err) {
        problem = `storage could not be prepared: ${(err as Error).message}`;
      }
      if (!this.datasets.has(config.id) && previous) return; // removed meanwhile
      if (!problem) this.datasets.set(config.id, { status: 'ready', config });
      else if (served) this.datasets.set(config.id, { status: 'ready', config: served, warning: `generation ${config.generation} refused: ${problem}` });
      else this.datasets.set(config.id, { status: 'failed', config, problem });
      this.emit('dataset', config.id, this.datasets.get(config.id));
    });
    this.chains.set(config.id, chain);
  }

  removeDataset(id: string): void {
    this.datasets.delete(id);
    // The preparation chain stays: a purge waits for it, and a re-created dataset continues it.
    this.emit('dataset', id, undefined);
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
