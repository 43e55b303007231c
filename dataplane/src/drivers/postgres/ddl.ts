/**
 * Pure planning of additive schema changes on PostgreSQL: the shared diff (drivers/sql/schema-diff.ts)
 * rendered as PostgreSQL DDL, plus the list indexes; destructive changes are refused and reported.
 */
import { quoteIdent as q } from '../../engine/sql/naming.js';
import { diffSchema, type ExistingColumn } from '../sql/schema-diff.js';
import { postgresSqlDialect } from './dialect.js';
import { sortIndexes } from './indexes.js';
import { addColumnSql, createTableSql, type TableLayout } from './sql.js';

export type { ExistingColumn } from '../sql/schema-diff.js';

export interface SchemaPlan {
  statements: string[];
  refused: string[];
}

/** `existingIndexes`: index names in the dataset's database schema (the list indexes already there). */
export function planSchemaChanges(layouts: TableLayout[], existing: ExistingColumn[], existingIndexes: readonly string[] = []): SchemaPlan {
  const diff = diffSchema(layouts, existing, postgresSqlDialect);
  const statements: string[] = [];
  if (layouts[0]) statements.push(`CREATE SCHEMA IF NOT EXISTS ${q(layouts[0].dbSchema)}`);
  for (const { shape, history } of diff.createTables) statements.push(createTableSql(shape, history));
  for (const { table, column } of diff.addColumns) statements.push(addColumnSql(table, column));
  // After the tables and columns they cover; an index of a property no longer sortable stays.
  const indexed = new Set(existingIndexes);
  for (const layout of layouts) statements.push(...sortIndexes(layout).filter((index) => !indexed.has(index.name)).map((index) => index.sql));
  return { statements, refused: diff.refused };
}
