/**
 * Pure planning of additive schema changes on the warehouse: the shared diff (drivers/sql/) in
 * Snowflake DDL, tables made by the table format (CREATE [ICEBERG] TABLE), columns added with
 * ALTER [ICEBERG] TABLE … ADD COLUMN; destructive changes refused and reported.
 */
import type { DatasetConfig } from '../../../../model/types.js';
import { quoteIdent as q, warehouseNaming as naming } from '../../engine/sql/naming.js';
import { diffSchema, type ExistingColumn } from '../sql/schema-diff.js';
import { warehouseSqlDialect } from './dialect.js';
import type { WarehouseLayout } from './layout.js';

export interface SchemaPlan {
  statements: string[];
  refused: string[];
}

/** The catalog query: every column of the dataset's database schema, in Snowflake's spelling. */
export const CATALOG_SQL = 'SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE, NUMERIC_PRECISION, NUMERIC_SCALE FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = ?';

/** A catalog row as the diff compares it: a NUMBER with its precision and scale (`NUMBER(38,0)`). */
export function existingColumn(row: Record<string, unknown>): ExistingColumn {
  const type = String(row.DATA_TYPE);
  const scale = row.NUMERIC_SCALE;
  const precision = row.NUMERIC_PRECISION;
  const typed = type === 'NUMBER' && scale !== null && scale !== undefined ? `NUMBER(${precision ?? 38},${scale})` : type;
  return { table_name: String(row.TABLE_NAME), column_name: String(row.COLUMN_NAME), data_type: typed };
}

export function planSchemaChanges(dataset: DatasetConfig, layouts: WarehouseLayout[], existing: ExistingColumn[]): SchemaPlan {
  const first = layouts[0];
  if (!first) return { statements: [], refused: [] };
  const { format } = first;
  const diff = diffSchema(layouts, existing, warehouseSqlDialect(format));
  const s = naming.system;
  const statements = [`CREATE SCHEMA IF NOT EXISTS ${q(first.dbSchema)}`];
  for (const { shape, history } of diff.createTables) {
    const columns = (history ? shape.historyColumns : shape.columns).map((c) => `${q(c.name)} ${c.sqlType}${c.name === s.id || c.name === s.version ? ' NOT NULL' : ''}`).join(', ');
    const key = history ? `PRIMARY KEY (${q(s.id)}, ${q(s.version)})` : `PRIMARY KEY (${q(s.id)})`;
    statements.push(format.createTable(dataset, history ? shape.history : shape.table, history ? shape.historyName : shape.tableName, columns, key));
  }
  for (const { table, column } of diff.addColumns) statements.push(`${format.alterTable} ${table} ADD COLUMN ${q(column.name)} ${column.sqlType}`);
  return { statements, refused: diff.refused };
}
