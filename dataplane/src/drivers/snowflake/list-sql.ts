/**
 * Pure SQL of list pages on the warehouse: WHERE from a typed filter, ORDER BY from the sort keys
 * with explicit NULLS FIRST/LAST, keyset pagination after the previous page's last row (never
 * OFFSET), LIMIT. As on PostgreSQL (drivers/postgres/list-sql.ts), with the warehouse's spelling:
 * `?` binds each cast to the column type, `IN (…)` lists instead of array binds, and no COLLATE —
 * Snowflake compares text without a collation in binary (UTF-8) order, the order the spec asks.
 * The warehouse has no indexes, so a page is one SELECT. Its sort always ends with the id
 * (model/sort.ts), so paging never skips or repeats a record, sorted or not.
 *
 * Null semantics (shared with the engine's reference evaluator): a comparison with a null value is
 * false, `!=`, `not in` and `not` its negation; every predicate generated is true or false.
 */
import type { FieldRef, TypedFilter, TypedValue } from '../../../../model/filter.js';
import type { SortKey } from '../../../../model/sort.js';
import { quoteIdent as q, warehouseNaming as naming } from '../../engine/sql/naming.js';
import type { Statement, WarehouseLayout } from './layout.js';

export interface ListSqlQuery {
  filter?: TypedFilter;
  sort: SortKey[];
  limit: number;
  after?: readonly unknown[];
}

class Binds {
  readonly values: unknown[] = [];
  add(value: unknown, sqlType: string): string {
    this.values.push(value);
    return `?::${sqlType}`;
  }
}

interface ColumnRef {
  sql: string;
  sqlType: string;
  nullable: boolean;
}

function columnOf(layout: WarehouseLayout, field: FieldRef): ColumnRef {
  const name = field.system === 'id' ? naming.system.id : field.system === 'version' ? naming.system.version : undefined;
  const column = layout.columns.find((c) => (name ? c.name === name : c.field?.dotted === field.path.join('.')));
  if (!column) throw new Error(`no column for ${field.dotted} in ${layout.schemaName}`); // typing resolved it against the same schema
  return { sql: q(column.name), sqlType: column.sqlType, nullable: !field.system };
}

const SQL_OPS = { '==': '=', '!=': '<>', '<': '<', '<=': '<=', '>': '>', '>=': '>=' } as const;

function bound(value: TypedValue): unknown {
  if ('arg' in value) throw new Error(`placeholder \${${value.arg}} was not bound`); // query schemas bind before SQL is built
  return value.value;
}

export function whereSql(layout: WarehouseLayout, filter: TypedFilter, binds: Binds): string {
  switch (filter.kind) {
    case 'and':
    case 'or':
      return `(${filter.items.map((item) => whereSql(layout, item, binds)).join(filter.kind === 'and' ? ' AND ' : ' OR ')})`;
    case 'not':
      return `(NOT ${whereSql(layout, filter.item, binds)})`;
    case 'null': {
      const column = columnOf(layout, filter.field);
      return `(${column.sql} IS ${filter.negated ? 'NOT ' : ''}NULL)`;
    }
    case 'compare': {
      const column = columnOf(layout, filter.field);
      const value = binds.add(bound(filter.value), column.sqlType);
      if (filter.op === '!=') return `(${column.sql} IS NULL OR ${column.sql} <> ${value})`;
      return `(${column.sql} IS NOT NULL AND ${column.sql} ${SQL_OPS[filter.op]} ${value})`;
    }
    case 'in': {
      const column = columnOf(layout, filter.field);
      if (!filter.values.length) return filter.negated ? 'TRUE' : 'FALSE';
      const list = filter.values.map((v) => binds.add(bound(v), column.sqlType)).join(', ');
      const inList = `(${column.sql} IS NOT NULL AND ${column.sql} IN (${list}))`;
      return filter.negated ? `(NOT ${inList})` : inList;
    }
  }
}

/**
 * Rows after the keyset position: for some key i, every earlier key equal to the position's value
 * and key i past it in its own direction and nulls order (null positions become IS [NOT] NULL).
 */
export function keysetSql(layout: WarehouseLayout, sort: SortKey[], after: readonly unknown[], binds: Binds): string {
  if (after.length !== sort.length) throw new Error(`keyset position has ${after.length} values for ${sort.length} sort keys`);
  const columns = sort.map((key) => columnOf(layout, key.field));
  const isNull = (v: unknown) => v === null || v === undefined;
  const equal = (i: number) => (isNull(after[i]) ? `${columns[i].sql} IS NULL` : `${columns[i].sql} = ${binds.add(after[i], columns[i].sqlType)}`);
  const past = (i: number): string | undefined => {
    const { direction, nulls } = sort[i];
    const column = columns[i];
    if (isNull(after[i])) return nulls === 'first' ? `${column.sql} IS NOT NULL` : undefined;
    const beyond = `${column.sql} ${direction === 'asc' ? '>' : '<'} ${binds.add(after[i], column.sqlType)}`;
    return nulls === 'last' && column.nullable ? `(${beyond} OR ${column.sql} IS NULL)` : beyond;
  };
  const branches: string[] = [];
  for (let i = 0; i < sort.length; i++) {
    // Nothing sorts past a null that sorts last on this key.
    if (isNull(after[i]) && sort[i].nulls !== 'first') continue;
    // Positional binds: added in the order they appear in the text (prefix, then the step).
    const prefix = Array.from({ length: i }, (_, j) => equal(j));
    const step = past(i)!;
    branches.push(prefix.length ? `(${[...prefix, step].join(' AND ')})` : step);
  }
  return branches.length ? `(${branches.join(' OR ')})` : 'FALSE';
}

export function orderBySql(layout: WarehouseLayout, sort: SortKey[]): string {
  return sort.map((key) => `${columnOf(layout, key.field).sql} ${key.direction.toUpperCase()} NULLS ${key.nulls.toUpperCase()}`).join(', ');
}

export function listSql(layout: WarehouseLayout, query: ListSqlQuery): Statement {
  // Inlined, not bound: a validated count (the engine's limit + 1).
  if (!Number.isSafeInteger(query.limit) || query.limit < 1) throw new Error(`list limit must be a positive integer, got ${query.limit}`);
  const binds = new Binds();
  const conditions = [query.filter ? whereSql(layout, query.filter, binds) : undefined, query.after ? keysetSql(layout, query.sort, query.after, binds) : undefined].filter(
    (c): c is string => c !== undefined,
  );
  const where = conditions.length ? ` WHERE ${conditions.join(' AND ')}` : '';
  return { text: `SELECT ${layout.columnList} FROM ${layout.table}${where} ORDER BY ${orderBySql(layout, query.sort)} LIMIT ${query.limit}`, binds: binds.values };
}
