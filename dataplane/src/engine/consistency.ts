/** Consistency levels: which one a request runs at, and what a location accepts. */
import { CONSISTENCY_LEVELS, type Consistency, type DatasetConfig } from '../../../model/types.js';
import { refusedConsistency } from '../../../model/location-kinds.js';
import type { LocationDriver } from './contract.js';
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

/**
 * What the dataset's driver declares it can do: the level itself (ASYNC is written at QUORUM
 * later), and the most actions one atomic write may hold — refused before anything is written.
 */
export function checkAgainstDriver(driver: LocationDriver, level: Consistency, actions: number, path: string): void {
  const { consistency, maxAtomicActions } = driver.capabilities;
  const written = level === 'ASYNC' ? 'QUORUM' : level;
  if (!consistency.includes(written)) {
    throw badRequest('CONSISTENCY_NOT_SUPPORTED', `${level} is not available on ${driver.kind} locations; available: ${consistency.join(', ')}`, [{ path, message: `${level} rejected` }]);
  }
  if (isAtomic(level) && maxAtomicActions !== undefined && actions > maxAtomicActions) {
    throw badRequest('TOO_MANY_ACTIONS', `an ${level} write on ${driver.kind} holds at most ${maxAtomicActions} actions; this one has ${actions} (split it, or use QUORUM or EVENTUAL)`, [
      { path, message: `more than ${maxAtomicActions} actions` },
    ]);
  }
}
