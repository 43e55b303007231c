/**
 * Pure SQL generation for the PostgreSQL driver. Every value is a bind parameter; identifiers come
 * from validated schema and property names and are quoted.
 */
import { createHash } from 'node:crypto';
import type { DatasetConfig, RecordSchemaDef, ScalarPropertyType } from '../../../../model/types.js';
import { fieldsOf, isGiven, valueAt, type Field } from '../../engine/layout.js';
import { postgresNaming as naming, quoteIdent as q, snakeCase } from '../sql-naming.js';
import type { PreparedSelect } from './prepared-read.js';
import { columnParser } from './types.js';
import type { ChangeOp } from '../../engine/contract.js';
import { inlineChangeCtes, NOTIFIED } from './change-log.js';

export const COLUMN_TYPES: Record<ScalarPropertyType | 'link', string> = {
  string: 'text',
  integer: 'bigint',
  number: 'double precision',
  boolean: 'boolean',
  date: 'date',
  timestamp: 'timestamp with time zone',
  link: 'text',
};

export interface Column {
  name: string;
  sqlType: string;
  field?: Field;
}

/** The database schema (namespace) that holds a dataset's tables. */
export function databaseSchemaOf(dataset: DatasetConfig): string {
  return dataset.location.databaseSchema ?? snakeCase(dataset.id.replace(/-/g, '_'));
}

/** Server-side prepared statement name: a digest of the text, within PostgreSQL's 63 bytes. */
const statementName = (text: string) => `das_${createHash('sha256').update(text).digest('base64url').slice(0, 32)}`;

/** Where the system columns sit in `columns` and in every row a statement of this module returns. */
export const SYSTEM_COLUMN_INDEX = { id: 0, version: 1, createdAt: 2, updatedAt: 3 } as const;

export interface TableLayout {
  schemaName: string;
  table: string; // qualified and quoted
  history: string; // qualified and quoted
  tableName: string;
  historyName: string;
  dbSchema: string;
  fields: Field[];
  columns: Column[]; // system columns first, at SYSTEM_COLUMN_INDEX
  /** The history table's columns: `columns`, then `deleted_at` (set on a tombstone version only). */
  historyColumns: Column[];
  /**
   * The read statements, built once per layout (reads are the hot path): prepared-statement names
   * and the parsers of their columns (every read and write returns `columns`, in order).
   */
  reads: { byId: PreparedSelect; byVersion: PreparedSelect; many: string };
}

/**
 * `read` with a version answers `columns` and then `deleted_at`: a value there (the deletion time)
 * marks the version a delete wrote, a tombstone with no data.
 */
export const DELETED_AT_INDEX = (layout: TableLayout) => layout.columns.length;

export function tableLayout(dataset: DatasetConfig, schemaName: string, schema: RecordSchemaDef): TableLayout {
  const dbSchema = databaseSchemaOf(dataset);
  const fields = fieldsOf(schema);
  const s = naming.system;
  const columns: Column[] = [
    { name: s.id, sqlType: 'text' },
    { name: s.version, sqlType: 'integer' },
    { name: s.createdAt, sqlType: 'timestamp with time zone' },
    { name: s.updatedAt, sqlType: 'timestamp with time zone' },
    ...fields.map((field) => ({ name: naming.column(field), sqlType: COLUMN_TYPES[field.type], field })),
  ];
  const historyColumns: Column[] = [...columns, { name: s.deletedAt, sqlType: 'timestamp with time zone' }];
  const tableName = naming.table(schemaName);
  const historyName = naming.historyTable(schemaName);
  const table = `${q(dbSchema)}.${q(tableName)}`;
  const history = `${q(dbSchema)}.${q(historyName)}`;
  const cols = columns.map((c) => q(c.name)).join(', ');
  const id = q(s.id);
  const parsers = columns.map((c) => columnParser(c.sqlType));
  const prepared = (text: string, extra: Column[] = []): PreparedSelect => ({ name: statementName(text), text, parsers: [...parsers, ...extra.map((c) => columnParser(c.sqlType))] });
  const deletedAt = historyColumns[columns.length];
  return {
    schemaName,
    dbSchema,
    tableName,
    historyName,
    table,
    history,
    fields,
    columns,
    historyColumns,
    reads: {
      byId: prepared(`SELECT ${cols} FROM ${table} WHERE ${id} = $1`),
      byVersion: prepared(`SELECT ${cols}, ${q(deletedAt.name)} FROM ${history} WHERE ${id} = $1 AND ${q(s.version)} = $2`, [deletedAt]),
      many: `SELECT ${cols} FROM ${table} WHERE ${id} = ANY($1::text[])`,
    },
  };
}

/** Physical names that two properties (or a property and a system column) would share. */
export function columnCollisions(layout: TableLayout): string[] {
  const seen = new Map<string, string>();
  const problems: string[] = [];
  // System columns first, so the message names the property that would take a system name.
  const columns = [...layout.historyColumns.filter((c) => !c.field), ...layout.columns.filter((c) => c.field)];
  for (const column of columns) {
    const owner = column.field ? `property "${column.field.dotted}"` : `system column`;
    const previous = seen.get(column.name);
    if (previous) problems.push(`${layout.schemaName}: ${owner} maps to column "${column.name}", already used by ${previous}`);
    else seen.set(column.name, owner);
  }
  return problems;
}

export function createTableSql(layout: TableLayout, history: boolean): string {
  const s = naming.system;
  const cols = (history ? layout.historyColumns : layout.columns).map((c) => `${q(c.name)} ${c.sqlType}${c.name === s.id || c.name === s.version ? ' NOT NULL' : ''}`);
  const key = history ? `PRIMARY KEY (${q(s.id)}, ${q(s.version)})` : `PRIMARY KEY (${q(s.id)})`;
  return `CREATE TABLE IF NOT EXISTS ${history ? layout.history : layout.table} (${[...cols, key].join(', ')})`;
}

export function addColumnSql(qualifiedTable: string, column: Column): string {
  return `ALTER TABLE ${qualifiedTable} ADD COLUMN IF NOT EXISTS ${q(column.name)} ${column.sqlType}`;
}

const columnList = (layout: TableLayout) => layout.columns.map((c) => q(c.name)).join(', ');

/**
 * Each write copies the new row into the history table in the same statement and, with
 * `changeLog`, appends its change (change-log.ts); without it the caller appends the changes of
 * its transaction before COMMIT (atomic writes).
 */
function withHistory(layout: TableLayout, writeSql: string, values: unknown[], op: ChangeOp, changeLog: boolean): Statement {
  const cols = columnList(layout);
  const head = `WITH w AS (${writeSql} RETURNING ${cols}), h AS (INSERT INTO ${layout.history} (${cols}) SELECT ${cols} FROM w)`;
  if (!changeLog) return { text: `${head} SELECT ${cols} FROM w`, values };
  const change = inlineChangeCtes(layout, 'w', op, values.length + 1);
  return { text: `${head}, ${change.ctes} SELECT ${cols} FROM w WHERE ${NOTIFIED}`, values: [...values, ...change.values] };
}

/** Whether a write statement appends its own change row (single-statement writes) or not (atomic transactions append theirs at the end). */
export interface WriteSqlOptions {
  changeLog?: boolean;
}

export interface Statement {
  text: string;
  values: unknown[];
}

/**
 * A create starts at version 1, or, for an id that was deleted, after its tombstone: one version
 * line per id in the history table (its key is (id, version)), so a change feed sees the delete
 * and then the create. The lookup is an index-only probe of the history's primary key.
 */
export function insertSql(layout: TableLayout, id: string, data: Record<string, unknown>, options: WriteSqlOptions = {}): Statement {
  const values: unknown[] = [id];
  const fieldCols = layout.columns.filter((c) => c.field);
  const placeholders = fieldCols.map((c) => {
    values.push(toDb(valueAt(data, c.field!)));
    return `$${values.length}`;
  });
  const s = naming.system;
  const cols = [s.id, s.version, s.createdAt, s.updatedAt, ...fieldCols.map((c) => c.name)].map(q).join(', ');
  const version = `COALESCE((SELECT max(${q(s.version)}) FROM ${layout.history} WHERE ${q(s.id)} = $1), 0) + 1`;
  return withHistory(layout, `INSERT INTO ${layout.table} (${cols}) VALUES ($1, ${version}, now(), now()${placeholders.map((p) => `, ${p}`).join('')})`, values, 'CREATE', options.changeLog ?? true);
}

/** Replace sets every property (absent ones to null); merge sets only the given ones. */
export function updateSql(layout: TableLayout, id: string, data: Record<string, unknown>, merge: boolean, options: WriteSqlOptions = {}): Statement {
  const values: unknown[] = [id];
  const s = naming.system;
  const sets = [`${q(s.version)} = ${q(s.version)} + 1`, `${q(s.updatedAt)} = now()`];
  for (const c of layout.columns) {
    if (!c.field || (merge && !isGiven(data, c.field))) continue;
    values.push(toDb(valueAt(data, c.field) ?? null));
    sets.push(`${q(c.name)} = $${values.length}`);
  }
  return withHistory(layout, `UPDATE ${layout.table} SET ${sets.join(', ')} WHERE ${q(s.id)} = $1`, values, 'UPDATE', options.changeLog ?? true);
}

/**
 * A delete removes the live row and, in the same statement, writes a tombstone to the history:
 * the next version, no data, `updated_at` and `deleted_at` the deletion time. The earlier versions
 * stay. Answers the tombstone (the layout's columns, its properties null).
 */
export function deleteSql(layout: TableLayout, id: string, options: WriteSqlOptions = {}): Statement {
  const s = naming.system;
  const [sid, version, created, updated, deleted] = [s.id, s.version, s.createdAt, s.updatedAt, s.deletedAt].map(q);
  const head =
    `WITH d AS (DELETE FROM ${layout.table} WHERE ${sid} = $1 RETURNING ${sid}, ${version}, ${created}), ` +
    `h AS (INSERT INTO ${layout.history} (${sid}, ${version}, ${created}, ${updated}, ${deleted}) SELECT ${sid}, ${version} + 1, ${created}, now(), now() FROM d RETURNING ${columnList(layout)})`;
  if (!(options.changeLog ?? true)) return { text: `${head} SELECT ${columnList(layout)} FROM h`, values: [id] };
  // The change names the tombstone's version.
  const change = inlineChangeCtes(layout, 'h', 'DELETE', 2);
  return { text: `${head}, ${change.ctes} SELECT ${columnList(layout)} FROM h WHERE ${NOTIFIED}`, values: [id, ...change.values] };
}

/** The read of one record (a version of it from the history table), and its bind values. */
export function selectByIdSql(layout: TableLayout, id: string, version?: number): { statement: PreparedSelect; values: string[] } {
  return version === undefined ? { statement: layout.reads.byId, values: [id] } : { statement: layout.reads.byVersion, values: [id, String(version)] };
}

export function selectManySql(layout: TableLayout, ids: string[]): Statement {
  return { text: layout.reads.many, values: [ids] };
}

function toDb(value: unknown): unknown {
  return value === undefined ? null : value;
}
