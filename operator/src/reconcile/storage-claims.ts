/**
 * Which Dataset holds a storage area when two ask for overlapping ones (model/storage.ts): the
 * operator publishes only the holder's config; the other gets `Degraded` naming the holder, and
 * the config it last published (if any) stays. Pure: the Datasets and their published configs in,
 * the verdict out.
 *
 * The holder is the Dataset whose published ConfigMap already uses the storage (what the data
 * plane serves); between Datasets that publish none of it, the first by name. Every Dataset of the
 * namespace counts, whatever its Environment: two Environments' Datasets may share a database.
 */
import { DATASET_CONFIG_KEY } from '../../../model/configmaps.js';
import { storageOverlap, type StorageClaim } from '../../../model/storage.js';
import type { DatasetSpec } from '../../../model/types.js';

export interface DatasetView {
  name: string;
  spec: DatasetSpec;
  /** The location of the config its ConfigMap holds now, if it published one. */
  published?: DatasetSpec['location'];
}

/** Why `dataset` may not publish its spec's storage, or undefined. `others`: the namespace's other live Datasets with valid specs. */
export function storageConflict(dataset: DatasetView, others: readonly DatasetView[]): { dataset: string; message: string } | undefined {
  const desired: StorageClaim = { id: dataset.name, location: dataset.spec.location };
  const sorted = [...others].filter((o) => o.name !== dataset.name).sort((a, b) => (a.name < b.name ? -1 : 1));
  // 1. Storage another Dataset's published config uses.
  for (const other of sorted) {
    const message = other.published && storageOverlap(desired, { id: other.name, location: other.published });
    if (message) return { dataset: other.name, message };
  }
  // 2. Nobody publishes it: the first by name holds it, unless this one already publishes it.
  const mine = dataset.published && { id: dataset.name, location: dataset.published };
  for (const other of sorted) {
    if (other.name > dataset.name) break;
    const message = storageOverlap(desired, { id: other.name, location: other.spec.location });
    if (message && !(mine && storageOverlap({ id: other.name, location: other.spec.location }, mine))) return { dataset: other.name, message };
  }
  return undefined;
}

/** The location a published dataset ConfigMap holds, if it is readable. */
export function publishedLocation(configMap: { data?: Record<string, string> } | undefined): DatasetSpec['location'] | undefined {
  const text = configMap?.data?.[DATASET_CONFIG_KEY];
  if (!text) return undefined;
  try {
    const location = (JSON.parse(text) as { location?: unknown }).location;
    return typeof location === 'object' && location !== null && typeof (location as { kind?: unknown }).kind === 'string' ? (location as DatasetSpec['location']) : undefined;
  } catch {
    return undefined;
  }
}
