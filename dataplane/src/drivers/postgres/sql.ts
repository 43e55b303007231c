/**
 * Pure SQL generation for the PostgreSQL driver. Every value is a bind parameter; identifiers come
 * from validated schema and property names and are quoted.
 */
import { createHash } from 'node:crypto';
import type { DatasetConfig, RecordSchemaDef } from '../../../../model/types.js';
import { isGiven, valueAt } from '../../engine/layout.js';
import { postgresNaming as naming, quoteIdent as q } from '../../engine/sql/naming.js';
import { compileRowShaper, type RowShaper } from '../sql/row-shaper.js';
import { databaseSchemaFor, tableShape, type Column, type TableShape } from '../sql/table-shape.js';
import { postgresSqlDialect } from './dialect.js';
import type { PreparedSelect } from './prepared-read.js';
import { columnParser } from './types.js';
import type { ChangeOp } from '../../engine/contract.js';
import { inlineChangeCtes, NOTIFIED, writeTraceParent } from './change-log.js';

export type { Column } from '../sql/table-shape.js';
export { SYSTEM_COLUMN_INDEX } from '../sql/table-shape.js';

/** The database schema (namespace) that holds a dataset's tables. */
export function databaseSchemaOf(dataset: DatasetConfig): string {
  return databaseSchemaFor(dataset, postgresSqlDialect);
}

/** Server-side prepared statement name: a digest of the text, within PostgreSQL's 63 bytes. */
const statementName = (text: string) => `das_${createHash('sha256').update(text).digest('base64url').slice(0, 32)}`;

/** A schema's table shape (drivers/sql/table-shape.ts), with PostgreSQL's prepared reads. */
export interface TableLayout extends TableShape {
  /**
   * The read statements, built once per layout (reads are the hot path): prepared-statement names
   * and the parsers of their columns (every read and write returns `columns`, in order).
   */
  reads: { byId: PreparedSelect; byVersion: PreparedSelect; many: string };
  /** A row of `columns` as a stored record (row-shaper.ts: compiled with the layout). */
  shapeRow: RowShaper;
}

/**
 * `read` with a version answers `columns` and then `deleted_at`: a value there (the deletion time)
 * marks the version a delete wrote, a tombstone with no data.
 */
export const DELETED_AT_INDEX = (layout: TableLayout) => layout.columns.length;

export function tableLayout(dataset: DatasetConfig, schemaName: string, schema: RecordSchemaDef): TableLayout {
  const shape = tableShape(dataset, schemaName, schema, postgresSqlDialect);
  const { columns, historyColumns, table, history } = shape;
  const s = naming.system;
  const cols = columns.map((c) => q(c.name)).join(', ');
  const id = q(s.id);
  const parsers = columns.map((c) => columnParser(c.sqlType));
  const prepared = (text: string, extra: Column[] = []): PreparedSelect => ({ name: statementName(text), text, parsers: [...parsers, ...extra.map((c) => columnParser(c.sqlType))] });
  const deletedAt = historyColumns[columns.length];
  return {
    ...shape,
    reads: {
      byId: prepared(`SELECT ${cols} FROM ${table} WHERE ${id} = $1`),
      byVersion: prepared(`SELECT ${cols}, ${q(deletedAt.name)} FROM ${history} WHERE ${id} = $1 AND ${q(s.version)} = $2`, [deletedAt]),
      many: `SELECT ${cols} FROM ${table} WHERE ${id} = ANY($1::text[])`,
    },
    shapeRow: compileRowShaper(columns),
  };
}

export function createTableSql(layout: TableShape, history: boolean): string {
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
function withHistory(layout: TableLayout, writeSql: string, values: unknown[], op: ChangeOp, options: WriteSqlOptions): Statement {
  const cols = columnList(layout);
  const head = `WITH w AS (${writeSql} RETURNING ${cols}), h AS (INSERT INTO ${layout.history} (${cols}) SELECT ${cols} FROM w)`;
  if (!(options.changeLog ?? true)) return { text: `${head} SELECT ${cols} FROM w`, values };
  const change = inlineChangeCtes(layout, 'w', op, values.length + 1);
  return { text: `${head}, ${change.ctes} SELECT ${cols} FROM w WHERE ${finalCondition(options)}`, values: [...values, ...change.values] };
}

export interface WriteSqlOptions {
  /** Whether the statement appends its own change row (single-statement writes) or not (atomic transactions append theirs at the end). */
  changeLog?: boolean;
  /**
   * The statement, its own transaction, commits without waiting for its WAL flush (EVENTUAL):
   * it sets synchronous_commit off for that transaction, read when it commits. Needs `changeLog`
   * (a statement inside a transaction would change the whole transaction's commit).
   */
  unflushed?: boolean;
}

/**
 * The final SELECT's condition of a write that appends its change: it runs the notify CTE and,
 * unflushed, the setting (a CTE that is not a write runs only when referenced).
 */
const finalCondition = (options: WriteSqlOptions) => (options.unflushed ? `${NOTIFIED} AND ${UNFLUSHED}` : NOTIFIED);

const UNFLUSHED = `set_config('synchronous_commit', 'off', true) IS NOT NULL`;

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
  const template = insertTemplate(layout, options);
  const values: unknown[] = [id];
  for (const c of template.fieldCols) values.push(toDb(valueAt(data, c.field!)));
  for (const v of template.tail) values.push(v);
  if (template.traced) values.push(writeTraceParent()); // this write's, never the one the template was built under
  return { text: template.text, values };
}

interface InsertTemplate {
  text: string;
  fieldCols: TableLayout['columns'];
  /** The values after the record's: the change log's schema name and channel (a digest). */
  tail: unknown[];
  /** Whether the change log's last value, the write's traceparent, follows the tail. */
  traced: boolean;
}

/**
 * A create's text depends on the layout (one config generation) and the options only, never on
 * the record: built once for each, with the channel's digest, instead of on every create.
 */
const insertTemplates = new WeakMap<TableLayout, Map<string, InsertTemplate>>();

function insertTemplate(layout: TableLayout, options: WriteSqlOptions): InsertTemplate {
  const changeLog = options.changeLog ?? true;
  const choice = `${changeLog}:${options.unflushed ?? false}`;
  let byChoice = insertTemplates.get(layout);
  if (!byChoice) insertTemplates.set(layout, (byChoice = new Map()));
  let template = byChoice.get(choice);
  if (!template) {
    const fieldCols = layout.columns.filter((c) => c.field);
    const values: unknown[] = ['', ...fieldCols.map(() => null)];
    const placeholders = fieldCols.map((_, i) => `$${i + 2}`);
    const s = naming.system;
    const cols = [s.id, s.version, s.createdAt, s.updatedAt, ...fieldCols.map((c) => c.name)].map(q).join(', ');
    const version = `COALESCE((SELECT max(${q(s.version)}) FROM ${layout.history} WHERE ${q(s.id)} = $1), 0) + 1`;
    const statement = withHistory(layout, `INSERT INTO ${layout.table} (${cols}) VALUES ($1, ${version}, now(), now()${placeholders.map((p) => `, ${p}`).join('')})`, values, 'CREATE', options);
    const tail = statement.values.slice(values.length);
    template = { text: statement.text, fieldCols, tail: changeLog ? tail.slice(0, -1) : tail, traced: changeLog };
    byChoice.set(choice, template);
  }
  return template;
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
  return withHistory(layout, `UPDATE ${layout.table} SET ${sets.join(', ')} WHERE ${q(s.id)} = $1`, values, 'UPDATE', options);
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
  return { text: `${head}, ${change.ctes} SELECT ${columnList(layout)} FROM h WHERE ${finalCondition(options)}`, values: [id, ...change.values] };
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
