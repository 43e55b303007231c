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
  /** Where the kind keeps a dataset's data, as names the store compares (model/storage.ts keeps datasets apart by them). */
  storage(location: LocationSpec, datasetId: string): StorageArea[];
}

/**
 * A part of a store that one dataset owns: a PostgreSQL schema, a warehouse schema, the DynamoDB
 * tables under a name prefix, the files under an Iceberg base location. Areas of different
 * `store`s never overlap; of one store, equal names do, and with `prefix` so does every name
 * that starts with the other.
 */
export interface StorageArea {
  store: 'PostgreSQL schema' | 'warehouse schema' | 'DynamoDB tables' | 'Iceberg base location';
  /** Normalised as the store compares names (PostgreSQL: lower case; the warehouse folds to upper case). */
  name: string;
  prefix: boolean;
  /** The `spec.location` field(s) it comes from, for messages. */
  field: string;
}

/** The database schema of a dataset that names none: its id with `-` as `_` (the SQL dialects use it, in their case). */
export const defaultDatabaseSchema = (datasetId: string): string => datasetId.replace(/-/g, '_');

/** A relative path without empty, `.` and `..` segments: `a//b/./c/../d` and `a/b/d` name the same files. */
function normalPath(path: string): string {
  const segments: string[] = [];
  for (const segment of path.split('/')) {
    if (segment === '..') segments.pop();
    else if (segment !== '' && segment !== '.') segments.push(segment);
  }
  return segments.join('/');
}

/** Connections, accounts and regions are not compared: two Secrets or endpoints may reach the same store. */
const sqlSchemaArea = (location: LocationSpec, datasetId: string): StorageArea => ({
  store: 'PostgreSQL schema',
  name: (location.databaseSchema ?? defaultDatabaseSchema(datasetId)).toLowerCase(),
  prefix: false,
  field: 'databaseSchema',
});
const warehouseArea = (location: LocationSpec, datasetId: string): StorageArea => ({
  store: 'warehouse schema',
  name: `${location.database ?? ''}.${location.schema ?? defaultDatabaseSchema(datasetId)}`.toUpperCase(),
  prefix: false,
  field: 'database/schema',
});

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
    storage: (location, id) => [sqlSchemaArea(location, id)],
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
    storage: (location, id) => [warehouseArea(location, id)],
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
    // Table files go to <baseLocation>/<table> on the volume: two datasets under one path would share them.
    storage: (location, id) => [
      warehouseArea(location, id),
      {
        store: 'Iceberg base location',
        name: `${(location.externalVolume ?? '').toUpperCase()}:${normalPath(location.baseLocation ?? '')}/`,
        prefix: true,
        field: 'externalVolume/baseLocation',
      },
    ],
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
    // Tables are `<tablePrefix><dataset>_<schema>` (and `…_das-transactions`): the dataset owns every name under `<tablePrefix><dataset>_`.
    storage: (location, id) => [{ store: 'DynamoDB tables', name: `${location.tablePrefix ?? ''}${id}_`, prefix: true, field: 'tablePrefix' }],
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
