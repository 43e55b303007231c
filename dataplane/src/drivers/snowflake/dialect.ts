/**
 * The warehouse's SQL dialect for the shared SQL layer (drivers/sql/): upper-case names
 * (warehouseNaming), the table format's column types, and how INFORMATION_SCHEMA spells them.
 */
import { defaultDatabaseSchema } from '../../../../model/location-kinds.js';
import type { SqlDialect } from '../../engine/sql/dialect.js';
import { quoteIdent, warehouseNaming } from '../../engine/sql/naming.js';
import type { TableFormat } from './table-format.js';

/** Snowflake's synonyms, folded to the name INFORMATION_SCHEMA.COLUMNS.DATA_TYPE reports. */
const CATALOG_NAME: Record<string, string> = {
  VARCHAR: 'TEXT',
  STRING: 'TEXT',
  TEXT: 'TEXT',
  CHAR: 'TEXT',
  CHARACTER: 'TEXT',
  NUMBER: 'NUMBER',
  NUMERIC: 'NUMBER',
  DECIMAL: 'NUMBER',
  INT: 'NUMBER',
  INTEGER: 'NUMBER',
  BIGINT: 'NUMBER',
  SMALLINT: 'NUMBER',
  FLOAT: 'FLOAT',
  DOUBLE: 'FLOAT',
  REAL: 'FLOAT',
  'DOUBLE PRECISION': 'FLOAT',
  BOOLEAN: 'BOOLEAN',
  DATE: 'DATE',
  TIMESTAMP_TZ: 'TIMESTAMP_TZ',
  TIMESTAMP_LTZ: 'TIMESTAMP_LTZ',
  TIMESTAMP_NTZ: 'TIMESTAMP_NTZ',
  VARIANT: 'VARIANT',
  OBJECT: 'OBJECT',
  ARRAY: 'ARRAY',
};

/** `NUMBER(38,0)` → { name: 'NUMBER', scale: 0 }; `TIMESTAMP_LTZ(6)` → { name: 'TIMESTAMP_LTZ' }. */
export function catalogSpelling(type: string): { name: string; scale?: number } {
  const match = /^\s*([A-Za-z_ ]+?)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*$/.exec(type);
  if (!match) return { name: type.toUpperCase() };
  const base = match[1].toUpperCase();
  const name = CATALOG_NAME[base] ?? base;
  if (name !== 'NUMBER') return { name };
  // INT and friends are NUMBER(38,0); NUMBER(p) has scale 0; plain NUMBER in a catalog row carries no scale.
  const integerAlias = ['INT', 'INTEGER', 'BIGINT', 'SMALLINT'].includes(base);
  const scale = match[3] !== undefined ? Number(match[3]) : match[2] !== undefined || integerAlias ? 0 : undefined;
  return { name, scale };
}

/**
 * Whether a column the catalog reports (`DATA_TYPE`, with `(precision,scale)` appended for NUMBER
 * when known) already holds `sqlType`. Lengths and timestamp precisions do not matter; a NUMBER's
 * scale does (an integer column is not a decimal one).
 */
export function sameWarehouseType(catalogType: string, sqlType: string): boolean {
  const have = catalogSpelling(catalogType);
  const want = catalogSpelling(sqlType);
  if (have.name !== want.name) return false;
  return have.scale === undefined || want.scale === undefined || have.scale === want.scale;
}

export function warehouseSqlDialect(format: TableFormat): SqlDialect {
  return {
    name: format.kind,
    naming: warehouseNaming,
    quoteIdent,
    columnType: (kind) => format.columnTypes[kind],
    sameColumnType: sameWarehouseType,
    // An unquoted identifier folds to upper case on the warehouse: the dataset id, as one.
    defaultDatabaseSchema: (datasetId) => defaultDatabaseSchema(datasetId).toUpperCase().replace(/[^A-Z0-9_]/g, '_'),
  };
}
