/**
 * List pages on PostgreSQL: the shared list SQL (drivers/sql/list-sql.ts: WHERE, keyset, ORDER BY
 * in binary order with COLLATE "C" on text) with numbered binds, and LIMIT.
 *
 * Index-led pages: when the first sort key has an index (the id, or a `sortable` property:
 * indexes.ts), the rows after the position are split into at most two ranges of that key, the
 * non-null values and the nulls, each one an index range read in index order (a row comparison
 * `(col, id) > ($1, $2)` when the directions agree), so a page reads about as many rows as it
 * returns wherever it starts. Two ranges are two subqueries under UNION ALL, each limited, and the
 * outer ORDER BY … LIMIT sorts at most twice the page. Other sorts read the whole selection.
 */
import type { SortKey } from '../../../../model/sort.js';
import { quoteIdent as q } from '../../engine/sql/naming.js';
import { Binds, ListSql, type ListSqlQuery } from '../sql/list-sql.js';
import { postgresSqlDialect } from './dialect.js';
import { isIndexed } from './indexes.js';
import type { Statement, TableLayout } from './sql.js';

export type { ListSqlQuery };

export function orderBySql(layout: TableLayout, sort: SortKey[]): string {
  return new ListSql(postgresSqlDialect, layout).orderBy(sort);
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
export function indexRanges(list: ListSql, sort: SortKey[], after: readonly unknown[] | undefined, params: Binds): Range[] | undefined {
  const [lead, ...rest] = sort;
  const column = list.column(lead.field);
  if (!isIndexed(column.column)) return undefined;
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
    const nullsLeft = range(`(${column.sql} IS NULL AND ${list.keyset(rest, after.slice(1), params)})`);
    return nullsFirst ? [nullsLeft, range(`${column.sql} IS NOT NULL`)] : [nullsLeft];
  }
  const op = lead.direction === 'asc' ? '>' : '<';
  const restColumns = rest.map((key) => list.column(key.field));
  let condition: string;
  if (rest.every((key, i) => key.direction === lead.direction && !restColumns[i].nullable)) {
    // The id (and version) are never null, so one row comparison is the exact keyset condition, and an index range.
    const left = [column, ...restColumns].map((c) => c.ordered);
    const right = [column, ...restColumns].map((c, i) => params.add(after[i], c.sqlType));
    condition = left.length === 1 ? `${left[0]} ${op} ${right[0]}` : `(${left.join(', ')}) ${op} (${right.join(', ')})`;
  } else {
    // The index bounds the first key; the exact condition decides the ties of the first key.
    const value = params.add(after[0], column.sqlType);
    const ties = rest.length ? list.keyset(rest, after.slice(1), params) : 'FALSE';
    condition = `(${column.ordered} ${op}= ${value} AND (${column.ordered} ${op} ${value} OR (${column.sql} = ${value} AND ${ties})))`;
  }
  return column.nullable && !nullsFirst ? [range(condition), range(`${column.sql} IS NULL`)] : [range(condition)];
}

/**
 * The page's SELECT: the layout's columns in order (toRecord reads them), filtered, keyset, ordered,
 * limited; for an index-led sort, one limited SELECT per index range (module comment).
 */
export function listSql(layout: TableLayout, query: ListSqlQuery): Statement {
  const list = new ListSql(postgresSqlDialect, layout);
  const params = list.binds();
  const filter = query.filter ? list.where(query.filter, params) : undefined;
  const ranges = indexRanges(list, query.sort, query.after, params);
  const cols = layout.columns.map((c) => q(c.name)).join(', ');
  const select = (conditions: (string | undefined)[], sort: SortKey[], limit: string) => {
    const present = conditions.filter((c): c is string => c !== undefined);
    const where = present.length ? ` WHERE ${present.join(' AND ')}` : '';
    return `SELECT ${cols} FROM ${layout.table}${where} ORDER BY ${list.orderBy(sort)} LIMIT ${limit}`;
  };
  if (!ranges) {
    const keyset = query.after ? list.keyset(query.sort, query.after, params) : undefined;
    return { text: select([filter, keyset], query.sort, params.add(query.limit, 'integer')), values: params.values };
  }
  const limit = params.add(query.limit, 'integer');
  if (ranges.length === 1) return { text: select([filter, ranges[0].condition], ranges[0].order, limit), values: params.values };
  const parts = ranges.map((range) => `(${select([filter, range.condition], range.order, limit)})`);
  return { text: `SELECT ${cols} FROM (${parts.join(' UNION ALL ')}) AS page ORDER BY ${list.orderBy(query.sort)} LIMIT ${limit}`, values: params.values };
}

