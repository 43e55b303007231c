/**
 * What differs between SQL locations, as hooks: the layer in this folder (table shapes, the
 * additive schema diff) is shared by every SQL driver, and each driver supplies its dialect
 * (PostgreSQL: drivers/postgres/dialect.ts). Statement text stays in the drivers — a warehouse
 * writes with MERGE where PostgreSQL uses `… RETURNING` — but what a table looks like and what an
 * additive change is are decided here, once.
 */
import type { ScalarPropertyType } from '../../../../model/types.js';
import type { NamingStrategy } from './naming.js';

/** Column kinds a record table holds: property types, plus the system columns. */
export type ColumnKind = ScalarPropertyType | 'link' | 'id' | 'version' | 'time';

export interface SqlDialect {
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
