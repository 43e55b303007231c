/**
 * The btree indexes that let list pages (list-sql.ts) read only the rows they return, so a page
 * costs the same from the first to the last: one on the id in binary order (the default sort, and
 * the primary key's collation may not be "C"), and one per `sortable` property on (column, id).
 * Text columns are indexed COLLATE "C", as list-sql.ts orders them, or the planner could not use
 * them. Names are deterministic, so `CREATE INDEX IF NOT EXISTS` is additive and repeatable.
 */
import { createHash } from 'node:crypto';
import { postgresNaming as naming, quoteIdent as q } from '../../engine/sql/naming.js';
import type { Column, TableLayout } from './sql.js';

export interface SortIndex {
  /** Unquoted; unique within the dataset's database schema. */
  name: string;
  sql: string;
}

const MAX_IDENTIFIER = 63; // PostgreSQL truncates longer names, which could make two indexes collide

/** `<table>_<column>_sort`, or a prefix and a digest of it when that is longer than 63 bytes. */
export function sortIndexName(tableName: string, column: string): string {
  const name = `${tableName}_${column}_sort`;
  if (name.length <= MAX_IDENTIFIER) return name;
  return `${name.slice(0, 50)}_${createHash('sha256').update(name).digest('hex').slice(0, 12)}`;
}

const ordered = (column: Column) => (column.sqlType === 'text' ? `${q(column.name)} COLLATE "C"` : q(column.name));

/** The indexes a table's lists need: the id's, then one per sortable property, in layout order. */
export function sortIndexes(layout: TableLayout): SortIndex[] {
  const id = layout.columns.find((c) => c.name === naming.system.id)!;
  const index = (columns: Column[]): SortIndex => {
    const name = sortIndexName(layout.tableName, columns[0].name);
    return { name, sql: `CREATE INDEX IF NOT EXISTS ${q(name)} ON ${layout.table} (${columns.map(ordered).join(', ')})` };
  };
  return [index([id]), ...layout.columns.filter((c) => c.field?.sortable).map((c) => index([c, id]))];
}

/** Whether list-sql.ts may count on an index led by this column. */
export const isIndexed = (column: Column): boolean => column.name === naming.system.id || column.field?.sortable === true;
