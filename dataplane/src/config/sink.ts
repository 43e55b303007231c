import type { DatasetConfig, EnvironmentConfig } from '../../../model/types.js';

/**
 * Where config sources (manifest files locally, ConfigMap watches in the cluster) deliver the
 * rendered configs. The data plane's ConfigStore implements it.
 */
export interface ConfigSink {
  setEnvironment(config: EnvironmentConfig): void;
  upsertDataset(config: DatasetConfig): void;
  removeDataset(id: string): void;
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
