/**
 * Retained storage has an owner: a dataset is not served on storage whose ownership marker names
 * another dataset (one deleted with `deletionPolicy: Retain`, whose data is still there) unless its
 * spec adopts that dataset (`spec.adopt`). Pure; the marker itself is the driver's
 * (LocationDriver.ownership).
 */
import type { DatasetConfig } from '../../../model/types.js';

/** Why `config` may not use storage owned by `owner`; undefined when it may. */
export function ownershipProblem(config: Pick<DatasetConfig, 'id' | 'adopt'>, owner: string | undefined): string | undefined {
  if (owner === undefined || owner === config.id || config.adopt === owner) return undefined;
  const adopting = config.adopt ? ` (spec.adopt names "${config.adopt}", not "${owner}")` : '';
  return `its storage holds the data of dataset "${owner}" (kept when that dataset was deleted with deletionPolicy Retain)${adopting}; set spec.adopt: "${owner}" to take that data over, or choose other storage`;
}
