/**
 * Pure statements of a warehouse write (write-plan.ts decides what they hold). Snowflake has no
 * RETURNING, so a write is: one SELECT of the current rows per schema touched, then per record
 * table one MERGE carrying every net change (insert, update or delete, each only where the row is
 * still at the version the plan read), and per history table one insert-only MERGE of every new
 * version and tombstone. The counts each MERGE answers are compared with the plan: a difference
 * means a concurrent writer got there first. The number of statements depends on the schemas
 * touched, never on the number of actions.
 */
import { quoteIdent as q, warehouseNaming as naming } from '../../engine/sql/naming.js';
import { inList, type Statement, type WarehouseLayout } from './layout.js';
import type { HistoryRow, LiveChange, PlannedRow } from './write-plan.js';

const sys = naming.system;
/** Source columns of the record MERGE besides the table's own: what to do, and the version expected. */
export const OP_COLUMN = 'DAS_OP';
export const PREVIOUS_COLUMN = 'DAS_PREVIOUS_VERSION';
/** The value of CURRENT_SOURCE marking live rows (0) and history maxima (1) in the current-rows SELECT. */
export const SOURCE_COLUMN = 'DAS_SOURCE';

/**
 * The live rows of the ids and, per id, the highest version in the history (its tombstone for a
 * deleted id), in one statement: `DAS_SOURCE` 0 rows are live rows (the layout's columns), 1 rows
 * carry an id and its highest version in the version column, the rest null.
 */
export function currentRowsSql(layout: WarehouseLayout, ids: readonly string[]): Statement {
  const idType = layout.columns[0].sqlType;
  const nulls = layout.columns.slice(2).map(() => 'NULL');
  const live = `SELECT 0 AS ${q(SOURCE_COLUMN)}, ${layout.columnList} FROM ${layout.table} WHERE ${q(sys.id)} IN ${inList(layout, idType, ids.length)}`;
  const history = `SELECT 1, ${q(sys.id)}, MAX(${q(sys.version)})${nulls.map((n) => `, ${n}`).join('')} FROM ${layout.history} WHERE ${q(sys.id)} IN ${inList(layout, idType, ids.length)} GROUP BY ${q(sys.id)}`;
  return { text: `${live} UNION ALL ${history}`, binds: [...ids, ...ids] };
}

/** `(SELECT COLUMN1 AS "A", … FROM VALUES (?::T, …), …)`: Snowflake names VALUES columns COLUMN1…n. */
function valuesSource(layout: WarehouseLayout, columns: { name: string; sqlType: string }[], rows: unknown[][]): { sql: string; binds: unknown[] } {
  const names = columns.map((c, i) => `COLUMN${i + 1} AS ${q(c.name)}`).join(', ');
  const tuple = `(${columns.map((c) => layout.cast(c.sqlType)).join(', ')})`;
  return { sql: `(SELECT ${names} FROM VALUES ${rows.map(() => tuple).join(', ')})`, binds: rows.flat() };
}

const rowValues = (row: PlannedRow): unknown[] => [row.id, row.version, row.createdAt, row.updatedAt, ...row.values];

export interface MergeCounts {
  inserted: number;
  updated: number;
  deleted: number;
}

export function expectedLiveCounts(changes: readonly LiveChange[]): MergeCounts {
  const count = (kind: LiveChange['kind']) => changes.filter((c) => c.kind === kind).length;
  return { inserted: count('insert'), updated: count('update'), deleted: count('delete') };
}

/**
 * The record table's MERGE: one source row per id. An update or delete applies only while the row
 * is still at the version the plan read; an insert only while no row has the id.
 */
export function liveMergeSql(layout: WarehouseLayout, changes: readonly LiveChange[]): Statement {
  const versionType = layout.columns[1].sqlType;
  const opType = layout.columns[0].sqlType;
  const columns = [...layout.columns, { name: OP_COLUMN, sqlType: opType }, { name: PREVIOUS_COLUMN, sqlType: versionType }];
  const rows = changes.map((change) => {
    if (change.kind === 'delete') return [change.id, ...layout.columns.slice(1).map(() => null), 'D', change.previousVersion];
    return [...rowValues(change.row), change.kind === 'insert' ? 'I' : 'U', change.kind === 'update' ? change.previousVersion : null];
  });
  const source = valuesSource(layout, columns, rows);
  const src = (name: string) => `SRC.${q(name)}`;
  const guard = `TGT.${q(sys.version)} = ${src(PREVIOUS_COLUMN)}`;
  // Every column but the id: the created time too (a delete and a create of one id in one write is an update here).
  const sets = layout.columns.filter((c) => c.name !== sys.id).map((c) => `${q(c.name)} = ${src(c.name)}`);
  const clauses: string[] = [];
  const kinds = new Set(changes.map((c) => c.kind));
  if (kinds.has('delete')) clauses.push(`WHEN MATCHED AND ${src(OP_COLUMN)} = 'D' AND ${guard} THEN DELETE`);
  if (kinds.has('update')) clauses.push(`WHEN MATCHED AND ${src(OP_COLUMN)} = 'U' AND ${guard} THEN UPDATE SET ${sets.join(', ')}`);
  if (kinds.has('insert')) clauses.push(`WHEN NOT MATCHED AND ${src(OP_COLUMN)} = 'I' THEN INSERT (${layout.columnList}) VALUES (${layout.columns.map((c) => src(c.name)).join(', ')})`);
  return {
    text: `MERGE INTO ${layout.table} AS TGT USING ${source.sql} AS SRC ON TGT.${q(sys.id)} = SRC.${q(sys.id)} ${clauses.join(' ')}`,
    binds: source.binds,
  };
}

/** The history table's insert-only MERGE: every new version, keyed by (id, version) so none is written twice. */
export function historyMergeSql(layout: WarehouseLayout, rows: readonly HistoryRow[]): Statement {
  const columns = layout.historyColumns;
  const source = valuesSource(
    layout,
    columns,
    rows.map((h) => [...rowValues(h.row), h.deletedAt ?? null]),
  );
  const key = [sys.id, sys.version].map((c) => `TGT.${q(c)} = SRC.${q(c)}`).join(' AND ');
  const list = columns.map((c) => q(c.name)).join(', ');
  return {
    text: `MERGE INTO ${layout.history} AS TGT USING ${source.sql} AS SRC ON ${key} WHEN NOT MATCHED THEN INSERT (${list}) VALUES (${columns.map((c) => `SRC.${q(c.name)}`).join(', ')})`,
    binds: source.binds,
  };
}
