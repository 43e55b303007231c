/**
 * What each location kind is, in one table: the facts the operator, the CRD, validation and the
 * data plane need before (or without) a driver. What a running driver can do at run time (item
 * limits, sortable properties, change feeds) it declares itself as capabilities; these are the
 * kind's fixed rules, so that no code elsewhere tests kind names.
 */
import { CONSISTENCY_LEVELS, type Consistency, type LocationKind, type LocationSpec } from './types.js';

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
  /** The `spec.location` fields the kind reads besides `kind` and `defaultConsistency`; any other is refused (a typo or a field of another kind). */
  fields: readonly LocationField[];
  /** Fields it cannot work without; `a|b` means at least one of them. */
  required: readonly string[];
}

export type LocationField = Exclude<keyof LocationSpec, 'kind' | 'defaultConsistency'>;

const WAREHOUSE_FIELDS: readonly LocationField[] = ['connectionSecretRef', 'account', 'accessUrl', 'database', 'schema', 'warehouse', 'role', 'readOnlyRole'];
const WAREHOUSE_REQUIRED = ['account|accessUrl', 'database', 'warehouse', 'connectionSecretRef'];

const ALL = CONSISTENCY_LEVELS;

export const LOCATION_KIND_FACTS: Readonly<Record<LocationKind, LocationKindFacts>> = {
  postgres: {
    title: 'PostgreSQL',
    defaultConsistency: 'ATOMIC',
    consistency: ALL,
    identifierCase: 'lower',
    sql: true,
    orderedWithoutSort: true,
    fields: ['connectionSecretRef', 'databaseSchema'],
    required: [],
  },
  snowflake: {
    title: 'Snowflake warehouse',
    defaultConsistency: 'ATOMIC',
    consistency: ALL,
    identifierCase: 'upper',
    sql: true,
    orderedWithoutSort: false,
    fields: WAREHOUSE_FIELDS,
    required: WAREHOUSE_REQUIRED,
  },
  iceberg: {
    title: 'Iceberg tables on the warehouse',
    defaultConsistency: 'ATOMIC',
    consistency: ALL.filter((level) => level !== 'ATOMIC_ALL'),
    consistencyNote: 'atomicity on an open-table (Iceberg) location is per table: use ATOMIC',
    identifierCase: 'upper',
    sql: true,
    orderedWithoutSort: false,
    fields: [...WAREHOUSE_FIELDS, 'externalVolume', 'baseLocation', 'catalog'],
    required: [...WAREHOUSE_REQUIRED, 'externalVolume', 'baseLocation'],
  },
  dynamodb: {
    title: 'DynamoDB',
    defaultConsistency: 'QUORUM',
    consistency: ALL,
    identifierCase: 'preserve',
    sql: false,
    orderedWithoutSort: false,
    fields: ['region', 'endpoint', 'tablePrefix', 'credentialsSecretRef'],
    required: [],
  },
};

export const kindFacts = (kind: LocationKind): LocationKindFacts => LOCATION_KIND_FACTS[kind];

/** Undefined when the kind accepts the level; otherwise why not, for a 400 or a validation problem. */
export function refusedConsistency(kind: LocationKind, level: Consistency): string | undefined {
  const facts = LOCATION_KIND_FACTS[kind];
  if (facts.consistency.includes(level)) return undefined;
  return `${level} is not available on ${kind} locations (${facts.title})${facts.consistencyNote ? `; ${facts.consistencyNote}` : ''}`;
}

/** Problems with the fields a location names for its kind: fields of another kind, required ones missing (paths relative to `spec.location`). */
export function locationFieldProblems(location: LocationSpec): { field: string; message: string }[] {
  const facts = LOCATION_KIND_FACTS[location.kind];
  if (!facts) return [];
  const problems: { field: string; message: string }[] = [];
  for (const field of Object.keys(location)) {
    if (field === 'kind' || field === 'defaultConsistency') continue;
    if (!(facts.fields as readonly string[]).includes(field)) {
      const owners = (Object.keys(LOCATION_KIND_FACTS) as LocationKind[]).filter((k) => (LOCATION_KIND_FACTS[k].fields as readonly string[]).includes(field));
      problems.push({ field, message: `is not a setting of ${location.kind} locations${owners.length ? ` (it belongs to ${owners.join(', ')})` : ''}` });
    }
  }
  for (const need of facts.required) {
    const options = need.split('|');
    if (options.some((f) => (location as unknown as Record<string, unknown>)[f] !== undefined)) continue;
    problems.push({ field: options[0], message: options.length > 1 ? `${location.kind} locations need ${options.map((o) => `"${o}"`).join(' or ')}` : `${location.kind} locations need "${need}"` });
  }
  return problems;
}
