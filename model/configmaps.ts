/**
 * The ConfigMap conventions the operator renders by and the data plane watches by (docs/architecture.md
 * "Kubernetes names"): shared through model/, so the operator never imports the data plane.
 */

/** Labels of the ConfigMaps the operator renders and the data plane selects. */
export const CONFIGMAP_LABELS = {
  managedBy: 'app.kubernetes.io/managed-by',
  environment: 'dataaccess.dev/environment',
  dataset: 'dataaccess.dev/dataset',
  /** `environment` or `dataset` */
  config: 'dataaccess.dev/config',
} as const;
export const MANAGED_BY = 'data-access-operator';
/** The data key of a dataset ConfigMap (the rendered DatasetConfig as JSON). */
export const DATASET_CONFIG_KEY = 'dataset.json';
/** The data key of an environment ConfigMap (the rendered EnvironmentConfig as JSON). */
export const ENVIRONMENT_CONFIG_KEY = 'environment.json';
/** Set on a dataset ConfigMap just before the finalizer deletes it, when the Dataset's policy is Delete. */
export const PURGE_ANNOTATION = 'dataaccess.dev/purge-data';

export function datasetConfigMapName(environment: string, dataset: string): string {
  return `${environment}-dataset-${dataset}`;
}
export function environmentConfigMapName(environment: string): string {
  return `${environment}-dataplane`;
}
