/**
 * Pure SQL generation for list pages on PostgreSQL: WHERE from a typed filter, ORDER BY from the
 * sort keys (binary order: COLLATE "C" on text, explicit NULLS FIRST/LAST), keyset pagination
 * after the previous page's last row (no OFFSET), LIMIT. Every value is a bind parameter with an
 * explicit cast; identifiers come from the table layout and are quoted.
 *
 * Null semantics (shared with the engine's reference evaluator): a comparison with a null value is
 * false, and `!=`, `not in` and `not` are its negation, so `age != 30` includes records without an
 * age. Each generated predicate is therefore never NULL.
 */
import type { FieldRef, TypedFilter, TypedValue } from '../../../../model/filter.js';
import type { SortKey } from '../../../../model/sort.js';
import { postgresNaming as naming, quoteIdent as q } from '../sql-naming.js';
import type { Statement, TableLayout } from './sql.js';

export interface ListSqlQuery {
  filter?: TypedFilter;
  sort: SortKey[];
  /** Rows to fetch (the engine asks for one more than the page to learn whether another follows). */
  limit: number;
  /** The previous page's last row: its value of each sort key, in order. */
  after?: readonly unknown[];
}

/** Collects bind values; each call returns the placeholder of the value, cast to the column type. */
class Params {
  readonly values: unknown[] = [];
  add(value: unknown, sqlType: string): string {
    this.values.push(value);
    return `$${this.values.length}::${sqlType}`;
  }
}

interface ColumnRef {
  /** Quoted column name. */
  sql: string;
  /** Quoted, with COLLATE "C" for text, for ordering comparisons. */
  ordered: string;
  sqlType: string;
}

export function columnOf(layout: TableLayout, field: FieldRef): ColumnRef {
  let name: string;
  let sqlType: string;
  if (field.system === 'id') [name, sqlType] = [naming.system.id, 'text'];
  else if (field.system === 'version') [name, sqlType] = [naming.system.version, 'integer'];
  else {
    const dotted = field.path.join('.');
    const column = layout.columns.find((c) => c.field?.dotted === dotted);
    if (!column) throw new Error(`no column for ${field.dotted} in ${layout.schemaName}`); // typing resolved it against the same schema
    [name, sqlType] = [column.name, column.sqlType];
  }
  const sql = q(name);
  return { sql, ordered: sqlType === 'text' ? `${sql} COLLATE "C"` : sql, sqlType };
}

const SQL_OPS = { '==': '=', '!=': '<>', '<': '<', '<=': '<=', '>': '>', '>=': '>=' } as const;

function bound(value: TypedValue): unknown {
  if ('arg' in value) throw new Error(`placeholder \${${value.arg}} was not bound`); // query schemas bind before SQL is built
  return value.value;
}

/** A predicate that is true or false, never NULL (see the module comment). */
export function whereSql(layout: TableLayout, filter: TypedFilter, params: Params): string {
  switch (filter.kind) {
    case 'and':
    case 'or':
      return `(${filter.items.map((item) => whereSql(layout, item, params)).join(filter.kind === 'and' ? ' AND ' : ' OR ')})`;
    case 'not':
      return `(NOT ${whereSql(layout, filter.item, params)})`;
    case 'null': {
      const column = columnOf(layout, filter.field);
      return `(${column.sql} IS ${filter.negated ? 'NOT ' : ''}NULL)`;
    }
    case 'compare': {
      const column = columnOf(layout, filter.field);
      const value = params.add(bound(filter.value), column.sqlType);
      if (filter.op === '!=') return `(${column.sql} IS NULL OR ${column.sql} <> ${value})`;
      const left = filter.op === '==' ? column.sql : column.ordered;
      return `(${column.sql} IS NOT NULL AND ${left} ${SQL_OPS[filter.op]} ${value})`;
    }
    case 'in': {
      const column = columnOf(layout, filter.field);
      const list = params.add(filter.values.map(bound), `${column.sqlType}[]`);
      const inList = `(${column.sql} IS NOT NULL AND ${column.sql} = ANY(${list}))`;
      return filter.negated ? `(NOT ${inList})` : inList;
    }
  }
}

/**
 * Rows after the keyset position: for some key i, every earlier key equal to the position's value
 * and key i past it in its own direction and nulls order. Null positions turn the comparisons into
 * IS NULL / IS NOT NULL, so the row-value comparison holds for mixed directions and nulls.
 */
export function keysetSql(layout: TableLayout, sort: SortKey[], after: readonly unknown[], params: Params): string {
  if (after.length !== sort.length) throw new Error(`keyset position has ${after.length} values for ${sort.length} sort keys`);
  const columns = sort.map((key) => columnOf(layout, key.field));
  const isNull = (v: unknown) => v === null || v === undefined;
  const equal = (i: number) => (isNull(after[i]) ? `${columns[i].sql} IS NULL` : `${columns[i].sql} = ${params.add(after[i], columns[i].sqlType)}`);
  /** Key i strictly past the position; undefined when nothing can be (a null that sorts last). */
  const past = (i: number): string | undefined => {
    const { direction, nulls } = sort[i];
    const column = columns[i];
    if (isNull(after[i])) return nulls === 'first' ? `${column.sql} IS NOT NULL` : undefined;
    const beyond = `${column.ordered} ${direction === 'asc' ? '>' : '<'} ${params.add(after[i], column.sqlType)}`;
    // id and version are never null: no branch for the nulls after them.
    return nulls === 'last' && !sort[i].field.system ? `(${beyond} OR ${column.sql} IS NULL)` : beyond;
  };
  const branches: string[] = [];
  for (let i = 0; i < sort.length; i++) {
    const step = past(i);
    if (step === undefined) continue;
    const prefix = Array.from({ length: i }, (_, j) => equal(j));
    branches.push(prefix.length ? `(${[...prefix, step].join(' AND ')})` : step);
  }
  return branches.length ? `(${branches.join(' OR ')})` : 'FALSE';
}

export function orderBySql(layout: TableLayout, sort: SortKey[]): string {
  return sort.map((key) => `${columnOf(layout, key.field).ordered} ${key.direction.toUpperCase()} NULLS ${key.nulls.toUpperCase()}`).join(', ');
}

/** The page's SELECT: the layout's columns in order (toRecord reads them), filtered, keyset, ordered, limited. */
export function listSql(layout: TableLayout, query: ListSqlQuery): Statement {
  const params = new Params();
  const conditions: string[] = [];
  if (query.filter) conditions.push(whereSql(layout, query.filter, params));
  if (query.after) conditions.push(keysetSql(layout, query.sort, query.after, params));
  const cols = layout.columns.map((c) => q(c.name)).join(', ');
  const where = conditions.length ? ` WHERE ${conditions.join(' AND ')}` : '';
  const limit = params.add(query.limit, 'integer');
  return { text: `SELECT ${cols} FROM ${layout.table}${where} ORDER BY ${orderBySql(layout, query.sort)} LIMIT ${limit}`, values: params.values };
}

export { Params as ListParams };
