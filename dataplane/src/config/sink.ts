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

/** Labels and keys of the ConfigMaps the operator renders and the data plane watches. */
export const CONFIGMAP_LABELS = {
  managedBy: 'app.kubernetes.io/managed-by',
  environment: 'dataaccess.dev/environment',
  dataset: 'dataaccess.dev/dataset',
  /** `environment` or `dataset` */
  config: 'dataaccess.dev/config',
} as const;
export const MANAGED_BY = 'data-access-operator';
export const DATASET_CONFIG_KEY = 'dataset.json';
export const ENVIRONMENT_CONFIG_KEY = 'environment.json';

export function datasetConfigMapName(environment: string, dataset: string): string {
  return `${environment}-dataset-${dataset}`;
}
export function environmentConfigMapName(environment: string): string {
  return `${environment}-dataplane`;
}
