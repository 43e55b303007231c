import type { DatasetConfig, EnvironmentConfig } from '../../../model/types.js';

/**
 * Where config sources (manifest files locally, ConfigMap watches in the cluster) deliver the
 * rendered configs. The data plane's ConfigStore implements it.
 */
export interface ConfigSink {
  setEnvironment(config: EnvironmentConfig): void;
  upsertDataset(config: DatasetConfig): void;
  removeDataset(id: string): void;
  /** An edit the source refused (an invalid manifest: the file and the problem), or undefined once the files load again. */
  reportSourceProblem?(problem: SourceProblem | undefined): void;
}

export interface SourceProblem {
  file?: string;
  problem: string;
}

/** The ConfigMap conventions are shared with the operator, so they live in model/. */
export {
  CONFIGMAP_LABELS,
  DATASET_CONFIG_KEY,
  ENVIRONMENT_CONFIG_KEY,
  MANAGED_BY,
  datasetConfigMapName,
  environmentConfigMapName,
} from '../../../model/configmaps.js';
