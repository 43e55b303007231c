/** Consistency levels: which one a request runs at, and what a location accepts. */
import { CONSISTENCY_LEVELS, type Consistency, type DatasetConfig } from '../../../model/types.js';
import { badRequest } from './errors.js';

/** Strongest first, as CONSISTENCY_LEVELS lists them. */
const strength = (level: Consistency) => CONSISTENCY_LEVELS.length - CONSISTENCY_LEVELS.indexOf(level);

/**
 * A request commits at the weakest level its actions ask for, each action defaulting to its
 * location's default. Open-table locations reject ATOMIC_ALL (atomicity is per table there).
 */
export function effectiveConsistency(dataset: DatasetConfig, requested: { level?: Consistency; path: string }[]): Consistency {
  let weakest: Consistency | undefined;
  for (const { level, path } of requested) {
    if (level === 'ATOMIC_ALL' && dataset.location.kind === 'iceberg') {
      throw badRequest('CONSISTENCY_NOT_SUPPORTED', 'ATOMIC_ALL is not available on an open-table (Iceberg) location; atomicity there is per table (use ATOMIC)', [
        { path, message: 'ATOMIC_ALL rejected' },
      ]);
    }
    const effective = level ?? dataset.location.defaultConsistency;
    if (!weakest || strength(effective) < strength(weakest)) weakest = effective;
  }
  return weakest ?? dataset.location.defaultConsistency;
}

export const isAtomic = (level: Consistency) => level === 'ATOMIC' || level === 'ATOMIC_ALL';
