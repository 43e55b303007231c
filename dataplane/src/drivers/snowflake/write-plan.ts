/**
 * Pure planning of a write on the warehouse, where no statement returns rows (no RETURNING): from
 * the ops and the current rows of the ids they touch, each op's outcome, the net change per id to
 * the record table (insert, update or delete, with the version it expects to find), and every new
 * version for the history table (tombstones included). Ops apply in order, each seeing the ones
 * before it, so a delete and a create of one id in one write give a tombstone and then the next
 * version; a create after a tombstone continues the id's versions.
 *
 * Atomic levels: the first failing op fails, every other op is `aborted`, and nothing is written.
 * Otherwise a failing op is left out and the others proceed.
 */
import { isGiven, valueAt, type Field } from '../../engine/layout.js';
import type { OpResult, StoreFailure, StoredRecord, WriteOp } from '../../engine/contract.js';
import { setAt } from '../../engine/layout.js';

/** A row in the planner's terms: system values and the field values in the shape's field order (a link holds the target id). */
export interface PlannedRow {
  id: string;
  version: number;
  createdAt: string;
  updatedAt: string;
  values: unknown[];
}

/** What the store holds for one schema's touched ids. */
export interface CurrentRows {
  /** Live rows by id. */
  live: Map<string, PlannedRow>;
  /** Highest version in the history table by id (a deleted id has its tombstone there). */
  maxVersion: Map<string, number>;
}

export type LiveChange =
  | { kind: 'insert'; row: PlannedRow }
  | { kind: 'update'; row: PlannedRow; previousVersion: number }
  | { kind: 'delete'; id: string; previousVersion: number };

export interface HistoryRow {
  row: PlannedRow;
  /** Set on a delete's tombstone: the deletion time (the row holds no values). */
  deletedAt?: string;
}

export interface TablePlan {
  live: LiveChange[];
  history: HistoryRow[];
  /** Indexes of the ops (into the write's ops) that touch this schema, in order. */
  ops: number[];
}

export interface WritePlan {
  results: OpResult[];
  /** Per schema with something to write. */
  tables: Map<string, TablePlan>;
}

export interface PlanInput {
  ops: readonly WriteOp[];
  current: (schema: string) => CurrentRows;
  fields: (schema: string) => Field[];
  atomic: boolean;
  /** The write's time (ISO-8601): created, updated and deletion times. */
  now: string;
}

/** Nested record data from a row's field values (unset values left out, links as `{id}`). */
export function recordOf(fields: Field[], row: PlannedRow, deleted = false): StoredRecord {
  const data: Record<string, unknown> = {};
  fields.forEach((field, i) => {
    const value = row.values[i];
    if (value === null || value === undefined) return;
    setAt(data, field.path, field.type === 'link' ? { id: value } : value);
  });
  return { id: row.id, version: row.version, data, createdAt: row.createdAt, updatedAt: row.updatedAt, ...(deleted ? { deleted: true } : {}) };
}

const absent = (value: unknown) => (value === undefined ? null : value);

export function planWrite({ ops, current, fields, atomic, now }: PlanInput): WritePlan {
  /** Per schema and id: the live row as the ops so far leave it (null: none), and the highest version written. */
  const state = new Map<string, Map<string, { initial: PlannedRow | null; live: PlannedRow | null; max: number }>>();
  const entry = (schema: string, id: string) => {
    let bySchema = state.get(schema);
    if (!bySchema) state.set(schema, (bySchema = new Map()));
    let e = bySchema.get(id);
    if (!e) {
      const rows = current(schema);
      const live = rows.live.get(id) ?? null;
      e = { initial: live, live, max: Math.max(rows.maxVersion.get(id) ?? 0, live?.version ?? 0) };
      bySchema.set(id, e);
    }
    return e;
  };
  const results: OpResult[] = [];
  const history = new Map<string, HistoryRow[]>();
  const touched = new Map<string, number[]>();
  let failed: number | undefined;
  for (const [i, op] of ops.entries()) {
    const e = entry(op.schema, op.id);
    const schemaFields = fields(op.schema);
    const fail = (failure: StoreFailure) => {
      results.push({ ok: false, failure });
      failed ??= i;
    };
    if (op.op === 'create') {
      if (e.live) {
        fail({ kind: 'exists', schema: op.schema, id: op.id });
        continue;
      }
      const row: PlannedRow = { id: op.id, version: e.max + 1, createdAt: now, updatedAt: now, values: schemaFields.map((f) => absent(valueAt(op.data, f))) };
      e.live = row;
      e.max = row.version;
      push(history, op.schema, { row });
      results.push({ ok: true, record: recordOf(schemaFields, row) });
    } else if (op.op === 'update') {
      if (!e.live) {
        fail({ kind: 'not-found', schema: op.schema, id: op.id });
        continue;
      }
      const before = e.live;
      const values = schemaFields.map((f, j) => (op.merge && !isGiven(op.data, f) ? before.values[j] : absent(valueAt(op.data, f))));
      const row: PlannedRow = { id: op.id, version: e.max + 1, createdAt: before.createdAt, updatedAt: now, values };
      e.live = row;
      e.max = row.version;
      push(history, op.schema, { row });
      results.push({ ok: true, record: recordOf(schemaFields, row) });
    } else {
      if (!e.live) {
        fail({ kind: 'not-found', schema: op.schema, id: op.id });
        continue;
      }
      const tombstone: PlannedRow = { id: op.id, version: e.max + 1, createdAt: e.live.createdAt, updatedAt: now, values: schemaFields.map(() => null) };
      e.live = null;
      e.max = tombstone.version;
      push(history, op.schema, { row: tombstone, deletedAt: now });
      results.push({ ok: true, record: recordOf(schemaFields, tombstone), deleted: true });
    }
    push(touched, op.schema, i);
  }
  if (atomic && failed !== undefined) {
    return { results: results.map((r, i) => (i === failed ? r : { ok: false, failure: { kind: 'aborted' } })), tables: new Map() };
  }
  const tables = new Map<string, TablePlan>();
  for (const [schema, byId] of state) {
    const live: LiveChange[] = [];
    for (const [id, e] of byId) {
      if (e.initial && e.live) {
        if (e.live !== e.initial) live.push({ kind: 'update', row: e.live, previousVersion: e.initial.version });
      } else if (e.initial) live.push({ kind: 'delete', id, previousVersion: e.initial.version });
      else if (e.live) live.push({ kind: 'insert', row: e.live });
    }
    const rows = history.get(schema) ?? [];
    if (live.length || rows.length) tables.set(schema, { live, history: rows, ops: touched.get(schema) ?? [] });
  }
  return { results, tables };
}

function push<T>(map: Map<string, T[]>, key: string, value: T): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
