/**
 * The additive schema diff every SQL location shares: what the catalog has against what the
 * config's table shapes need. Missing tables and columns are to be created; a column whose type
 * differs, or two properties on one column, is a destructive change, refused and reported. The
 * driver renders the result in its dialect's DDL. Pure.
 */
import type { SchemaDialect } from '../../engine/sql/dialect.js';
import { columnCollisions, type Column, type TableShape } from './table-shape.js';

/** One column as the catalog reports it (information_schema.columns). */
export interface ExistingColumn {
  table_name: string;
  column_name: string;
  data_type: string;
}

export interface SchemaDiff<S extends TableShape> {
  /** Tables to create: the record table, or (history) its history table. */
  createTables: { shape: S; history: boolean }[];
  /** Columns to add to an existing table (qualified name). */
  addColumns: { table: string; column: Column }[];
  refused: string[];
}

export function diffSchema<S extends TableShape>(shapes: S[], existing: ExistingColumn[], dialect: SchemaDialect): SchemaDiff<S> {
  const diff: SchemaDiff<S> = { createTables: [], addColumns: [], refused: shapes.flatMap(columnCollisions) };
  const byTable = new Map<string, Map<string, string>>();
  for (const col of existing) {
    if (!byTable.has(col.table_name)) byTable.set(col.table_name, new Map());
    byTable.get(col.table_name)!.set(col.column_name, col.data_type);
  }
  for (const shape of shapes) {
    for (const [tableName, qualified, history] of [
      [shape.tableName, shape.table, false],
      [shape.historyName, shape.history, true],
    ] as const) {
      const live = byTable.get(tableName);
      if (!live) {
        diff.createTables.push({ shape, history });
        continue;
      }
      for (const column of history ? shape.historyColumns : shape.columns) {
        const liveType = live.get(column.name);
        if (liveType === undefined) diff.addColumns.push({ table: qualified, column });
        else if (!dialect.sameColumnType(liveType, column.sqlType)) {
          diff.refused.push(`${shape.schemaName}: column "${column.name}" of ${tableName} is ${liveType}; changing it to ${column.sqlType} would rewrite stored data`);
        }
      }
    }
  }
  return diff;
}
