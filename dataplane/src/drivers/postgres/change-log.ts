/**
 * The PostgreSQL change log: an append-only table per dataset database schema, one row per
 * committed record write (create, update, delete), written in the same statement or transaction
 * as the write, and a NOTIFY carrying only the new sequence as a wake-up for every replica.
 *
 * Commit order = sequence order: a writer takes a per-schema transaction-level advisory lock
 * just before it draws sequence values and holds it until it commits, so no transaction can
 * commit a smaller sequence after a reader has seen a larger one (a reader never skips a change
 * that commits late). The lock is always the last one a transaction takes (inline in a single
 * write statement after its row lock, or in the final statement of an atomic transaction), so it
 * cannot close a deadlock cycle with the record rows' locks. The price: commits of one dataset are
 * serialised (one at a time through the lock), measured in docs/subscriptions.md.
 *
 * The record image is not copied: a change names (schema, id, version) and the history table holds
 * that version (a delete's tombstone included), so a reader joins it.
 */
import { createHash } from 'node:crypto';
import { quoteIdent as q } from '../sql-naming.js';
import { postgresNaming as naming } from '../sql-naming.js';
import type { ChangeOp } from '../../engine/contract.js';
import type { Statement, TableLayout } from './sql.js';

/** Table names no record schema can map to (schema names give [a-z0-9_] only). */
export const CHANGES_TABLE = 'das$changes';
export const PRUNED_TABLE = 'das$changes_pruned';

export const changesTable = (dbSchema: string) => `${q(dbSchema)}.${q(CHANGES_TABLE)}`;
const prunedTable = (dbSchema: string) => `${q(dbSchema)}.${q(PRUNED_TABLE)}`;

/** The advisory lock (hashtext of this text) that orders commits of a schema's changes. */
export const changeLockKey = (dbSchema: string) => `data-access:changes:${dbSchema}`;

/** The NOTIFY channel of a database schema's change log (a short digest: channel names are identifiers). */
export const changeChannel = (dbSchema: string) => `das_changes_${createHash('sha256').update(dbSchema).digest('hex').slice(0, 24)}`;

/** DDL of the change log, additive and idempotent. */
export function changeLogDdl(dbSchema: string): string[] {
  const t = changesTable(dbSchema);
  return [
    `CREATE TABLE IF NOT EXISTS ${t} (seq bigserial PRIMARY KEY, schema_name text NOT NULL, record_id text NOT NULL, version integer NOT NULL, op text NOT NULL, committed_at timestamp with time zone NOT NULL DEFAULT clock_timestamp())`,
    `CREATE INDEX IF NOT EXISTS ${q('das$changes_committed_at')} ON ${t} (committed_at)`,
    // The highest sequence pruned away: a cursor below it has lost changes (CURSOR_EXPIRED).
    `CREATE TABLE IF NOT EXISTS ${prunedTable(dbSchema)} (one boolean PRIMARY KEY DEFAULT true CHECK (one), through bigint NOT NULL)`,
    `INSERT INTO ${prunedTable(dbSchema)} (through) VALUES (0) ON CONFLICT DO NOTHING`,
  ];
}

export function dropChangeLogSql(dbSchema: string): string[] {
  return [`DROP TABLE IF EXISTS ${changesTable(dbSchema)}`, `DROP TABLE IF EXISTS ${prunedTable(dbSchema)}`];
}

/**
 * CTEs appended to a single write statement (`WITH w AS (...) , h AS (...)`): a change row for
 * each row of `source` (a CTE returning id and version), the lock taken per row after that row was
 * written (OFFSET 0 keeps the lock call from being moved before the write), and the wake-up.
 * Params: the record schema name, the lock key, the channel, numbered from `first`.
 * Reference `NOTIFIED` in the final SELECT so the notify CTE runs.
 */
export function inlineChangeCtes(layout: TableLayout, source: string, op: ChangeOp, first: number): { ctes: string; values: unknown[] } {
  const s = naming.system;
  const [schemaP, lockP, channelP] = [first, first + 1, first + 2].map((n) => `$${n}`);
  const ctes =
    `c AS (INSERT INTO ${changesTable(layout.dbSchema)} (schema_name, record_id, version, op) ` +
    `SELECT ${schemaP}::text, i, v, '${op}' FROM (SELECT ${q(s.id)} AS i, ${q(s.version)} AS v, pg_advisory_xact_lock(hashtext(${lockP}::text)) FROM ${source} OFFSET 0) l RETURNING seq), ` +
    `n AS (SELECT pg_notify(${channelP}::text, max(seq)::text) FROM c HAVING count(*) > 0)`;
  return { ctes, values: [layout.schemaName, changeLockKey(layout.dbSchema), changeChannel(layout.dbSchema)] };
}

/** The condition that makes the final SELECT of a write statement run the notify CTE. */
export const NOTIFIED = '(SELECT count(*) FROM n) >= 0';

/** One change to append: what an atomic transaction (or a bulk load) wrote. */
export interface ChangeRow {
  schema: string;
  id: string;
  version: number;
  op: ChangeOp;
}

/**
 * Appends changes in one statement, taking the ordering lock: run it as the LAST statement of a
 * transaction, after every record write, then COMMIT (atomic writes; bulk loads call it through
 * `appendChanges`). The changes get consecutive sequences in the given order.
 */
export function appendChangesSql(dbSchema: string, rows: readonly ChangeRow[]): Statement {
  return {
    text:
      `WITH l AS (SELECT pg_advisory_xact_lock(hashtext($1::text)) AS locked), ` +
      `c AS (INSERT INTO ${changesTable(dbSchema)} (schema_name, record_id, version, op) ` +
      `SELECT u.s, u.i, u.v, u.o FROM l, unnest($2::text[], $3::text[], $4::int[], $5::text[]) AS u(s, i, v, o) RETURNING seq), ` +
      `n AS (SELECT pg_notify($6::text, max(seq)::text) FROM c HAVING count(*) > 0) ` +
      `SELECT count(*)::int AS appended FROM c, (SELECT count(*) FROM n) x`,
    values: [changeLockKey(dbSchema), rows.map((r) => r.schema), rows.map((r) => r.id), rows.map((r) => r.version), rows.map((r) => r.op), changeChannel(dbSchema)],
  };
}

/**
 * For code that writes records in its own transaction (bulk loads): appends their changes, as the
 * last statement before COMMIT. Does nothing for no rows.
 */
export async function appendChanges(client: { query(text: string, values: unknown[]): Promise<unknown> }, dbSchema: string, rows: readonly ChangeRow[]): Promise<void> {
  if (!rows.length) return;
  const { text, values } = appendChangesSql(dbSchema, rows);
  await client.query(text, values);
}

/** A cursor is the change's sequence number, in decimal. */
export function parseCursor(cursor: string): bigint | undefined {
  return /^(0|[1-9][0-9]{0,18})$/.test(cursor) ? BigInt(cursor) : undefined;
}

export const readChangesSql = (dbSchema: string) =>
  // Ordered by the column, not by its text (an output column named seq would sort '10' before '9').
  `SELECT c.seq::text AS cursor, schema_name, record_id, version, op, committed_at, (SELECT through::text FROM ${prunedTable(dbSchema)}) AS pruned_through ` +
  `FROM ${changesTable(dbSchema)} c WHERE c.seq > $1::bigint ORDER BY c.seq LIMIT $2`;

export const headSql = (dbSchema: string) => `SELECT coalesce(max(seq), 0)::text AS head FROM ${changesTable(dbSchema)}`;
export const prunedThroughSql = (dbSchema: string) => `SELECT through::text FROM ${prunedTable(dbSchema)}`;

/** Removes changes older than the retention and remembers the highest sequence removed. */
export function pruneSql(dbSchema: string, retentionMs: number): Statement {
  return {
    text:
      `WITH d AS (DELETE FROM ${changesTable(dbSchema)} WHERE committed_at < clock_timestamp() - make_interval(secs => $1::double precision / 1000) RETURNING seq) ` +
      `UPDATE ${prunedTable(dbSchema)} SET through = greatest(through, (SELECT coalesce(max(seq), 0) FROM d)) RETURNING (SELECT count(*)::int FROM d) AS pruned`,
    values: [retentionMs],
  };
}

/** The history rows of (id, version) pairs of one schema, in the layout's columns. */
export function historyRowsSql(layout: TableLayout): string {
  const s = naming.system;
  const cols = layout.columns.map((c) => `h.${q(c.name)}`).join(', ');
  return `SELECT ${cols} FROM ${layout.history} h JOIN unnest($1::text[], $2::int[]) AS u(i, v) ON h.${q(s.id)} = u.i AND h.${q(s.version)} = u.v`;
}
