/**
 * Pure statements of bulk loads on the warehouse (bulk-load.ts runs them): the transactions table
 * and its conditional UPDATEs (no RETURNING: a row count of 1 says a claim, renewal or cursor move
 * won), and a chunk's set-based write — the chunk staged in a session's temporary table (its rows
 * as a gzip CSV file PUT on the user stage, then COPY INTO the table), then one insert-only MERGE
 * into the history table that gives each staged id its next version, one MERGE of those history
 * rows into the record table (inside a transaction the other way round: the record table first),
 * and for INSERT and DELETE one SELECT of what was refused. The number of statements per chunk is fixed.
 *
 * A chunk's rows are told apart by the chunk's time `at` (their updated time, with a microsecond
 * part that no other write uses: writes elsewhere carry milliseconds): a history row of the chunk's
 * id with that time is the chunk's own, so a re-run finds what an interrupted run wrote.
 */
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { stageCsv } from '../sql/stage-csv.js';
import type { ActionProgress, LoadChunk, LoadCursor, LoadOperation, StoredTransaction } from '../../engine/contract.js';
import { quoteIdent as q, warehouseNaming as naming } from '../../engine/sql/naming.js';
import type { Column } from '../sql/table-shape.js';
import type { Statement, WarehouseLayout } from './layout.js';

export const TRANSACTIONS_TABLE = 'DAS_TRANSACTIONS';
/** The chunk's staging table: TEMPORARY, so each session has its own and it goes with the session. */
export const STAGE_TABLE = 'DAS_LOAD_STAGE';
export const ROW_COLUMN = 'DAS_ROW';

const sys = naming.system;
const [ID, VERSION, CREATED, UPDATED, DELETED] = [sys.id, sys.version, sys.createdAt, sys.updatedAt, sys.deletedAt].map(q);
const TIME = 'TIMESTAMP_TZ';

/** The transactions table's columns: state, spec, progress and cursor as JSON text; the lease; the chunk under way (Iceberg). */
export const TX_COLUMNS = [
  ['ID', 'VARCHAR NOT NULL'],
  ['STATUS', 'VARCHAR NOT NULL'],
  ['SPEC', 'VARCHAR NOT NULL'],
  ['PROGRESS', 'VARCHAR NOT NULL'],
  ['LOAD_CURSOR', 'VARCHAR NOT NULL'],
  ['ERROR', 'VARCHAR'],
  ['CREATED_AT', `${TIME} NOT NULL`],
  ['UPDATED_AT', `${TIME} NOT NULL`],
  ['STARTED_AT', TIME],
  ['FINISHED_AT', TIME],
  ['LEASE_OWNER', 'VARCHAR'],
  ['LEASE_EXPIRES_AT', TIME],
  // The first attempt of the chunk starting at CHUNK_FROM chose CHUNK_AT (ISO text: microseconds kept) as its time.
  ['CHUNK_FROM', 'VARCHAR'],
  ['CHUNK_AT', 'VARCHAR'],
  // Takeovers of a lease that ran out (its replica stopped mid-load): the runner's crash-loop guard.
  ['LOST_LEASES', 'NUMBER'],
] as const;

const TX_LIST = TX_COLUMNS.map(([name]) => q(name)).join(', ');

/** A cursor as stored: fixed key order, so stored and expected cursors compare as text. */
export function cursorText(cursor: LoadCursor): string {
  return JSON.stringify({ action: cursor.action, file: cursor.file, row: cursor.row });
}

/** The time of a chunk's writes: now, with a microsecond part 1–999 (never 0, which is what millisecond writes carry). */
export function chunkTime(now = new Date(), micros = 1 + Math.floor(Math.random() * 999)): string {
  return now.toISOString().replace('Z', `${String(micros).padStart(3, '0')}Z`);
}

export function transactionsTable(dbSchema: string): string {
  return `${q(dbSchema)}.${q(TRANSACTIONS_TABLE)}`;
}

/** An ordinary table on both kinds: it is the loads' bookkeeping, not data (so not on the external volume). */
export function createTransactionsTableSql(dbSchema: string): string[] {
  return [
    `CREATE SCHEMA IF NOT EXISTS ${q(dbSchema)}`,
    `CREATE TABLE IF NOT EXISTS ${transactionsTable(dbSchema)} (${TX_COLUMNS.map(([name, type]) => `${q(name)} ${type}`).join(', ')}, PRIMARY KEY (${q('ID')}))`,
    // A table made before the count existed gets it.
    `ALTER TABLE ${transactionsTable(dbSchema)} ADD COLUMN IF NOT EXISTS ${q('LOST_LEASES')} NUMBER`,
  ];
}

/**
 * A new PENDING transaction. A MERGE on the id (the warehouse enforces no primary key, and MERGEs
 * on one table run one at a time): it inserts nothing when the id is taken.
 */
export function insertTransactionSql(dbSchema: string, tx: Pick<StoredTransaction, 'id' | 'spec'>, progress: ActionProgress[], now: string): Statement {
  return {
    text:
      `MERGE INTO ${transactionsTable(dbSchema)} AS TGT USING (SELECT ?::VARCHAR AS ${q('ID')}) AS SRC ON TGT.${q('ID')} = SRC.${q('ID')} ` +
      `WHEN NOT MATCHED THEN INSERT (${['ID', 'STATUS', 'SPEC', 'PROGRESS', 'LOAD_CURSOR', 'CREATED_AT', 'UPDATED_AT'].map(q).join(', ')}) ` +
      `VALUES (SRC.${q('ID')}, 'PENDING', ?::VARCHAR, ?::VARCHAR, ?::VARCHAR, ?::${TIME}, ?::${TIME})`,
    binds: [tx.id, JSON.stringify(tx.spec), JSON.stringify(progress), cursorText({ action: 0, file: 0, row: 0 }), now, now],
  };
}

export function selectTransactionSql(dbSchema: string, id: string): Statement {
  return { text: `SELECT ${TX_LIST} FROM ${transactionsTable(dbSchema)} WHERE ${q('ID')} = ?::VARCHAR`, binds: [id] };
}

/** A page by creation (createdAt, then id), after the previous page's last. */
export function listTransactionsSql(dbSchema: string, query: { status?: string; descending: boolean; limit: number; after?: [string, string] }): Statement {
  const where: string[] = [];
  const binds: unknown[] = [];
  if (query.status !== undefined) {
    where.push(`${q('STATUS')} = ?::VARCHAR`);
    binds.push(query.status);
  }
  const op = query.descending ? '<' : '>';
  if (query.after) {
    // No row-value comparison on the warehouse: spelled out.
    where.push(`(${q('CREATED_AT')} ${op} ?::${TIME} OR (${q('CREATED_AT')} = ?::${TIME} AND ${q('ID')} ${op} ?::VARCHAR))`);
    binds.push(query.after[0], query.after[0], query.after[1]);
  }
  const dir = query.descending ? 'DESC' : 'ASC';
  return {
    text: `SELECT ${TX_LIST} FROM ${transactionsTable(dbSchema)}${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY ${q('CREATED_AT')} ${dir}, ${q('ID')} ${dir} LIMIT ${Math.max(1, Math.floor(query.limit))}`,
    binds,
  };
}

const CLAIMABLE = `(${q('STATUS')} = 'PENDING' OR (${q('STATUS')} = 'RUNNING' AND ${q('LEASE_EXPIRES_AT')} < ?::${TIME}))`;

/**
 * Unfinished transactions, the claimable ones (READY 1: PENDING, or RUNNING with a lease that ran
 * out) first, oldest first; the others with their lease's expiry (when to look again).
 */
export function claimCandidatesSql(dbSchema: string, now: string, limit: number): Statement {
  return {
    text:
      `SELECT ${q('ID')}, CASE WHEN ${CLAIMABLE} THEN 1 ELSE 0 END AS ${q('READY')}, ${q('LEASE_EXPIRES_AT')} FROM ${transactionsTable(dbSchema)} ` +
      `WHERE ${q('STATUS')} IN ('PENDING', 'RUNNING') ORDER BY ${q('READY')} DESC, ${q('CREATED_AT')}, ${q('ID')} LIMIT ${limit}`,
    binds: [now],
  };
}

/** Takes one if it is still claimable: the warehouse re-checks the condition under its lock, so one claimer wins (1 row). */
export function claimSql(dbSchema: string, id: string, owner: string, now: string, expires: string): Statement {
  return {
    text:
      `UPDATE ${transactionsTable(dbSchema)} SET ${q('STATUS')} = 'RUNNING', ${q('LEASE_OWNER')} = ?::VARCHAR, ${q('LEASE_EXPIRES_AT')} = ?::${TIME}, ` +
      `${q('STARTED_AT')} = COALESCE(${q('STARTED_AT')}, ?::${TIME}), ${q('UPDATED_AT')} = ?::${TIME}, ` +
      `${q('LOST_LEASES')} = COALESCE(${q('LOST_LEASES')}, 0) + CASE WHEN ${q('STATUS')} = 'RUNNING' THEN 1 ELSE 0 END WHERE ${q('ID')} = ?::VARCHAR AND ${CLAIMABLE}`,
    binds: [owner, expires, now, now, id, now],
  };
}

const HELD = `${q('ID')} = ?::VARCHAR AND ${q('LEASE_OWNER')} = ?::VARCHAR AND ${q('STATUS')} = 'RUNNING'`;

export function renewSql(dbSchema: string, id: string, owner: string, expires: string): Statement {
  return { text: `UPDATE ${transactionsTable(dbSchema)} SET ${q('LEASE_EXPIRES_AT')} = ?::${TIME} WHERE ${HELD}`, binds: [expires, id, owner] };
}

export function advanceSql(dbSchema: string, id: string, owner: string, cursor: LoadCursor, progress: ActionProgress[], now: string): Statement {
  return {
    text: `UPDATE ${transactionsTable(dbSchema)} SET ${q('LOAD_CURSOR')} = ?::VARCHAR, ${q('PROGRESS')} = ?::VARCHAR, ${q('UPDATED_AT')} = ?::${TIME} WHERE ${HELD}`,
    binds: [cursorText(cursor), JSON.stringify(progress), now, id, owner],
  };
}

export function giveBackSql(dbSchema: string, id: string, owner: string, now: string): Statement {
  return {
    text:
      `UPDATE ${transactionsTable(dbSchema)} SET ${q('STATUS')} = 'PENDING', ${q('LEASE_OWNER')} = NULL, ${q('LEASE_EXPIRES_AT')} = NULL, ${q('UPDATED_AT')} = ?::${TIME} ` +
      `WHERE ${q('ID')} = ?::VARCHAR AND ${q('LEASE_OWNER')} = ?::VARCHAR`,
    binds: [now, id, owner],
  };
}

export function finishSql(dbSchema: string, id: string, owner: string, outcome: { status: 'SUCCEEDED' | 'FAILED'; error?: string; progress: ActionProgress[] }, now: string): Statement {
  return {
    text:
      `UPDATE ${transactionsTable(dbSchema)} SET ${q('STATUS')} = ?::VARCHAR, ${q('ERROR')} = ?::VARCHAR, ${q('PROGRESS')} = ?::VARCHAR, ${q('FINISHED_AT')} = ?::${TIME}, ` +
      `${q('UPDATED_AT')} = ?::${TIME}, ${q('LEASE_OWNER')} = NULL, ${q('LEASE_EXPIRES_AT')} = NULL WHERE ${q('ID')} = ?::VARCHAR AND ${q('LEASE_OWNER')} = ?::VARCHAR`,
    binds: [outcome.status, outcome.error ?? null, JSON.stringify(outcome.progress), now, now, id, owner],
  };
}

/** The chunk's state: where the cursor is, who holds the lease, the progress, and the time an earlier attempt chose. */
export function chunkStateSql(dbSchema: string, id: string): Statement {
  return {
    text: `SELECT ${['LOAD_CURSOR', 'LEASE_OWNER', 'STATUS', 'PROGRESS', 'CHUNK_FROM', 'CHUNK_AT'].map(q).join(', ')} FROM ${transactionsTable(dbSchema)} WHERE ${q('ID')} = ?::VARCHAR`,
    binds: [id],
  };
}

/** Records the time of the chunk starting at `from` (Iceberg: before any of its writes), while the lease and cursor are as expected. */
export function markChunkSql(dbSchema: string, id: string, owner: string, from: LoadCursor, at: string): Statement {
  return {
    text: `UPDATE ${transactionsTable(dbSchema)} SET ${q('CHUNK_FROM')} = ?::VARCHAR, ${q('CHUNK_AT')} = ?::VARCHAR WHERE ${HELD} AND ${q('LOAD_CURSOR')} = ?::VARCHAR`,
    binds: [cursorText(from), at, id, owner, cursorText(from)],
  };
}

/** The chunk's commit point: cursor and progress move only from `from`, under the lease (1 row, or the chunk is not this runner's). */
export function moveCursorSql(dbSchema: string, chunk: Pick<LoadChunk, 'transaction' | 'owner' | 'from' | 'to'>, progress: ActionProgress[], now: string, expires: string): Statement {
  return {
    text:
      `UPDATE ${transactionsTable(dbSchema)} SET ${q('LOAD_CURSOR')} = ?::VARCHAR, ${q('PROGRESS')} = ?::VARCHAR, ${q('UPDATED_AT')} = ?::${TIME}, ${q('LEASE_EXPIRES_AT')} = ?::${TIME} ` +
      `WHERE ${HELD} AND ${q('LOAD_CURSOR')} = ?::VARCHAR`,
    binds: [cursorText(chunk.to), JSON.stringify(progress), now, expires, chunk.transaction, chunk.owner, cursorText(chunk.from)],
  };
}

// ---- the chunk's write ----

/** The staging table's columns: the row number, the id, and (but for DELETE) the record table's field columns. */
export function stageColumns(layout: WarehouseLayout, operation: LoadOperation): Column[] {
  const fields = operation === 'DELETE' ? [] : layout.columns.filter((c) => c.field);
  return [{ name: ROW_COLUMN, sqlType: 'NUMBER(38,0)' }, layout.columns[0], ...fields];
}

/** DDL, so outside BEGIN … COMMIT (Snowflake commits an open transaction before DDL). Unqualified: a temporary table lives in the session's schema. */
export function createStageSql(layout: WarehouseLayout, operation: LoadOperation): string {
  return `CREATE OR REPLACE TEMPORARY TABLE ${q(STAGE_TABLE)} (${stageColumns(layout, operation)
    .map((c) => `${q(c.name)} ${c.sqlType}`)
    .join(', ')})`;
}

/**
 * Where a chunk's file goes on the session user's stage (@~): a folder per dataset and
 * transaction, named from the dataset id (a DNS name) and the transaction id (a UUID) only; an id
 * with other characters is replaced by its digest, so no input reaches the statement's quotes.
 */
export function stageDir(datasetId: string, transaction: string): string {
  const safe = (id: string) => (/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(id) ? id : createHash('sha256').update(id).digest('hex').slice(0, 32));
  return `das_bulk/${safe(datasetId)}/${safe(transaction)}/`;
}

/** The chunk's file name: its first cursor position and its number of rows (numbers only). */
export function stageFileName(from: LoadCursor, rows: number): string {
  return `${from.action}-${from.file}-${from.row}-${rows}.csv.gz`;
}

/**
 * The chunk's rows as the file COPY INTO reads, gzip-compressed: CSV in stageColumns order, null
 * an empty unquoted field and every other value quoted with its quotes doubled (with
 * FIELD_OPTIONALLY_ENCLOSED_BY = '"' and EMPTY_FIELD_AS_NULL = TRUE, Snowflake reads an unquoted
 * empty field as NULL and "" as the empty string). Objects as JSON text.
 */
export function stageFile(layout: WarehouseLayout, operation: LoadOperation, records: LoadChunk['records']): Buffer {
  const fields = stageColumns(layout, operation)
    .slice(2)
    .map((c) => c.field!);
  return gzipSync([...stageCsv(records, fields)].join(''));
}

/** Uploads the chunk's file (the SDK sends it from memory): PUT is not transactional, so it runs before BEGIN. */
export function putSql(dir: string, fileName: string): string {
  return `PUT 'file://${fileName}' '@~/${dir}' AUTO_COMPRESS = FALSE SOURCE_COMPRESSION = GZIP OVERWRITE = TRUE`;
}

/**
 * The file into the staging table. FORCE: a re-run chunk loads its file again (Snowflake's load
 * metadata would skip a file it loaded before); PURGE: the stage does not fill up;
 * ABORT_STATEMENT: all rows or none.
 */
export function copyIntoSql(layout: WarehouseLayout, operation: LoadOperation, dir: string, fileName: string): string {
  const columns = stageColumns(layout, operation).map((c) => q(c.name));
  return (
    `COPY INTO ${q(STAGE_TABLE)} (${columns.join(', ')}) FROM '@~/${dir}${fileName}' ` +
    `FILE_FORMAT = (TYPE = CSV FIELD_OPTIONALLY_ENCLOSED_BY = '"' COMPRESSION = GZIP EMPTY_FIELD_AS_NULL = TRUE) ` +
    'FORCE = TRUE PURGE = TRUE ON_ERROR = ABORT_STATEMENT'
  );
}

const timeCast = (layout: WarehouseLayout) => layout.cast(layout.columns[SYS_CREATED].sqlType);
const SYS_CREATED = 2;

/** `EXISTS` a history row of the id written by this chunk (its time is the chunk's). */
const chunkRowOf = (layout: WarehouseLayout, alias: string) => `EXISTS (SELECT 1 FROM ${layout.history} C WHERE C.${ID} = ${alias}.${ID} AND C.${UPDATED} = ${timeCast(layout)})`;

/** Per staged id, its highest version in the history (a deleted id's tombstone is there). */
const maxVersions = (layout: WarehouseLayout) => `(SELECT H.${ID} AS ${ID}, MAX(H.${VERSION}) AS V FROM ${layout.history} H JOIN ${q(STAGE_TABLE)} S2 ON S2.${ID} = H.${ID} GROUP BY H.${ID})`;

/**
 * The history table's insert-only MERGE: per staged id that has no row of this chunk yet, its next
 * version (after the history's highest and the live row's) — for UPSERT every id, for INSERT the
 * ids with no live record, for DELETE the ids with one (a tombstone). Keyed by (id, version).
 * Binds: the chunk's time, as many times as `?` appears.
 */
export function historyMergeSql(layout: WarehouseLayout, operation: LoadOperation, at: string): Statement {
  const next = `GREATEST(COALESCE(M.V, 0), COALESCE(L.${VERSION}, 0)) + 1`;
  const time = timeCast(layout);
  const fields = layout.columns.filter((c) => c.field).map((c) => q(c.name));
  let select: string;
  let columns: string[];
  let binds: unknown[];
  if (operation === 'DELETE') {
    columns = [ID, VERSION, CREATED, UPDATED, DELETED];
    select =
      `SELECT S.${ID} AS ${ID}, ${next} AS ${VERSION}, L.${CREATED} AS ${CREATED}, ${time} AS ${UPDATED}, ${time} AS ${DELETED} ` +
      `FROM ${q(STAGE_TABLE)} S JOIN ${layout.table} L ON L.${ID} = S.${ID} LEFT JOIN ${maxVersions(layout)} M ON M.${ID} = S.${ID} WHERE NOT ${chunkRowOf(layout, 'S')}`;
    binds = [at, at, at];
  } else {
    columns = [ID, VERSION, CREATED, UPDATED, ...fields];
    select =
      `SELECT S.${ID} AS ${ID}, ${next} AS ${VERSION}, COALESCE(L.${CREATED}, ${time}) AS ${CREATED}, ${time} AS ${UPDATED}${fields.map((f) => `, S.${f} AS ${f}`).join('')} ` +
      `FROM ${q(STAGE_TABLE)} S LEFT JOIN ${layout.table} L ON L.${ID} = S.${ID} LEFT JOIN ${maxVersions(layout)} M ON M.${ID} = S.${ID} WHERE NOT ${chunkRowOf(layout, 'S')}` +
      (operation === 'INSERT' ? ` AND L.${ID} IS NULL` : '');
    binds = [at, at, at];
  }
  return insertOnlyHistoryMerge(layout, select, columns, binds);
}

/**
 * The record table's MERGE from the chunk's history rows: a new version replaces an older live row
 * (or is inserted), a tombstone deletes it. A live row at that version or later is left alone, so
 * a re-run changes nothing.
 */
export function liveMergeSql(layout: WarehouseLayout, operation: LoadOperation, at: string): Statement {
  const chunkRows = (cols: string) =>
    `SELECT ${cols} FROM ${layout.history} H JOIN ${q(STAGE_TABLE)} S ON S.${ID} = H.${ID} WHERE H.${UPDATED} = ${timeCast(layout)} AND H.${DELETED} IS ${operation === 'DELETE' ? 'NOT NULL' : 'NULL'}`;
  const newer = `TGT.${VERSION} < SRC.${VERSION}`;
  if (operation === 'DELETE') {
    return { text: `MERGE INTO ${layout.table} AS TGT USING (${chunkRows(`H.${ID}, H.${VERSION}`)}) AS SRC ON TGT.${ID} = SRC.${ID} WHEN MATCHED AND ${newer} THEN DELETE`, binds: [at] };
  }
  const all = layout.columns.map((c) => q(c.name));
  const sets = all.filter((c) => c !== ID).map((c) => `${c} = SRC.${c}`);
  return {
    text:
      `MERGE INTO ${layout.table} AS TGT USING (${chunkRows(all.map((c) => `H.${c}`).join(', '))}) AS SRC ON TGT.${ID} = SRC.${ID} ` +
      `WHEN MATCHED AND ${newer} THEN UPDATE SET ${sets.join(', ')} WHEN NOT MATCHED THEN INSERT (${all.join(', ')}) VALUES (${all.map((c) => `SRC.${c}`).join(', ')})`,
    binds: [at],
  };
}

// ---- in BEGIN … COMMIT (snowflake): the record table first ----
//
// The driver's atomic writes lock the record table, then the history table (write-sql.ts: the
// record MERGE, then the history MERGE). A chunk in a transaction takes them in the same order, so
// a chunk and a concurrent write of the same schema wait for each other but never deadlock.

/**
 * The record table's MERGE straight from the stage: each staged id's next version (after the
 * history's highest and the live row's), its values, the chunk's time. UPSERT replaces or inserts,
 * INSERT only inserts (an existing id is left alone: refused), DELETE deletes.
 */
export function recordFirstMergeSql(layout: WarehouseLayout, operation: LoadOperation, at: string): Statement {
  const time = timeCast(layout);
  const joins = `FROM ${q(STAGE_TABLE)} S LEFT JOIN ${layout.table} L ON L.${ID} = S.${ID} LEFT JOIN ${maxVersions(layout)} M ON M.${ID} = S.${ID}`;
  if (operation === 'DELETE') {
    return { text: `MERGE INTO ${layout.table} AS TGT USING (SELECT S.${ID} AS ${ID} FROM ${q(STAGE_TABLE)} S) AS SRC ON TGT.${ID} = SRC.${ID} WHEN MATCHED THEN DELETE`, binds: [] };
  }
  const all = layout.columns.map((c) => q(c.name));
  const fields = layout.columns.filter((c) => c.field).map((c) => q(c.name));
  const select =
    `SELECT S.${ID} AS ${ID}, GREATEST(COALESCE(M.V, 0), COALESCE(L.${VERSION}, 0)) + 1 AS ${VERSION}, COALESCE(L.${CREATED}, ${time}) AS ${CREATED}, ${time} AS ${UPDATED}` +
    `${fields.map((f) => `, S.${f} AS ${f}`).join('')} ${joins}`;
  const sets = all.filter((c) => c !== ID).map((c) => `${c} = SRC.${c}`);
  const insert = `WHEN NOT MATCHED THEN INSERT (${all.join(', ')}) VALUES (${all.map((c) => `SRC.${c}`).join(', ')})`;
  return {
    text: `MERGE INTO ${layout.table} AS TGT USING (${select}) AS SRC ON TGT.${ID} = SRC.${ID} ${operation === 'UPSERT' ? `WHEN MATCHED THEN UPDATE SET ${sets.join(', ')} ` : ''}${insert}`,
    binds: [at, at],
  };
}

/**
 * The history rows of what recordFirstMergeSql did, in the same transaction: the record rows now
 * at the chunk's time (UPSERT, INSERT), or a tombstone after the latest version of each staged id
 * that had a live record and has none now (DELETE; an id already deleted ends in a tombstone).
 */
export function historyAfterRecordSql(layout: WarehouseLayout, operation: LoadOperation, at: string): Statement {
  const time = timeCast(layout);
  let select: string;
  let columns: string[];
  let binds: unknown[];
  if (operation === 'DELETE') {
    columns = [ID, VERSION, CREATED, UPDATED, DELETED];
    select =
      `SELECT S.${ID} AS ${ID}, H.${VERSION} + 1 AS ${VERSION}, H.${CREATED} AS ${CREATED}, ${time} AS ${UPDATED}, ${time} AS ${DELETED} ` +
      `FROM ${q(STAGE_TABLE)} S JOIN ${maxVersions(layout)} M ON M.${ID} = S.${ID} JOIN ${layout.history} H ON H.${ID} = S.${ID} AND H.${VERSION} = M.V ` +
      `WHERE H.${DELETED} IS NULL AND NOT EXISTS (SELECT 1 FROM ${layout.table} L WHERE L.${ID} = S.${ID})`;
    binds = [at, at];
  } else {
    columns = layout.columns.map((c) => q(c.name));
    select = `SELECT ${columns.map((c) => `R.${c} AS ${c}`).join(', ')} FROM ${layout.table} R JOIN ${q(STAGE_TABLE)} S ON S.${ID} = R.${ID} WHERE R.${UPDATED} = ${time}`;
    binds = [at];
  }
  return insertOnlyHistoryMerge(layout, select, columns, binds);
}

/** The history rows `select` gives (in `columns`), inserted where (id, version) is not there yet: a re-run adds nothing. */
function insertOnlyHistoryMerge(layout: WarehouseLayout, select: string, columns: string[], binds: unknown[]): Statement {
  return {
    text:
      `MERGE INTO ${layout.history} AS TGT USING (${select}) AS SRC ON TGT.${ID} = SRC.${ID} AND TGT.${VERSION} = SRC.${VERSION} ` +
      `WHEN NOT MATCHED THEN INSERT (${columns.join(', ')}) VALUES (${columns.map((c) => `SRC.${c}`).join(', ')})`,
    binds,
  };
}

/**
 * What the chunk wrote (INSERT and DELETE refuse ids): a first row `(0, written)`, then the first
 * refused staged rows `(1, row, id)` in row order — those without a history row of this chunk.
 */
export function outcomeSql(layout: WarehouseLayout, at: string, maxErrors: number): Statement {
  const time = timeCast(layout);
  const written =
    `SELECT 0 AS K, COUNT(W.${ID}) AS N, NULL AS I FROM ${q(STAGE_TABLE)} S LEFT JOIN ` +
    `(SELECT H.${ID} FROM ${layout.history} H JOIN ${q(STAGE_TABLE)} S3 ON S3.${ID} = H.${ID} WHERE H.${UPDATED} = ${time}) W ON W.${ID} = S.${ID}`;
  const refused = `SELECT 1 AS K, S.${q(ROW_COLUMN)} AS N, S.${ID} AS I FROM ${q(STAGE_TABLE)} S WHERE NOT ${chunkRowOf(layout, 'S')} ORDER BY S.${q(ROW_COLUMN)} LIMIT ${Math.max(0, Math.floor(maxErrors))}`;
  return { text: `${written} UNION ALL SELECT * FROM (${refused}) AS R`, binds: [at, at] };
}
