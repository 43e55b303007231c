/** Consistency levels: which one a request runs at, and what a location accepts. */
import { CONSISTENCY_LEVELS, type Consistency, type DatasetConfig } from '../../../model/types.js';
import { refusedConsistency } from '../../../model/location-kinds.js';
import { badRequest } from './errors.js';

/** Strongest first, as CONSISTENCY_LEVELS lists them. */
const strength = (level: Consistency) => CONSISTENCY_LEVELS.length - CONSISTENCY_LEVELS.indexOf(level);

/**
 * A request commits at the weakest level its actions ask for, each action defaulting to its
 * location's default. A level the location kind does not offer is a 400 (model/location-kinds.ts).
 */
export function effectiveConsistency(dataset: DatasetConfig, requested: { level?: Consistency; path: string }[]): Consistency {
  let weakest: Consistency | undefined;
  for (const { level, path } of requested) {
    const refused = level && refusedConsistency(dataset.location.kind, level);
    if (refused) throw badRequest('CONSISTENCY_NOT_SUPPORTED', refused, [{ path, message: `${level} rejected` }]);
    const effective = level ?? dataset.location.defaultConsistency;
    if (!weakest || strength(effective) < strength(weakest)) weakest = effective;
  }
  return weakest ?? dataset.location.defaultConsistency;
}

export const isAtomic = (level: Consistency) => level === 'ATOMIC' || level === 'ATOMIC_ALL';
