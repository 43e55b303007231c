/**
 * The PostgreSQL change log: an append-only table per dataset database schema, one row per
 * committed record write (create, update, delete), and a NOTIFY as a wake-up for every replica.
 *
 * Writers append a row (its staging number `seq`, its transaction `tx`, no position yet) in the
 * same statement or transaction as the record, without any lock of their own. A reader, before it
 * reads, gives every committed row without a position the next positions (`pos`, the cursor):
 * one short transaction takes a per-schema advisory lock, numbers the rows after the highest
 * position given and commits. Only these transactions take the lock; each reads the highest
 * position after taking it and commits before releasing it, so positions become visible in
 * increasing order: a reader following its cursor never skips a change that commits late.
 *
 * Within one numbering, rows are ordered by their transaction's LAST staging number, then their
 * own: a transaction's changes stay together in action order, and a record's versions stay in
 * order (a later version is staged after its row write, which waited for the earlier version's
 * transaction to commit, so its staging number exceeds every number that transaction drew).
 * Writers never wait for each other here (their commits can share a WAL flush), and the lock is
 * held for one server-side statement and its commit, never across a client round trip.
 *
 * The record image is not copied: a change names (schema, id, version) and the history table holds
 * that version (a delete's tombstone included), so a reader joins it.
 */
import { createHash } from 'node:crypto';
import { quoteIdent as q } from '../../engine/sql/naming.js';
import { postgresNaming as naming } from '../../engine/sql/naming.js';
import type { ChangeOp } from '../../engine/contract.js';
import type { Statement, TableLayout } from './sql.js';
import { currentTraceParent } from '../../../../model/telemetry/tracing.js';

/** Table names no record schema can map to (schema names give [a-z0-9_] only). */
export const CHANGES_TABLE = 'das$changes';
export const PRUNED_TABLE = 'das$changes_pruned';
/** The column of a change's position (its cursor); its absence means the log predates it and its DDL must run. */
export const POSITION_COLUMN = 'pos';
/** The index of numbered positions; its absence means the log's DDL must run (a log from before it). */
export const POSITION_INDEX = 'das$changes_pos_numbered';
/** The W3C traceparent of the write that made a change (NULL with tracing off): a delivery's span links to it. */
export const TRACE_COLUMN = 'traceparent';

/**
 * The bind value of TRACE_COLUMN: the writing store call's trace context, read where the statement
 * is built (one check when tracing is off). It is the last value of inlineChangeCtes: a statement
 * text cached across writes must take it afresh for each (insertSql does).
 */
export const writeTraceParent = (): string | null => currentTraceParent()?.traceparent ?? null;

export const changesTable = (dbSchema: string) => `${q(dbSchema)}.${q(CHANGES_TABLE)}`;
const prunedTable = (dbSchema: string) => `${q(dbSchema)}.${q(PRUNED_TABLE)}`;

/** The advisory lock (hashtext of this text) that orders the numbering of a schema's changes. */
export const changeLockKey = (dbSchema: string) => `data-access:changes:${dbSchema}`;

/**
 * `derive` computed once per database schema: every write names its channel and its statement.
 * Schemas come from configuration, not requests; the bound only guards a process that outlives many generations.
 */
function perSchema(derive: (dbSchema: string) => string): (dbSchema: string) => string {
  const cache = new Map<string, string>();
  return (dbSchema) => {
    let value = cache.get(dbSchema);
    if (value === undefined) {
      value = derive(dbSchema);
      if (cache.size >= 1024) cache.clear();
      cache.set(dbSchema, value);
    }
    return value;
  };
}

/** The NOTIFY channel of a database schema's change log (a short digest: channel names are identifiers). */
export const changeChannel = perSchema((dbSchema) => `das_changes_${createHash('sha256').update(dbSchema).digest('hex').slice(0, 24)}`);

/**
 * DDL of the change log, additive and idempotent. A log from before positions existed keeps its
 * cursors: its rows (numbered in commit order by the lock its writers took) get pos = seq.
 */
export function changeLogDdl(dbSchema: string): string[] {
  const t = changesTable(dbSchema);
  return [
    `CREATE TABLE IF NOT EXISTS ${t} (seq bigserial PRIMARY KEY, schema_name text NOT NULL, record_id text NOT NULL, version integer NOT NULL, op text NOT NULL, committed_at timestamp with time zone NOT NULL DEFAULT clock_timestamp())`,
    // The highest position pruned away: a cursor below it has lost changes (CURSOR_EXPIRED).
    `CREATE TABLE IF NOT EXISTS ${prunedTable(dbSchema)} (one boolean PRIMARY KEY DEFAULT true CHECK (one), through bigint NOT NULL)`,
    `INSERT INTO ${prunedTable(dbSchema)} (through) VALUES (0) ON CONFLICT DO NOTHING`,
    // Positions reserved durably, and the server start they were reserved under (numberSql).
    `ALTER TABLE ${prunedTable(dbSchema)} ADD COLUMN IF NOT EXISTS reserved bigint NOT NULL DEFAULT 0`,
    `ALTER TABLE ${prunedTable(dbSchema)} ADD COLUMN IF NOT EXISTS boot timestamp with time zone`,
    `ALTER TABLE ${t} ADD COLUMN IF NOT EXISTS tx bigint`,
    `ALTER TABLE ${t} ALTER COLUMN tx SET DEFAULT txid_current()`,
    `ALTER TABLE ${t} ADD COLUMN IF NOT EXISTS ${POSITION_COLUMN} bigint`,
    `UPDATE ${t} SET ${POSITION_COLUMN} = seq WHERE ${POSITION_COLUMN} IS NULL AND tx IS NULL`,
    // Readers (by position) and pruning (by time) look only at numbered rows, so their indexes
    // leave the others out: a writer's row enters two indexes (seq, unnumbered), not four, and
    // concurrent writers do not meet on the NULL end of the position index. Logs from before this
    // had both indexes whole; they are replaced.
    `DROP INDEX IF EXISTS ${q(dbSchema)}.${q('das$changes_pos')}`,
    `CREATE UNIQUE INDEX IF NOT EXISTS ${q(POSITION_INDEX)} ON ${t} (${POSITION_COLUMN}) WHERE ${POSITION_COLUMN} IS NOT NULL`,
    `DROP INDEX IF EXISTS ${q(dbSchema)}.${q('das$changes_committed_at')}`,
    `CREATE INDEX IF NOT EXISTS ${q('das$changes_committed_numbered')} ON ${t} (committed_at) WHERE ${POSITION_COLUMN} IS NOT NULL`,
    `CREATE INDEX IF NOT EXISTS ${q('das$changes_unnumbered')} ON ${t} (seq) WHERE ${POSITION_COLUMN} IS NULL`,
    `ALTER TABLE ${t} ADD COLUMN IF NOT EXISTS ${TRACE_COLUMN} text`,
  ];
}

export function dropChangeLogSql(dbSchema: string): string[] {
  return [`DROP TABLE IF EXISTS ${changesTable(dbSchema)}`, `DROP TABLE IF EXISTS ${prunedTable(dbSchema)}`];
}

/**
 * CTEs appended to a single write statement (`WITH w AS (...) , h AS (...)`): a change row for
 * each row of `source` (a CTE returning id and version; OFFSET 0 keeps the staging number from
 * being drawn before the row was written) and the wake-up. Params: the record schema name, the
 * channel and the write's traceparent, numbered from `first`. Reference `NOTIFIED` in the final SELECT so the notify CTE runs.
 */
export function inlineChangeCtes(layout: TableLayout, source: string, op: ChangeOp, first: number): { ctes: string; values: unknown[] } {
  const s = naming.system;
  const [schemaP, channelP, traceP] = [first, first + 1, first + 2].map((n) => `$${n}`);
  const ctes =
    `c AS (INSERT INTO ${changesTable(layout.dbSchema)} (schema_name, record_id, version, op, ${TRACE_COLUMN}) ` +
    `SELECT ${schemaP}::text, i, v, '${op}', ${traceP}::text FROM (SELECT ${q(s.id)} AS i, ${q(s.version)} AS v FROM ${source} OFFSET 0) l RETURNING seq), ` +
    `n AS (SELECT pg_notify(${channelP}::text, max(seq)::text) FROM c HAVING count(*) > 0)`;
  return { ctes, values: [layout.schemaName, changeChannel(layout.dbSchema), writeTraceParent()] };
}

/** The condition that makes the final SELECT of a write statement run the notify CTE. */
export const NOTIFIED = '(SELECT count(*) FROM n) >= 0';

/** One change to append: what an atomic transaction wrote. */
export interface ChangeRow {
  schema: string;
  id: string;
  version: number;
  op: ChangeOp;
}

/**
 * Appends changes in one statement: run it after the transaction's record writes (atomic writes,
 * through `appendChanges`), then COMMIT. The changes keep the given order and stay together when
 * numbered. It takes no lock.
 */
export function appendChangesSql(dbSchema: string, rows: readonly ChangeRow[]): Statement {
  return {
    text: appendChangesText(dbSchema),
    values: [rows.map((r) => r.schema), rows.map((r) => r.id), rows.map((r) => r.version), rows.map((r) => r.op), changeChannel(dbSchema), writeTraceParent()],
  };
}

const appendChangesText = perSchema(
  (dbSchema) =>
    `WITH c AS (INSERT INTO ${changesTable(dbSchema)} (schema_name, record_id, version, op, ${TRACE_COLUMN}) ` +
    `SELECT u.s, u.i, u.v, u.o, $6::text FROM unnest($1::text[], $2::text[], $3::int[], $4::text[]) WITH ORDINALITY AS u(s, i, v, o, n) ORDER BY u.n RETURNING seq), ` +
    `n AS (SELECT pg_notify($5::text, max(seq)::text) FROM c HAVING count(*) > 0) ` +
    `SELECT count(*)::int AS appended FROM c, (SELECT count(*) FROM n) x`,
);

/**
 * For code that writes records in its own transaction (atomic writes): appends their changes, as the
 * last statement before COMMIT. Does nothing for no rows.
 */
export async function appendChanges(client: { query(text: string, values: unknown[]): Promise<unknown> }, dbSchema: string, rows: readonly ChangeRow[]): Promise<void> {
  if (!rows.length) return;
  const { text, values } = appendChangesSql(dbSchema, rows);
  await client.query(text, values);
}

const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** Positions reserved ahead by one synchronous commit (see numberSql). */
export const RESERVE_POSITIONS = 100_000;

/**
 * Numbers the committed changes that have no position yet (module comment): a transaction, as
 * statements for one simple-protocol round trip. Positions continue after the highest given or
 * pruned. After an error the connection is in a failed transaction: ROLLBACK.
 *
 * The numbering commits without waiting for its WAL flush (synchronous_commit off): a flush per
 * read would queue behind, and lengthen, the writers' serialised commits. A crash may then lose the
 * last numberings after readers saw them, so positions must never be given twice: `reserved`
 * (durable: raised, RESERVE_POSITIONS ahead, only by a commit that does wait for its flush) bounds
 * every position given, and after a server start (`boot` differs) numbering resumes above it. The
 * rows whose numbering was lost are numbered again, higher: delivered again, never skipped.
 */
export function numberSql(dbSchema: string): string {
  const t = changesTable(dbSchema);
  const p = prunedTable(dbSchema);
  const pos = POSITION_COLUMN;
  return (
    `BEGIN; SELECT pg_advisory_xact_lock(hashtext(${literal(changeLockKey(dbSchema))})); ` +
    `WITH g AS (SELECT seq, max(seq) OVER (PARTITION BY tx) AS last FROM ${t} WHERE ${pos} IS NULL), ` +
    `o AS (SELECT seq, row_number() OVER (ORDER BY last, seq) AS k FROM g), ` +
    `b AS (SELECT greatest((SELECT max(${pos}) FROM ${t}), through, CASE WHEN boot IS DISTINCT FROM pg_postmaster_start_time() THEN reserved END, 0) AS base FROM ${p}), ` +
    `u AS (UPDATE ${t} c SET ${pos} = b.base + o.k FROM o, b WHERE c.seq = o.seq RETURNING c.${pos}), ` +
    `r AS (UPDATE ${p} SET reserved = m.top + ${RESERVE_POSITIONS}, boot = pg_postmaster_start_time() FROM (SELECT max(${pos}) AS top FROM u) m ` +
    `WHERE m.top IS NOT NULL AND (m.top > reserved OR boot IS DISTINCT FROM pg_postmaster_start_time()) RETURNING 1) ` +
    `SELECT set_config('synchronous_commit', CASE WHEN EXISTS (SELECT 1 FROM r) THEN 'on' ELSE 'off' END, true); COMMIT`
  );
}

/** A cursor is the change's position, in decimal. */
export function parseCursor(cursor: string): bigint | undefined {
  return /^(0|[1-9][0-9]{0,18})$/.test(cursor) ? BigInt(cursor) : undefined;
}

/**
 * Numbers, then reads up to `limit` changes after `from` (and the highest position pruned): one
 * round trip. The values are inlined (the simple protocol has no parameters): both are numbers.
 */
export function numberAndReadSql(dbSchema: string, from: bigint, limit: number): string {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new Error(`not a page size: ${limit}`);
  // Ordered by the column, not by its text (an output column named like it would sort '10' before '9').
  return (
    `${numberSql(dbSchema)}; SELECT through::text AS through FROM ${prunedTable(dbSchema)}; ` +
    `SELECT c.${POSITION_COLUMN}::text AS cursor, schema_name, record_id, version, op, committed_at, ${TRACE_COLUMN} FROM ${changesTable(dbSchema)} c ` +
    `WHERE c.${POSITION_COLUMN} > ${from.toString()} ORDER BY c.${POSITION_COLUMN} LIMIT ${limit}`
  );
}

/**
 * The history rows (in the layout's columns) of the changes of one record schema among the first
 * `limit` after `from`: the version a change names, a delete's previous one. Appended to
 * numberAndReadSql's round trip; it reads the same window (positions only ever grow).
 */
export function imagesAfterSql(layout: TableLayout, from: bigint, limit: number): string {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new Error(`not a page size: ${limit}`);
  const s = naming.system;
  const cols = layout.columns.map((c) => `h.${q(c.name)}`).join(', ');
  const window = `SELECT record_id, op, version, schema_name FROM ${changesTable(layout.dbSchema)} WHERE ${POSITION_COLUMN} > ${from.toString()} ORDER BY ${POSITION_COLUMN} LIMIT ${limit}`;
  return (
    `SELECT ${cols} FROM (${window}) c JOIN ${layout.history} h ON h.${q(s.id)} = c.record_id ` +
    `AND h.${q(s.version)} = CASE WHEN c.op = 'DELETE' THEN c.version - 1 ELSE c.version END WHERE c.schema_name = ${literal(layout.schemaName)}`
  );
}

/** Numbers, then the highest position. */
export const headSql = (dbSchema: string) => `${numberSql(dbSchema)}; SELECT coalesce(max(${POSITION_COLUMN}), 0)::text AS head FROM ${changesTable(dbSchema)}`;

/** Removes numbered changes older than the retention and remembers the highest position removed (run it after numbering). */
export function pruneSql(dbSchema: string, retentionMs: number): Statement {
  return {
    text:
      `WITH d AS (DELETE FROM ${changesTable(dbSchema)} WHERE committed_at < clock_timestamp() - make_interval(secs => $1::double precision / 1000) AND ${POSITION_COLUMN} IS NOT NULL RETURNING ${POSITION_COLUMN} AS p) ` +
      `UPDATE ${prunedTable(dbSchema)} SET through = greatest(through, (SELECT coalesce(max(p), 0) FROM d)) RETURNING (SELECT count(*)::int FROM d) AS pruned`,
    values: [retentionMs],
  };
}
