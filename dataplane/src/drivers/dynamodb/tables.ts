/**
 * Table layout on DynamoDB (docs/dynamodb.md): two tables per record schema.
 *
 *   records  `<tablePrefix><dataset>_<schema>`          key id (S)               the live version
 *   history  `<tablePrefix><dataset>_<schema>-history`  key id (S), version (N)  every version and tombstone
 *
 * Dataset names are DNS names (no `_`) and schema names have no `-`, so the first `_` and a
 * trailing `-history` keep every dataset's and schema's tables apart. A table per schema keeps a
 * list's Scan to that schema's live records (no other schema's or old versions' items read) and
 * gives each schema its own secondary indexes; the history table serves `read` with a version.
 */
import { createHash } from 'node:crypto';
import type { DatasetConfig } from '../../../../model/types.js';

const MAX_TABLE_NAME = 255;

export interface SchemaTables {
  records: string;
  history: string;
}

/** DynamoDB table names: [A-Za-z0-9_.-]{3,255}; a longer name keeps its start and a hash of the whole. */
function fit(name: string): string {
  const clean = name.replace(/[^A-Za-z0-9_.-]/g, '-');
  if (clean.length <= MAX_TABLE_NAME) return clean;
  const hash = createHash('sha256').update(clean).digest('hex').slice(0, 16);
  return `${clean.slice(0, MAX_TABLE_NAME - 17)}.${hash}`;
}

export function schemaTables(dataset: DatasetConfig, schema: string): SchemaTables {
  const base = `${dataset.location.tablePrefix ?? ''}${dataset.id}_${schema}`;
  return { records: fit(base), history: fit(`${base}-history`) };
}

/**
 * The ownership marker's table, `<tablePrefix><dataset>_das-owner` (a `-` no schema name has): two
 * datasets whose prefix and id spell the same table names (prefix `a-` with id `b-c`, prefix `a-b-`
 * with id `c`) find the same marker, so a retained dataset's tables are never claimed unnoticed.
 */
export function ownerTable(dataset: DatasetConfig): string {
  return fit(`${dataset.location.tablePrefix ?? ''}${dataset.id}_das-owner`);
}

/** Attribute names of the items (data lives under `d`, so no property can collide with them). */
export const A = { id: 'id', version: 'version', data: 'd', createdAt: 'createdAt', updatedAt: 'updatedAt', deletedAt: 'deletedAt' } as const;
