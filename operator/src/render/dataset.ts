/** What a Dataset owns: its ConfigMap in its Environment's config set. */
import type { DatasetResource } from '../../../model/types.js';
import { renderDatasetConfigMap } from './configmaps.js';
import type { OwnerRef } from './meta.js';
import type { DesiredObject } from './types.js';

export function datasetOwner(dataset: DatasetResource): OwnerRef {
  if (!dataset.metadata.uid) throw new Error(`Dataset ${dataset.metadata.name} has no uid (not read from the API server?)`);
  return { apiVersion: dataset.apiVersion, kind: 'Dataset', name: dataset.metadata.name, uid: dataset.metadata.uid };
}

export function renderDatasetObjects(dataset: DatasetResource): DesiredObject[] {
  return [renderDatasetConfigMap(dataset, datasetOwner(dataset), dataset.metadata.namespace ?? 'default')];
}
