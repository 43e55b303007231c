/**
 * List pages on the warehouse: the shared list SQL (drivers/sql/list-sql.ts) with the warehouse's
 * spelling — `?` binds each cast to the column type, `IN (…)` lists instead of array binds, and no
 * COLLATE (Snowflake compares text without a collation in binary, UTF-8, order, the order the spec
 * asks). The warehouse has no indexes, so a page is one SELECT. Its sort always ends with the id
 * (model/sort.ts), so paging never skips or repeats a record, sorted or not.
 */
import { ListSql, type ListSqlQuery } from '../sql/list-sql.js';
import { warehouseSqlDialect } from './dialect.js';
import type { Statement, WarehouseLayout } from './layout.js';

export type { ListSqlQuery };

export function listSql(layout: WarehouseLayout, query: ListSqlQuery): Statement {
  // Inlined, not bound: a validated count (the engine's limit + 1).
  if (!Number.isSafeInteger(query.limit) || query.limit < 1) throw new Error(`list limit must be a positive integer, got ${query.limit}`);
  const list = new ListSql(warehouseSqlDialect(layout.format), layout);
  const binds = list.binds();
  const conditions = [query.filter ? list.where(query.filter, binds) : undefined, query.after ? list.keyset(query.sort, query.after, binds) : undefined].filter(
    (c): c is string => c !== undefined,
  );
  const where = conditions.length ? ` WHERE ${conditions.join(' AND ')}` : '';
  return { text: `SELECT ${layout.columnList} FROM ${layout.table}${where} ORDER BY ${list.orderBy(query.sort)} LIMIT ${query.limit}`, binds: binds.values };
}
