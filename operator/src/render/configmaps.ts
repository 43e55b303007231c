/**
 * The ConfigMaps the data plane watches: `E-dataplane` (environment.json) owned by the Environment,
 * and `E-dataset-D` (dataset.json) owned by the Dataset.
 */
import type { V1ConfigMap } from '@kubernetes/client-node';
import { renderDatasetConfig, renderEnvironmentConfig } from '../../../model/render.js';
import type { DatasetResource, EnvironmentResource } from '../../../model/types.js';
import { DATASET_CONFIG_KEY, ENVIRONMENT_CONFIG_KEY } from '../../../model/configmaps.js';
import { LABELS, environmentLabels, objectNames } from '../names.js';
import { canonicalJson } from './canonical-json.js';
import { ownedMetadata, type OwnerRef } from './meta.js';
import type { Rendered } from './types.js';

type ConfigMapObject = Rendered<V1ConfigMap>;

export function renderEnvironmentConfigMap(env: EnvironmentResource, owner: OwnerRef, namespace: string): ConfigMapObject {
  const name = env.metadata.name;
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: ownedMetadata(objectNames.environmentConfigMap(name), namespace, owner, {
      ...environmentLabels(name),
      [LABELS.config]: 'environment',
    }),
    data: { [ENVIRONMENT_CONFIG_KEY]: canonicalJson(renderEnvironmentConfig({ ...env, metadata: { ...env.metadata, namespace } })) },
  };
}

export function renderDatasetConfigMap(dataset: DatasetResource, owner: OwnerRef, namespace: string): ConfigMapObject {
  const env = dataset.spec.environment;
  const name = dataset.metadata.name;
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: ownedMetadata(objectNames.datasetConfigMap(env, name), namespace, owner, {
      ...environmentLabels(env),
      [LABELS.config]: 'dataset',
      [LABELS.dataset]: name,
    }),
    data: { [DATASET_CONFIG_KEY]: canonicalJson(renderDatasetConfig(dataset)) },
  };
}
