/** Pure planning of additive schema changes; destructive ones are refused and reported. */
import { quoteIdent as q } from '../sql-naming.js';
import { sortIndexes } from './indexes.js';
import { addColumnSql, columnCollisions, createTableSql, type TableLayout } from './sql.js';

export interface ExistingColumn {
  table_name: string;
  column_name: string;
  data_type: string;
}

export interface SchemaPlan {
  statements: string[];
  refused: string[];
}

/** `existingIndexes`: index names in the dataset's database schema (the list indexes already there). */
export function planSchemaChanges(layouts: TableLayout[], existing: ExistingColumn[], existingIndexes: readonly string[] = []): SchemaPlan {
  const statements: string[] = [];
  const refused: string[] = layouts.flatMap(columnCollisions);
  if (layouts[0]) statements.push(`CREATE SCHEMA IF NOT EXISTS ${q(layouts[0].dbSchema)}`);
  const byTable = new Map<string, Map<string, string>>();
  for (const col of existing) {
    if (!byTable.has(col.table_name)) byTable.set(col.table_name, new Map());
    byTable.get(col.table_name)!.set(col.column_name, col.data_type);
  }
  for (const layout of layouts) {
    for (const [tableName, qualified, history] of [
      [layout.tableName, layout.table, false],
      [layout.historyName, layout.history, true],
    ] as const) {
      const live = byTable.get(tableName);
      if (!live) {
        statements.push(createTableSql(layout, history));
        continue;
      }
      for (const column of history ? layout.historyColumns : layout.columns) {
        const liveType = live.get(column.name);
        if (liveType === undefined) statements.push(addColumnSql(qualified, column));
        else if (liveType !== column.sqlType) {
          refused.push(`${layout.schemaName}: column "${column.name}" of ${tableName} is ${liveType}; changing it to ${column.sqlType} would rewrite stored data`);
        }
      }
    }
  }
  // After the tables and columns they cover; an index of a property no longer sortable stays.
  const indexed = new Set(existingIndexes);
  for (const layout of layouts) statements.push(...sortIndexes(layout).filter((index) => !indexed.has(index.name)).map((index) => index.sql));
  return { statements, refused };
}
