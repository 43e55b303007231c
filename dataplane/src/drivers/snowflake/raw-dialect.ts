/**
 * The warehouse's raw-SQL dialect: where `@{…}` tokens point in its layout (upper-case quoted
 * names), positional `?` binds with a cast per argument type, and Snowflake's lexical rules:
 * '…' strings with backslash escapes, $$…$$ strings (no tagged ones), `--` and `//` line
 * comments, block comments that do not nest.
 */
import type { RawSqlDialect, SqlLexicalRules } from '../../engine/sql/raw-rewrite.js';
import type { ScalarType } from '../../engine/sql/scalar-types.js';
import { quoteIdent, warehouseNaming } from '../../engine/sql/naming.js';
import { tableShape } from '../sql/table-shape.js';
import { warehouseSqlDialect } from './dialect.js';
import { SNOWFLAKE_FORMAT } from './table-format.js';

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

// Table names do not depend on the table format (Snowflake or Iceberg): one dialect serves both kinds.
const dialect = warehouseSqlDialect(SNOWFLAKE_FORMAT);

export const snowflakeRawDialect: RawSqlDialect = {
  name: 'snowflake',
  lexical: SNOWFLAKE_LEXICAL_RULES,
  table: (dataset, schemaName) => tableShape(dataset, schemaName, dataset.schemas[schemaName], dialect).table,
  column: (_dataset, _schemaName, field) => quoteIdent(warehouseNaming.column(field)),
  systemColumn: (name) => quoteIdent(warehouseNaming.system[name]),
  placeholder: (_index, type) => snowflakePlaceholder(type),
  reusablePlaceholders: false,
};
