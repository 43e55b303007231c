/** PostgreSQL's SQL dialect (engine/sql/dialect.ts): names, types, raw-SQL rules and binds. */
import type { SqlDialect } from '../../engine/sql/dialect.js';
import { POSTGRES_LEXICAL_RULES } from '../../engine/sql/raw-rewrite.js';
import { tableShape } from '../sql/table-shape.js';
import { defaultDatabaseSchema } from '../../../../model/location-kinds.js';
import { postgresNaming, quoteIdent, snakeCase } from '../../engine/sql/naming.js';

const COLUMN_TYPES = {
  string: 'text',
  integer: 'bigint',
  number: 'double precision',
  boolean: 'boolean',
  date: 'date',
  timestamp: 'timestamp with time zone',
  link: 'text',
  id: 'text',
  version: 'integer',
  time: 'timestamp with time zone',
} as const;

export const postgresSqlDialect: SqlDialect = {
  name: 'postgres',
  naming: postgresNaming,
  quoteIdent,
  columnType: (kind) => COLUMN_TYPES[kind],
  // information_schema.columns.data_type spells PostgreSQL's types as the DDL above does.
  sameColumnType: (catalogType, sqlType) => catalogType === sqlType,
  // The model's default (model/storage.ts keeps datasets' schemas apart by it).
  defaultDatabaseSchema: (datasetId) => snakeCase(defaultDatabaseSchema(datasetId)),
  // Raw SQL: where tokens point in its layout, its bind casts and lexical rules.
  lexical: POSTGRES_LEXICAL_RULES,
  table: (dataset, schemaName) => tableShape(dataset, schemaName, dataset.schemas[schemaName], postgresSqlDialect).table,
  column: (_dataset, _schemaName, field) => quoteIdent(postgresNaming.column(field)),
  systemColumn: (name) => quoteIdent(postgresNaming.system[name]),
  // Parenthesised so that what follows the token cannot change the cast (`${a}[1]` would
  // otherwise read as a cast to an array type).
  placeholder: (index, type) => `($${index}::${type.postgres})`,
  reusablePlaceholders: true,
  // List pages: numbered binds, binary text order, one array bind per IN list.
  bind: (index, sqlType) => `$${index}::${sqlType}`,
  ordered: (sql, sqlType) => (sqlType === 'text' ? `${sql} COLLATE "C"` : sql),
  arrayBinds: true,
};
