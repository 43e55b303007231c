/**
 * The PostgreSQL change log: an append-only table per dataset database schema, one row per
 * committed record write (create, update, delete), and a NOTIFY as a wake-up for every replica.
 *
 * Writers append to a staging table (`das$changes_pending`) in the same statement or transaction
 * as the record, without any lock of their own. A reader, before it reads, sequences what has
 * committed there: one short transaction takes a per-schema advisory lock, moves every committed
 * pending row into `das$changes` (drawing the sequence there) and commits. Only sequencing
 * transactions take the lock and each draws its sequences after taking it and commits before
 * releasing it, so sequences become visible in increasing order: a reader following the cursor
 * never skips a change that commits late. Within a move, a transaction's changes stay together in
 * action order (ordered by the transaction's first staging id, then the staging id) and a record's
 * versions stay in order (the later version's staging ids are drawn after the earlier version's
 * transaction committed). Writers therefore never wait for each other's commits here (they can
 * share a WAL flush), and the lock is held for one server-side statement and commit, never across a
 * client round trip; measured in docs/subscriptions.md.
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
/** Where writers append; sequenced into CHANGES_TABLE by readers. The newest table of the log (its absence means the DDL must run). */
export const PENDING_TABLE = 'das$changes_pending';

export const changesTable = (dbSchema: string) => `${q(dbSchema)}.${q(CHANGES_TABLE)}`;
export const pendingTable = (dbSchema: string) => `${q(dbSchema)}.${q(PENDING_TABLE)}`;
const prunedTable = (dbSchema: string) => `${q(dbSchema)}.${q(PRUNED_TABLE)}`;

/** The advisory lock (hashtext of this text) that orders the sequencing of a schema's changes. */
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
    // Staged changes (writers), moved into the log in commit order by readers; tx groups a transaction's rows.
    `CREATE TABLE IF NOT EXISTS ${pendingTable(dbSchema)} (id bigserial PRIMARY KEY, tx bigint NOT NULL DEFAULT txid_current(), schema_name text NOT NULL, record_id text NOT NULL, version integer NOT NULL, op text NOT NULL, committed_at timestamp with time zone NOT NULL DEFAULT clock_timestamp())`,
  ];
}

export function dropChangeLogSql(dbSchema: string): string[] {
  return [`DROP TABLE IF EXISTS ${changesTable(dbSchema)}`, `DROP TABLE IF EXISTS ${prunedTable(dbSchema)}`, `DROP TABLE IF EXISTS ${pendingTable(dbSchema)}`];
}

/**
 * CTEs appended to a single write statement (`WITH w AS (...) , h AS (...)`): a staged change row
 * for each row of `source` (a CTE returning id and version; OFFSET 0 keeps the staging id from being
 * drawn before the row was written) and the wake-up. Params: the record schema name and the
 * channel, numbered from `first`. Reference `NOTIFIED` in the final SELECT so the notify CTE runs.
 */
export function inlineChangeCtes(layout: TableLayout, source: string, op: ChangeOp, first: number): { ctes: string; values: unknown[] } {
  const s = naming.system;
  const [schemaP, channelP] = [first, first + 1].map((n) => `$${n}`);
  const ctes =
    `c AS (INSERT INTO ${pendingTable(layout.dbSchema)} (schema_name, record_id, version, op) ` +
    `SELECT ${schemaP}::text, i, v, '${op}' FROM (SELECT ${q(s.id)} AS i, ${q(s.version)} AS v FROM ${source} OFFSET 0) l RETURNING id), ` +
    `n AS (SELECT pg_notify(${channelP}::text, max(id)::text) FROM c HAVING count(*) > 0)`;
  return { ctes, values: [layout.schemaName, changeChannel(layout.dbSchema)] };
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
 * Appends changes in one statement: run it after every record write of the transaction (atomic
 * writes; bulk loads call it through `appendChanges`), then COMMIT. The changes keep the given
 * order and stay together when sequenced. It takes no lock.
 */
export function appendChangesSql(dbSchema: string, rows: readonly ChangeRow[]): Statement {
  return {
    text:
      `WITH c AS (INSERT INTO ${pendingTable(dbSchema)} (schema_name, record_id, version, op) ` +
      `SELECT u.s, u.i, u.v, u.o FROM unnest($1::text[], $2::text[], $3::int[], $4::text[]) WITH ORDINALITY AS u(s, i, v, o, n) ORDER BY u.n RETURNING id), ` +
      `n AS (SELECT pg_notify($5::text, max(id)::text) FROM c HAVING count(*) > 0) ` +
      `SELECT count(*)::int AS appended FROM c, (SELECT count(*) FROM n) x`,
    values: [rows.map((r) => r.schema), rows.map((r) => r.id), rows.map((r) => r.version), rows.map((r) => r.op), changeChannel(dbSchema)],
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

const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/**
 * Sequences the committed pending changes (module comment): a transaction, as statements for one
 * simple-protocol round trip. After an error the connection is in a failed transaction: ROLLBACK.
 */
export function sequenceSql(dbSchema: string): string {
  return (
    `BEGIN; SELECT pg_advisory_xact_lock(hashtext(${literal(changeLockKey(dbSchema))})); ` +
    `WITH d AS (DELETE FROM ${pendingTable(dbSchema)} RETURNING id, tx, schema_name, record_id, version, op, committed_at) ` +
    `INSERT INTO ${changesTable(dbSchema)} (schema_name, record_id, version, op, committed_at) ` +
    `SELECT schema_name, record_id, version, op, committed_at FROM d ORDER BY min(id) OVER (PARTITION BY tx), id; COMMIT`
  );
}

/** A cursor is the change's sequence number, in decimal. */
export function parseCursor(cursor: string): bigint | undefined {
  return /^(0|[1-9][0-9]{0,18})$/.test(cursor) ? BigInt(cursor) : undefined;
}

/**
 * Sequences, then reads up to `limit` changes after `from` (and the highest sequence pruned): one
 * round trip. The values are inlined (the simple protocol has no parameters): both are numbers.
 */
export function sequenceAndReadSql(dbSchema: string, from: bigint, limit: number): string {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new Error(`not a page size: ${limit}`);
  // Ordered by the column, not by its text (an output column named seq would sort '10' before '9').
  return (
    `${sequenceSql(dbSchema)}; SELECT through::text AS through FROM ${prunedTable(dbSchema)}; ` +
    `SELECT c.seq::text AS cursor, schema_name, record_id, version, op, committed_at FROM ${changesTable(dbSchema)} c WHERE c.seq > ${from.toString()} ORDER BY c.seq LIMIT ${limit}`
  );
}

/** Sequences, then the highest sequence. */
export const headSql = (dbSchema: string) => `${sequenceSql(dbSchema)}; SELECT coalesce(max(seq), 0)::text AS head FROM ${changesTable(dbSchema)}`;

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
