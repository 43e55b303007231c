/**
 * The warehouse's SQL dialect (engine/sql/dialect.ts): upper-case names (warehouseNaming), the
 * table format's column types and how INFORMATION_SCHEMA spells them; for raw SQL, positional `?`
 * binds with a cast per argument type and Snowflake's lexical rules: '…' strings with backslash
 * escapes, $$…$$ strings (no tagged ones), `--` and `//` line comments, block comments that do not
 * nest; for list pages, `?` binds, `IN (…)` lists and no COLLATE (Snowflake compares text without
 * a collation in binary, UTF-8, order).
 */
import { defaultDatabaseSchema } from '../../../../model/location-kinds.js';
import type { SqlDialect } from '../../engine/sql/dialect.js';
import type { SqlLexicalRules } from '../../engine/sql/raw-rewrite.js';
import type { ScalarType } from '../../engine/sql/scalar-types.js';
import { tableShape } from '../sql/table-shape.js';
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

export const SNOWFLAKE_LEXICAL_RULES: SqlLexicalRules = {
  nestedBlockComments: false,
  taggedDollarQuotes: false,
  backslashEscapesInStrings: true,
  escapeStringPrefix: false,
  slashLineComments: true,
};

/** The cast of each argument type's bind (values travel as text; the warehouse converts). */
const SNOWFLAKE_TYPES: Record<string, string> = {
  string: 'VARCHAR',
  integer: 'NUMBER(10,0)',
  long: 'NUMBER(19,0)',
  float: 'FLOAT',
  double: 'FLOAT',
  decimal: 'NUMBER(38,18)',
  boolean: 'BOOLEAN',
  date: 'DATE',
  timestamp: 'TIMESTAMP_TZ',
  uuid: 'VARCHAR',
};

export function snowflakePlaceholder(type: Pick<ScalarType, 'name'>): string {
  // JSON text becomes a VARIANT only through PARSE_JSON (a cast would make a VARIANT string).
  if (type.name === 'json') return '(PARSE_JSON(?))';
  const cast = SNOWFLAKE_TYPES[type.name];
  if (!cast) throw new Error(`no warehouse type for raw SQL argument type "${type.name}"`);
  return `(?::${cast})`;
}

export function warehouseSqlDialect(format: TableFormat): SqlDialect {
  const dialect: SqlDialect = {
    name: format.kind,
    naming: warehouseNaming,
    quoteIdent,
    columnType: (kind) => format.columnTypes[kind],
    sameColumnType: sameWarehouseType,
    // An unquoted identifier folds to upper case on the warehouse: the dataset id, as one.
    defaultDatabaseSchema: (datasetId) => defaultDatabaseSchema(datasetId).toUpperCase().replace(/[^A-Z0-9_]/g, '_'),
    lexical: SNOWFLAKE_LEXICAL_RULES,
    // Table names do not depend on the table format (Snowflake or Iceberg).
    table: (dataset, schemaName) => tableShape(dataset, schemaName, dataset.schemas[schemaName], dialect).table,
    column: (_dataset, _schemaName, field) => quoteIdent(warehouseNaming.column(field)),
    systemColumn: (name) => quoteIdent(warehouseNaming.system[name]),
    placeholder: (_index, type) => snowflakePlaceholder(type),
    reusablePlaceholders: false,
    bind: (_index, sqlType) => `?::${sqlType}`,
    ordered: (sql) => sql,
    arrayBinds: false,
  };
  return dialect;
}
