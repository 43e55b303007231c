/** PostgreSQL's SQL dialect for the shared SQL layer (drivers/sql/). */
import type { SqlDialect } from '../../engine/sql/dialect.js';
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
};
