/** A config sink that records what a config source delivered (the ConfigMap source's tests, unit and against the API server). */
import type { PurgingConfigSink } from '../src/config/kube-source.js';
import type { SourceProblem } from '../src/config/sink.js';
import type { DatasetConfig, EnvironmentConfig } from '../../model/types.js';

export class RecordingSink implements PurgingConfigSink {
  readonly calls: string[] = [];
  environment?: EnvironmentConfig;
  readonly datasets = new Map<string, DatasetConfig>();
  readonly purged: string[] = [];
  /** What /readyz would report as the source's problem (a refused ConfigMap). */
  problem?: SourceProblem;

  reportSourceProblem(problem: SourceProblem | undefined): void {
    this.problem = problem;
  }
  setEnvironment(config: EnvironmentConfig): void {
    this.calls.push(`environment ${config.id}`);
    this.environment = config;
  }
  upsertDataset(config: DatasetConfig): void {
    this.calls.push(`upsert ${config.id} g${config.generation}`);
    this.datasets.set(config.id, config);
  }
  removeDataset(id: string): void {
    this.calls.push(`remove ${id}`);
    this.datasets.delete(id);
  }
  purgeDataset(config: DatasetConfig): void {
    this.purged.push(config.id);
  }
}
