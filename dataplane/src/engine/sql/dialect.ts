/**
 * What differs between SQL stores, as one object per store (PostgreSQL: drivers/postgres/dialect.ts;
 * the warehouse: drivers/snowflake/dialect.ts), in the manner of Kysely's dialect: naming and
 * quoting, column types, the raw-SQL rules (lexing, placeholders: raw-rewrite.ts), and the binds
 * and ordering the shared list SQL (drivers/sql/list-sql.ts) is written with. The shared SQL layer
 * (drivers/sql/: table shapes, the additive schema diff, list pages) takes it as a parameter.
 * Statement text that differs in kind stays in the drivers — a warehouse writes with MERGE where
 * PostgreSQL uses `… RETURNING`.
 */
import type { ScalarPropertyType } from '../../../../model/types.js';
import type { NamingStrategy } from './naming.js';
import type { RawSqlDialect } from './raw-rewrite.js';

/** Column kinds a record table holds: property types, plus the system columns. */
export type ColumnKind = ScalarPropertyType | 'link' | 'id' | 'version' | 'time';

/** One SQL store's dialect: its schema, raw-SQL and list parts. */
export interface SqlDialect extends SchemaDialect, RawSqlDialect, ListSqlDialect {}

/** What table shapes and the schema diff need (drivers/sql/table-shape.ts, schema-diff.ts). */
export interface SchemaDialect {
  readonly name: string;
  /** Physical table and column names (PostgreSQL lower snake case, the warehouse upper case). */
  readonly naming: NamingStrategy;
  quoteIdent(name: string): string;
  /** The column type a kind of value is stored as (in the dialect's own type names). */
  columnType(kind: ColumnKind): string;
  /**
   * Whether a column the catalog reports with `catalogType` (information_schema's data_type, in
   * the store's spelling) already holds `sqlType`: equal means nothing to change, different
   * means a destructive change, refused.
   */
  sameColumnType(catalogType: string, sqlType: string): boolean;
  /** Default database schema (namespace) of a dataset without `location.databaseSchema`. */
  defaultDatabaseSchema(datasetId: string): string;
}

/** How the shared list SQL (drivers/sql/list-sql.ts) binds values and orders text on a store. */
export interface ListSqlDialect {
  /** The placeholder of the index-th (1-based) bind value, cast to `sqlType`. */
  bind(index: number, sqlType: string): string;
  /** A column as ordering comparisons read it (PostgreSQL: COLLATE "C" on text, for binary order). */
  ordered(columnSql: string, sqlType: string): string;
  /** `IN` lists: one array bind (`= ANY($1::text[])`), or a placeholder per value. */
  readonly arrayBinds: boolean;
}
