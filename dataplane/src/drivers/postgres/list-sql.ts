/**
 * Pure SQL generation for list pages on PostgreSQL: WHERE from a typed filter, ORDER BY from the
 * sort keys (binary order: COLLATE "C" on text, explicit NULLS FIRST/LAST), keyset pagination
 * after the previous page's last row (no OFFSET), LIMIT. Every value is a bind parameter with an
 * explicit cast; identifiers come from the table layout and are quoted.
 *
 * Index-led pages: when the first sort key has an index (the id, or a `sortable` property:
 * indexes.ts), the rows after the position are split into at most two ranges of that key, the
 * non-null values and the nulls, each one an index range read in index order (a row comparison
 * `(col, id) > ($1, $2)` when the directions agree), so a page reads about as many rows as it
 * returns wherever it starts. Two ranges are two subqueries under UNION ALL, each limited, and the
 * outer ORDER BY … LIMIT sorts at most twice the page. Other sorts read the whole selection.
 *
 * Null semantics (shared with the engine's reference evaluator): a comparison with a null value is
 * false, and `!=`, `not in` and `not` are its negation, so `age != 30` includes records without an
 * age. Each generated predicate is therefore never NULL.
 */
import type { FieldRef, TypedFilter, TypedValue } from '../../../../model/filter.js';
import type { SortKey } from '../../../../model/sort.js';
import { postgresNaming as naming, quoteIdent as q } from '../../engine/sql/naming.js';
import { isIndexed } from './indexes.js';
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
  /** An index is led by it (indexes.ts). */
  indexed: boolean;
  /** The id and version are never null. */
  nullable: boolean;
}

export function columnOf(layout: TableLayout, field: FieldRef): ColumnRef {
  const name = field.system === 'id' ? naming.system.id : field.system === 'version' ? naming.system.version : undefined;
  const dotted = field.path.join('.');
  const column = layout.columns.find((c) => (name ? c.name === name : c.field?.dotted === dotted));
  if (!column) throw new Error(`no column for ${field.dotted} in ${layout.schemaName}`); // typing resolved it against the same schema
  const sql = q(column.name);
  const { sqlType } = column;
  return { sql, ordered: sqlType === 'text' ? `${sql} COLLATE "C"` : sql, sqlType, indexed: isIndexed(column), nullable: !field.system };
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
    return nulls === 'last' && column.nullable ? `(${beyond} OR ${column.sql} IS NULL)` : beyond;
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

/** One index range of a page: its condition (none: all rows) and an ORDER BY equivalent within it that the index serves. */
interface Range {
  condition?: string;
  order: SortKey[];
}

/**
 * The ranges (in sort order, disjoint, together exactly the rows after the position) of a sort
 * whose first key is indexed; undefined when it is not. The index is ascending with nulls last,
 * read backward for a descending key: within a range that holds only values, or only nulls, of
 * the first key, its nulls order is irrelevant and is given as the index has it.
 */
export function indexRanges(layout: TableLayout, sort: SortKey[], after: readonly unknown[] | undefined, params: Params): Range[] | undefined {
  const [lead, ...rest] = sort;
  const column = columnOf(layout, lead.field);
  if (!column.indexed) return undefined;
  const order: SortKey[] = [{ ...lead, nulls: lead.direction === 'asc' ? 'last' : 'first' }, ...rest];
  const nullsFirst = lead.nulls === 'first';
  const inIndexOrder = !column.nullable || lead.nulls === order[0].nulls;
  const isNull = (v: unknown) => v === null || v === undefined;
  const range = (condition?: string): Range => ({ condition, order });
  if (!after) {
    if (inIndexOrder) return [range()];
    const ranges = [range(`${column.sql} IS NOT NULL`), range(`${column.sql} IS NULL`)];
    return nullsFirst ? ranges.reverse() : ranges;
  }
  if (isNull(after[0])) {
    // Only a nullable key has a null position; the rest always ends with the id.
    const nullsLeft = range(`(${column.sql} IS NULL AND ${keysetSql(layout, rest, after.slice(1), params)})`);
    return nullsFirst ? [nullsLeft, range(`${column.sql} IS NOT NULL`)] : [nullsLeft];
  }
  const op = lead.direction === 'asc' ? '>' : '<';
  const restColumns = rest.map((key) => columnOf(layout, key.field));
  let condition: string;
  if (rest.every((key, i) => key.direction === lead.direction && !restColumns[i].nullable)) {
    // The id (and version) are never null, so one row comparison is the exact keyset condition, and an index range.
    const left = [column, ...restColumns].map((c) => c.ordered);
    const right = [column, ...restColumns].map((c, i) => params.add(after[i], c.sqlType));
    condition = left.length === 1 ? `${left[0]} ${op} ${right[0]}` : `(${left.join(', ')}) ${op} (${right.join(', ')})`;
  } else {
    // The index bounds the first key; the exact condition decides the ties of the first key.
    const value = params.add(after[0], column.sqlType);
    const ties = rest.length ? keysetSql(layout, rest, after.slice(1), params) : 'FALSE';
    condition = `(${column.ordered} ${op}= ${value} AND (${column.ordered} ${op} ${value} OR (${column.sql} = ${value} AND ${ties})))`;
  }
  return column.nullable && !nullsFirst ? [range(condition), range(`${column.sql} IS NULL`)] : [range(condition)];
}

/**
 * The page's SELECT: the layout's columns in order (toRecord reads them), filtered, keyset, ordered,
 * limited; for an index-led sort, one limited SELECT per index range (module comment).
 */
export function listSql(layout: TableLayout, query: ListSqlQuery): Statement {
  const params = new Params();
  const filter = query.filter ? whereSql(layout, query.filter, params) : undefined;
  const ranges = indexRanges(layout, query.sort, query.after, params);
  const cols = layout.columns.map((c) => q(c.name)).join(', ');
  const select = (conditions: (string | undefined)[], sort: SortKey[], limit: string) => {
    const present = conditions.filter((c): c is string => c !== undefined);
    const where = present.length ? ` WHERE ${present.join(' AND ')}` : '';
    return `SELECT ${cols} FROM ${layout.table}${where} ORDER BY ${orderBySql(layout, sort)} LIMIT ${limit}`;
  };
  if (!ranges) {
    const keyset = query.after ? keysetSql(layout, query.sort, query.after, params) : undefined;
    return { text: select([filter, keyset], query.sort, params.add(query.limit, 'integer')), values: params.values };
  }
  const limit = params.add(query.limit, 'integer');
  if (ranges.length === 1) return { text: select([filter, ranges[0].condition], ranges[0].order, limit), values: params.values };
  const parts = ranges.map((range) => `(${select([filter, range.condition], range.order, limit)})`);
  return { text: `SELECT ${cols} FROM (${parts.join(' UNION ALL ')}) AS page ORDER BY ${orderBySql(layout, query.sort)} LIMIT ${limit}`, values: params.values };
}

export { Params as ListParams };
