/**
 * The list-page SQL every SQL store shares: WHERE from a typed filter, ORDER BY from the sort keys
 * with explicit NULLS FIRST/LAST, keyset pagination after the previous page's last row (never
 * OFFSET). What differs between stores comes from their dialect (engine/sql/dialect.ts): the bind
 * placeholder and its cast (`$1::text` or `?::VARCHAR`), how text is ordered (PostgreSQL: COLLATE
 * "C", binary order; the warehouse compares text in binary order without one) and `IN` lists (one
 * array bind, or a placeholder per value). Binds are added in the order they appear in the text,
 * so positional `?` binds line up. Every value is a bind with an explicit cast; identifiers come
 * from the table shape and are quoted. Each driver builds its SELECT from these
 * (drivers/postgres/list-sql.ts adds index ranges; drivers/snowflake/list-sql.ts is one SELECT).
 *
 * Null semantics (shared with the engine's reference evaluator): a comparison with a null value is
 * false, and `!=`, `not in` and `not` are its negation, so `age != 30` includes records without an
 * age. Each generated predicate is therefore never NULL.
 */
import type { FieldRef, TypedFilter, TypedValue } from '../../../../model/filter.js';
import type { SortKey } from '../../../../model/sort.js';
import type { ListSqlDialect, SqlDialect } from '../../engine/sql/dialect.js';
import type { Column, TableShape } from './table-shape.js';

export interface ListSqlQuery {
  filter?: TypedFilter;
  sort: SortKey[];
  /** Rows to fetch (the engine asks for one more than the page to learn whether another follows). */
  limit: number;
  /** The previous page's last row: its value of each sort key, in order. */
  after?: readonly unknown[];
}

/** Collects bind values; each call returns the placeholder of the value, cast to `sqlType`. */
export class Binds {
  readonly values: unknown[] = [];
  constructor(private readonly dialect: ListSqlDialect) {}
  add(value: unknown, sqlType: string): string {
    this.values.push(value);
    return this.dialect.bind(this.values.length, sqlType);
  }
}

export interface ColumnRef {
  column: Column;
  /** Quoted column name. */
  sql: string;
  /** As ordering comparisons read it (the dialect's `ordered`). */
  ordered: string;
  sqlType: string;
  /** The id and version are never null. */
  nullable: boolean;
}

const SQL_OPS = { '==': '=', '!=': '<>', '<': '<', '<=': '<=', '>': '>', '>=': '>=' } as const;

function bound(value: TypedValue): unknown {
  if ('arg' in value) throw new Error(`placeholder \${${value.arg}} was not bound`); // query schemas bind before SQL is built
  return value.value;
}

const isNull = (v: unknown) => v === null || v === undefined;

/** The list SQL of one table on one store. */
export class ListSql {
  constructor(
    readonly dialect: Pick<SqlDialect, 'naming' | 'quoteIdent'> & ListSqlDialect,
    readonly layout: TableShape,
  ) {}

  binds(): Binds {
    return new Binds(this.dialect);
  }

  column(field: FieldRef): ColumnRef {
    const { naming, quoteIdent } = this.dialect;
    const name = field.system === 'id' ? naming.system.id : field.system === 'version' ? naming.system.version : undefined;
    const dotted = field.path.join('.');
    const column = this.layout.columns.find((c) => (name ? c.name === name : c.field?.dotted === dotted));
    if (!column) throw new Error(`no column for ${field.dotted} in ${this.layout.schemaName}`); // typing resolved it against the same schema
    const sql = quoteIdent(column.name);
    return { column, sql, ordered: this.dialect.ordered(sql, column.sqlType), sqlType: column.sqlType, nullable: !field.system };
  }

  /** A predicate that is true or false, never NULL (see the module comment). */
  where(filter: TypedFilter, binds: Binds): string {
    switch (filter.kind) {
      case 'and':
      case 'or':
        return `(${filter.items.map((item) => this.where(item, binds)).join(filter.kind === 'and' ? ' AND ' : ' OR ')})`;
      case 'not':
        return `(NOT ${this.where(filter.item, binds)})`;
      case 'null': {
        const column = this.column(filter.field);
        return `(${column.sql} IS ${filter.negated ? 'NOT ' : ''}NULL)`;
      }
      case 'compare': {
        const column = this.column(filter.field);
        const value = binds.add(bound(filter.value), column.sqlType);
        if (filter.op === '!=') return `(${column.sql} IS NULL OR ${column.sql} <> ${value})`;
        const left = filter.op === '==' ? column.sql : column.ordered;
        return `(${column.sql} IS NOT NULL AND ${left} ${SQL_OPS[filter.op]} ${value})`;
      }
      case 'in': {
        const column = this.column(filter.field);
        let inList: string;
        if (this.dialect.arrayBinds) {
          inList = `(${column.sql} IS NOT NULL AND ${column.sql} = ANY(${binds.add(filter.values.map(bound), `${column.sqlType}[]`)}))`;
        } else {
          if (!filter.values.length) return filter.negated ? 'TRUE' : 'FALSE';
          inList = `(${column.sql} IS NOT NULL AND ${column.sql} IN (${filter.values.map((v) => binds.add(bound(v), column.sqlType)).join(', ')}))`;
        }
        return filter.negated ? `(NOT ${inList})` : inList;
      }
    }
  }

  /**
   * Rows after the keyset position: for some key i, every earlier key equal to the position's value
   * and key i past it in its own direction and nulls order. Null positions turn the comparisons into
   * IS NULL / IS NOT NULL, so the condition holds for mixed directions and nulls.
   */
  keyset(sort: SortKey[], after: readonly unknown[], binds: Binds): string {
    if (after.length !== sort.length) throw new Error(`keyset position has ${after.length} values for ${sort.length} sort keys`);
    const columns = sort.map((key) => this.column(key.field));
    const equal = (i: number) => (isNull(after[i]) ? `${columns[i].sql} IS NULL` : `${columns[i].sql} = ${binds.add(after[i], columns[i].sqlType)}`);
    /** Key i strictly past the position (a null position that sorts last has nothing past it: no branch). */
    const past = (i: number): string => {
      const { direction, nulls } = sort[i];
      const column = columns[i];
      if (isNull(after[i])) return `${column.sql} IS NOT NULL`;
      const beyond = `${column.ordered} ${direction === 'asc' ? '>' : '<'} ${binds.add(after[i], column.sqlType)}`;
      // id and version are never null: no branch for the nulls after them.
      return nulls === 'last' && column.nullable ? `(${beyond} OR ${column.sql} IS NULL)` : beyond;
    };
    const branches: string[] = [];
    for (let i = 0; i < sort.length; i++) {
      if (isNull(after[i]) && sort[i].nulls !== 'first') continue;
      // Binds in text order: the prefix, then the step.
      const prefix = Array.from({ length: i }, (_, j) => equal(j));
      const step = past(i);
      branches.push(prefix.length ? `(${[...prefix, step].join(' AND ')})` : step);
    }
    return branches.length ? `(${branches.join(' OR ')})` : 'FALSE';
  }

  orderBy(sort: SortKey[]): string {
    return sort.map((key) => `${this.column(key.field).ordered} ${key.direction.toUpperCase()} NULLS ${key.nulls.toUpperCase()}`).join(', ');
  }
}
