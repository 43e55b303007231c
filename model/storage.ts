/**
 * Datasets' storage boundaries: a dataset may not read or write another dataset's storage, nor a
 * store's own system areas. One rule for the admin API, the data plane's manifest loading and the
 * operator (docs/security.md "Admin API").
 *
 * Each location kind names the areas it owns (model/location-kinds.ts `storage`): a PostgreSQL
 * schema, a warehouse database.schema, the DynamoDB tables under `<tablePrefix><dataset>_`, the
 * files under an Iceberg base location. Names are compared as the store compares them, whatever the
 * connection, account, endpoint or region: the config cannot tell whether two Secrets or two
 * endpoints reach the same store, so two datasets may never share names.
 */
import { LOCATION_KIND_FACTS, type StorageArea } from './location-kinds.js';
import type { LocationSpec } from './types.js';

export type { StorageArea } from './location-kinds.js';

/** A dataset's claim on storage: its id (DynamoDB table names and default schema names derive from it) and location. */
export interface StorageClaim {
  id: string;
  location: LocationSpec;
}

export function storageAreas(claim: StorageClaim): StorageArea[] {
  return LOCATION_KIND_FACTS[claim.location.kind]?.storage(claim.location, claim.id) ?? [];
}

function areasOverlap(a: StorageArea, b: StorageArea): boolean {
  if (a.store !== b.store) return false;
  if (a.name === b.name) return true;
  return (a.prefix && b.name.startsWith(a.name)) || (b.prefix && a.name.startsWith(b.name));
}

const shown = (area: StorageArea) => (area.prefix ? `"${area.name}…"` : `"${area.name}"`);

/** Why `claim` may not use its storage while `other` holds it (naming both), or undefined when they are apart. */
export function storageOverlap(claim: StorageClaim, other: StorageClaim): string | undefined {
  if (claim.id === other.id) return undefined;
  for (const mine of storageAreas(claim)) {
    for (const theirs of storageAreas(other)) {
      if (areasOverlap(mine, theirs)) {
        const same = mine.name === theirs.name ? `is dataset "${other.id}"'s` : `overlaps dataset "${other.id}"'s ${shown(theirs)}`;
        return `its ${mine.store} ${shown(mine)} (spec.location.${mine.field}) ${same}`;
      }
    }
  }
  return undefined;
}

/** The first of `others` (in their order) whose storage `claim` overlaps, with the reason. */
export function firstOverlap(claim: StorageClaim, others: Iterable<StorageClaim>): { dataset: string; message: string } | undefined {
  for (const other of others) {
    const message = storageOverlap(claim, other);
    if (message) return { dataset: other.id, message };
  }
  return undefined;
}

/**
 * The stores' own areas, which no dataset may take: PostgreSQL's catalogs (`pg_*`, which includes
 * pg_catalog, pg_toast and the pg_temp_N schemas), `information_schema`, `public` (every role's
 * default search_path: other applications' and extensions' tables live there) and `das_internal`
 * (the service's raw SQL bookkeeping); the warehouse's INFORMATION_SCHEMA of any database and its
 * shared SNOWFLAKE database.
 */
const RESERVED: Record<StorageArea['store'], (name: string) => string | undefined> = {
  'PostgreSQL schema': (name) => (name.startsWith('pg_') || ['information_schema', 'public', 'das_internal'].includes(name) ? 'databaseSchema' : undefined),
  'warehouse schema': (name) => (name.startsWith('SNOWFLAKE.') ? 'database' : name.endsWith('.INFORMATION_SCHEMA') ? 'schema' : undefined),
  'DynamoDB tables': () => undefined,
  'Iceberg base location': () => undefined,
};

/** Problems with areas that belong to the store itself (fields relative to `spec.location`). */
export function reservedStorageProblems(claim: StorageClaim): { field: string; message: string }[] {
  return storageAreas(claim).flatMap((area) => {
    const field = RESERVED[area.store](area.name);
    return field ? [{ field, message: `${area.store} ${shown(area)} belongs to the store itself and cannot hold a dataset` }] : [];
  });
}
