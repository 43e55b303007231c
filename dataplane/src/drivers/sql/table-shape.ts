/**
 * The shape of a record schema's tables on a SQL location, from its dialect: names, the record
 * table's columns (system columns first, at SYSTEM_COLUMN_INDEX) and the history table's (the
 * same, then the tombstone marker). Pure.
 */
import type { DatasetConfig, RecordSchemaDef } from '../../../../model/types.js';
import { fieldsOf, type Field } from '../../engine/layout.js';
import type { SchemaDialect } from '../../engine/sql/dialect.js';

export interface Column {
  name: string;
  sqlType: string;
  field?: Field;
}

/** Where the system columns sit in `columns` (and in every row a driver's statements return). */
export const SYSTEM_COLUMN_INDEX = { id: 0, version: 1, createdAt: 2, updatedAt: 3 } as const;

export interface TableShape {
  schemaName: string;
  dbSchema: string;
  tableName: string;
  historyName: string;
  /** Qualified and quoted. */
  table: string;
  history: string;
  fields: Field[];
  columns: Column[];
  /** `columns`, then the deletion time (set on a delete's tombstone version only). */
  historyColumns: Column[];
}

/** The database schema (namespace) that holds a dataset's tables. */
export function databaseSchemaFor(dataset: DatasetConfig, dialect: SchemaDialect): string {
  // PostgreSQL names it `databaseSchema`; the warehouse kinds `schema` (docs/architecture.md "Location settings").
  return dataset.location.databaseSchema ?? dataset.location.schema ?? dialect.defaultDatabaseSchema(dataset.id);
}

export function tableShape(dataset: DatasetConfig, schemaName: string, schema: RecordSchemaDef, dialect: SchemaDialect): TableShape {
  const { naming, quoteIdent: q } = dialect;
  const dbSchema = databaseSchemaFor(dataset, dialect);
  const fields = fieldsOf(schema);
  const s = naming.system;
  const columns: Column[] = [
    { name: s.id, sqlType: dialect.columnType('id') },
    { name: s.version, sqlType: dialect.columnType('version') },
    { name: s.createdAt, sqlType: dialect.columnType('time') },
    { name: s.updatedAt, sqlType: dialect.columnType('time') },
    ...fields.map((field) => ({ name: naming.column(field), sqlType: dialect.columnType(field.type), field })),
  ];
  const tableName = naming.table(schemaName);
  const historyName = naming.historyTable(schemaName);
  return {
    schemaName,
    dbSchema,
    tableName,
    historyName,
    table: `${q(dbSchema)}.${q(tableName)}`,
    history: `${q(dbSchema)}.${q(historyName)}`,
    fields,
    columns,
    historyColumns: [...columns, { name: s.deletedAt, sqlType: dialect.columnType('time') }],
  };
}

/** Physical names that two properties (or a property and a system column) would share. */
export function columnCollisions(shape: TableShape): string[] {
  const seen = new Map<string, string>();
  const problems: string[] = [];
  // System columns first, so the message names the property that would take a system name.
  const columns = [...shape.historyColumns.filter((c) => !c.field), ...shape.columns.filter((c) => c.field)];
  for (const column of columns) {
    const owner = column.field ? `property "${column.field.dotted}"` : `system column`;
    const previous = seen.get(column.name);
    if (previous) problems.push(`${shape.schemaName}: ${owner} maps to column "${column.name}", already used by ${previous}`);
    else seen.set(column.name, owner);
  }
  return problems;
}
