/**
 * What each location kind is, in one table: the facts the operator, the CRD, validation and the
 * data plane need before (or without) a driver. What a running driver can do at run time (item
 * limits, sortable properties, change feeds) it declares itself as capabilities; these are the
 * kind's fixed rules, so that no code elsewhere tests kind names.
 */
import { CONSISTENCY_LEVELS, type Consistency, type LocationKind } from './types.js';

export interface LocationKindFacts {
  /** What `kubectl explain` and errors call it. */
  title: string;
  /** Writes that name no consistency get this (the spec's table). */
  defaultConsistency: Consistency;
  /** Levels a write may ask for; anything else is a 400 naming why. */
  consistency: readonly Consistency[];
  /** Why a level is missing from `consistency` (shown in the 400). */
  consistencyNote?: string;
  /** Physical identifiers: PostgreSQL folds to lower case, the warehouse to upper case. */
  identifierCase: 'lower' | 'upper' | 'preserve';
  /** A SQL engine behind it: the raw SQL endpoint and SQL-based query schemas. */
  sql: boolean;
  /** Pages come back in id order when no sort is given (the spec: not on the warehouse). */
  orderedWithoutSort: boolean;
}

const ALL = CONSISTENCY_LEVELS;

export const LOCATION_KIND_FACTS: Readonly<Record<LocationKind, LocationKindFacts>> = {
  postgres: { title: 'PostgreSQL', defaultConsistency: 'ATOMIC', consistency: ALL, identifierCase: 'lower', sql: true, orderedWithoutSort: true },
  snowflake: { title: 'Snowflake warehouse', defaultConsistency: 'ATOMIC', consistency: ALL, identifierCase: 'upper', sql: true, orderedWithoutSort: false },
  iceberg: {
    title: 'Iceberg tables on the warehouse',
    defaultConsistency: 'ATOMIC',
    consistency: ALL.filter((level) => level !== 'ATOMIC_ALL'),
    consistencyNote: 'atomicity on an open-table (Iceberg) location is per table: use ATOMIC',
    identifierCase: 'upper',
    sql: true,
    orderedWithoutSort: false,
  },
  dynamodb: { title: 'DynamoDB', defaultConsistency: 'QUORUM', consistency: ALL, identifierCase: 'preserve', sql: false, orderedWithoutSort: false },
};

export const kindFacts = (kind: LocationKind): LocationKindFacts => LOCATION_KIND_FACTS[kind];

/** Undefined when the kind accepts the level; otherwise why not, for a 400 or a validation problem. */
export function refusedConsistency(kind: LocationKind, level: Consistency): string | undefined {
  const facts = LOCATION_KIND_FACTS[kind];
  if (facts.consistency.includes(level)) return undefined;
  return `${level} is not available on ${kind} locations (${facts.title})${facts.consistencyNote ? `; ${facts.consistencyNote}` : ''}`;
}
