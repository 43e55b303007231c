/**
 * Bulk loads on the warehouse kinds: the transactions table (DAS_TRANSACTIONS in the dataset's
 * schema) and the chunk writer. Claims, renewals, cursor moves and finishes are conditional UPDATEs
 * whose row count says whether they won (the warehouse has no RETURNING and no SELECT … FOR UPDATE).
 *
 * A chunk (bulk-load-sql.ts): staged in a session's temporary table — its rows as one gzip CSV
 * file, PUT from memory on the session user's stage (@~/das_bulk/<dataset>/<transaction>/) and
 * loaded with COPY INTO (FORCE, PURGE, ON_ERROR = ABORT_STATEMENT) — then one history MERGE and
 * one record MERGE, then the cursor moved from `from` to `to`. Statements per chunk are fixed
 * whatever its size.
 * - snowflake: the MERGEs and the cursor move in one BEGIN … COMMIT; a run whose cursor move finds
 *   the cursor elsewhere (or the lease gone) rolls back, so a chunk is written once. The record
 *   MERGE comes first there (the lock order of the driver's atomic writes: no deadlock with one).
 * - iceberg: no transaction across the chunk's tables (table-format.ts), so the chunk is idempotent instead. Its
 *   time is chosen once, before any of its writes, and kept with the transaction (CHUNK_FROM,
 *   CHUNK_AT); every row it writes carries that time. A re-run after a crash reads the same time,
 *   and (1) the history MERGE skips every id that already has a history row at that time, so no
 *   version is written twice; (2) the record MERGE takes the record's version from that history
 *   row and changes only a live row older than it, so an applied id is left as it is; (3) the
 *   cursor moves last, conditional on `from`, so a chunk is either still due (and re-running it
 *   writes only what is missing) or done. What was written and refused is counted from the rows
 *   at the chunk's time, so a re-run reports the same progress as an uninterrupted run.
 */
import { DATAPLANE_DEFAULTS } from '../../../../model/settings/dataplane.js';
import type { DatasetConfig } from '../../../../model/types.js';
import { StoreError, type ActionProgress, type BulkLoadStore, type ChunkOutcome, type LoadChunk, type LoadCursor, type StatementContext, type StoredTransaction } from '../../engine/contract.js';
import { databaseSchemaFor } from '../sql/table-shape.js';
import {
  advanceSql,
  chunkStateSql,
  chunkTime,
  claimCandidatesSql,
  claimSql,
  createStageSql,
  copyIntoSql,
  createTransactionsTableSql,
  cursorText,
  finishSql,
  giveBackSql,
  historyAfterRecordSql,
  historyMergeSql,
  insertTransactionSql,
  listTransactionsSql,
  liveMergeSql,
  markChunkSql,
  moveCursorSql,
  outcomeSql,
  putSql,
  recordFirstMergeSql,
  renewSql,
  selectTransactionSql,
  stageDir,
  stageFile,
  stageFileName,
} from './bulk-load-sql.js';
import { warehouseSqlDialect } from './dialect.js';
import { outageOf } from './errors.js';
import { reportOutcomes } from '../bulk-load-outcomes.js';
import { appendChunkChangesSql } from './change-log.js';
import type { Statement, WarehouseLayout } from './layout.js';
import type { Session } from './sessions.js';
import type { TableFormat } from './table-format.js';
import { fromWarehouse } from './values.js';

/** What the bulk-load store needs from the driver: its table format, layouts and sessions. */
export interface WarehouseBulkLoadHost {
  format(): TableFormat;
  layout(dataset: DatasetConfig, schema: string): WarehouseLayout;
  /** A session on the dataset's warehouse, or the executor's (ctx.warehouse). */
  withSession<T>(dataset: DatasetConfig, ctx: StatementContext | undefined, fn: (session: Session) => Promise<T>): Promise<T>;
  /** A chunk appended changes to the dataset's change log. */
  wrote?(dataset: DatasetConfig): void;
  /**
   * After a claim found nothing, how long a dataset is not asked again (unless this process
   * created or gave back a transaction in it since): a claim is a query, and polling every few
   * seconds would keep a warehouse from ever suspending (DAS_BULK_WAREHOUSE_POLL_MS, default
   * 5 minutes). A load this replica creates starts at once; a claim that saw another replica's
   * lease looks again when that lease runs out, so a load left by a replica that died is taken up
   * then; one created on another replica that has not started it waits up to this long.
   */
  idleClaimMs?(): number;
}

/** The default pause between claims that find nothing. */
export const DEFAULT_IDLE_CLAIM_MS = DATAPLANE_DEFAULTS.DAS_BULK_WAREHOUSE_POLL_MS;

type Row = Record<string, unknown>;
/** Snowflake's code for an object that does not exist (the transactions table before the first create). */
const MISSING = '002003';
const CANDIDATES = 5;

export class WarehouseBulkLoad implements BulkLoadStore {
  /** Datasets (by database and schema) whose transactions table is known to exist. */
  private readonly ready = new Set<string>();
  /** Per dataset: no claim is tried before this time (a claim found nothing). */
  private readonly quietUntil = new Map<string, number>();
  /**
   * Per dataset: transactions created by this replica so far. A claim that found nothing pauses the
   * dataset only if none was created while it looked: its SELECT may have run before a create
   * committed, and the pause must not hold that transaction back.
   */
  private readonly created = new Map<string, number>();

  constructor(private readonly host: WarehouseBulkLoadHost) {
    // Every method reports an unreachable warehouse as the store outcome `unavailable`.
    reportOutcomes(this, (err) => outageOf(err) ?? err);
  }

  private idleClaimMs(): number {
    return this.host.idleClaimMs?.() ?? DEFAULT_IDLE_CLAIM_MS;
  }

  private dbSchema(dataset: DatasetConfig): string {
    return databaseSchemaFor(dataset, warehouseSqlDialect(this.host.format()));
  }

  /** The dataset's stored data was dropped (deletionPolicy: Delete): its transactions table is gone too. */
  forget(dataset: DatasetConfig): void {
    this.ready.delete(this.key(dataset));
    this.quietUntil.delete(dataset.id);
  }

  private key(dataset: DatasetConfig): string {
    return JSON.stringify([dataset.location.accessUrl, dataset.location.account, dataset.location.database, this.dbSchema(dataset)]);
  }

  /** Runs statements on one session of the dataset's own warehouse. */
  private session<T>(dataset: DatasetConfig, fn: (run: Runner) => Promise<T>, ctx?: StatementContext): Promise<T> {
    return this.host.withSession(dataset, ctx, (session) => fn(runner(session)));
  }

  /** Reads of a table that does not exist yet (no transaction was ever created) answer nothing. */
  private async reading<T>(dataset: DatasetConfig, fn: (run: Runner) => Promise<T>, none: T): Promise<T> {
    try {
      return await this.session(dataset, fn);
    } catch (err) {
      if (codeOf(err) === MISSING && !this.ready.has(this.key(dataset))) return none;
      throw err;
    }
  }

  async create(dataset: DatasetConfig, tx: Pick<StoredTransaction, 'id' | 'spec'>): Promise<StoredTransaction> {
    const dbSchema = this.dbSchema(dataset);
    const now = new Date().toISOString();
    const progress = tx.spec.actions.map(emptyProgress);
    const inserted = await this.session(dataset, async (run) => {
      if (!this.ready.has(this.key(dataset))) {
        for (const ddl of createTransactionsTableSql(dbSchema)) await run(ddl);
        this.ready.add(this.key(dataset));
      }
      return count(await run(insertTransactionSql(dbSchema, tx, progress, now)), 'number of rows inserted');
    });
    if (inserted !== 1) throw new StoreError({ kind: 'exists', schema: 'Transaction', id: tx.id });
    this.created.set(dataset.id, (this.created.get(dataset.id) ?? 0) + 1);
    this.quietUntil.delete(dataset.id);
    return { id: tx.id, status: 'PENDING', spec: tx.spec, progress, cursor: { action: 0, file: 0, row: 0 }, createdAt: now, updatedAt: now };
  }

  async get(dataset: DatasetConfig, id: string): Promise<StoredTransaction | undefined> {
    const rows = await this.reading(dataset, (run) => run(selectTransactionSql(this.dbSchema(dataset), id)), []);
    return rows[0] ? fromRow(rows[0]) : undefined;
  }

  async list(dataset: DatasetConfig, query: { status?: string; descending: boolean; limit: number; after?: [string, string] }): Promise<StoredTransaction[]> {
    const rows = await this.reading(dataset, (run) => run(listTransactionsSql(this.dbSchema(dataset), query)), []);
    return rows.map(fromRow);
  }

  async claim(dataset: DatasetConfig, owner: string, leaseMs: number): Promise<StoredTransaction | undefined> {
    if ((this.quietUntil.get(dataset.id) ?? 0) > Date.now()) return undefined;
    const createdBefore = this.created.get(dataset.id) ?? 0;
    const dbSchema = this.dbSchema(dataset);
    /** When to look again if nothing is claimed: after the idle pause, or when a lease held now runs out if sooner. */
    let lookAgain = Date.now() + this.idleClaimMs();
    const claimed = await this.reading(
      dataset,
      async (run) => {
        const now = new Date();
        const candidates = await run(claimCandidatesSql(dbSchema, now.toISOString(), CANDIDATES));
        for (const candidate of candidates) {
          if (Number(candidate.READY) !== 1) {
            const expires = Date.parse(String(fromWarehouse(candidate.LEASE_EXPIRES_AT, 'TIMESTAMP_TZ')));
            if (Number.isFinite(expires)) lookAgain = Math.min(lookAgain, expires + 1);
            continue;
          }
          const id = String(candidate.ID);
          // Another replica may take it between the SELECT and the UPDATE: the UPDATE's condition decides.
          if (count(await run(claimSql(dbSchema, id, owner, now.toISOString(), expiry(now, leaseMs))), 'number of rows updated') === 1) {
            const [row] = await run(selectTransactionSql(dbSchema, id));
            return row ? fromRow(row) : undefined;
          }
        }
        return undefined;
      },
      undefined,
    );
    if (!claimed && (this.created.get(dataset.id) ?? 0) === createdBefore) this.quietUntil.set(dataset.id, lookAgain);
    return claimed;
  }

  async renew(dataset: DatasetConfig, id: string, owner: string, leaseMs: number): Promise<boolean> {
    const rows = await this.session(dataset, (run) => run(renewSql(this.dbSchema(dataset), id, owner, expiry(new Date(), leaseMs))));
    return count(rows, 'number of rows updated') === 1;
  }

  async advance(dataset: DatasetConfig, id: string, owner: string, cursor: LoadCursor, progress: ActionProgress[]): Promise<boolean> {
    const rows = await this.session(dataset, (run) => run(advanceSql(this.dbSchema(dataset), id, owner, cursor, progress, new Date().toISOString())));
    return count(rows, 'number of rows updated') === 1;
  }

  async finish(dataset: DatasetConfig, id: string, owner: string, outcome: { status: 'SUCCEEDED' | 'FAILED'; error?: string; progress: ActionProgress[] } | undefined): Promise<void> {
    const dbSchema = this.dbSchema(dataset);
    const now = new Date().toISOString();
    await this.session(dataset, (run) => run(outcome ? finishSql(dbSchema, id, owner, outcome, now) : giveBackSql(dbSchema, id, owner, now)));
    // Given back: claimable again at once (by this process too).
    if (!outcome) this.quietUntil.delete(dataset.id);
  }

  /** The chunk on one session (the staging table is the session's), on the transaction's executor's warehouse. */
  async loadChunk(dataset: DatasetConfig, chunk: LoadChunk): Promise<ChunkOutcome> {
    const layout = this.host.layout(dataset, chunk.schema);
    const progress = structuredClone(chunk.progress);
    const { records, duplicates } = dedupe(chunk.records, chunk.operation);
    for (const d of duplicates) reject(progress, chunk.maxErrors, d.row, `id "${d.id}" appears earlier in the same chunk; INSERT keeps the first`);
    const write: ChunkWrite = { datasetId: dataset.id, dbSchema: this.dbSchema(dataset), layout, chunk, records, progress, wrote: () => this.host.wrote?.(dataset) };
    return this.host.withSession(dataset, chunk.ctx, (session) => (this.host.format().transactions ? inTransaction(session, write) : idempotent(session, write)));
  }
}

interface ChunkWrite {
  datasetId: string;
  dbSchema: string;
  layout: WarehouseLayout;
  chunk: LoadChunk;
  /** One per id (dedupe). */
  records: LoadChunk['records'];
  /** The action's progress, with the chunk's duplicates refused. */
  progress: ActionProgress;
  /** Tells the change feed the dataset has new changes (pruning). */
  wrote: () => void;
}

type Runner = (statement: Statement | string | { text: string; binds: unknown[][] }) => Promise<Row[]>;

function runner(session: Session): Runner {
  return async (statement) => {
    const { text, binds } = typeof statement === 'string' ? { text: statement, binds: [] } : statement;
    return (await session.exec(text, { binds, rowMode: 'object' })).rows as Row[];
  };
}

/**
 * The session's staging table (re)created and filled: the chunk's file PUT on the user stage (on
 * this session: the stage is its user's), then COPY INTO, which purges the file.
 */
async function fillStage(session: Session, { datasetId, layout, chunk, records }: ChunkWrite): Promise<void> {
  const run = runner(session);
  const dir = stageDir(datasetId, chunk.transaction);
  const file = stageFileName(chunk.from, records.length);
  await run(createStageSql(layout, chunk.operation));
  await session.exec(putSql(dir, file), { fileStream: stageFile(layout, chunk.operation, records) }).catch((err: unknown) => {
    // The SDK's upload to the stage's storage failed after its own retries (an error with no
    // Snowflake code): the store is out of reach, so the load pauses and is taken up again later.
    if (codeOf(err) === '') throw new StoreError({ kind: 'unavailable', detail: `Snowflake stage upload: ${(err as Error).message}` });
    throw err;
  });
  await run(copyIntoSql(layout, chunk.operation, dir, file));
}

/** What the stored state says about a chunk starting at `from`, or its outcome when it is not this runner's to write. */
function checkState(state: Row | undefined, chunk: LoadChunk): ChunkOutcome | undefined {
  if (!state || state.LEASE_OWNER !== chunk.owner || state.STATUS !== 'RUNNING') return { kind: 'lease-lost' };
  if (state.LOAD_CURSOR !== cursorText(chunk.from)) return { kind: 'already-committed' };
  return undefined;
}

/**
 * The records' writes and what they add to the progress (the stage is filled already). In a
 * transaction the record table first (the driver's writes' lock order); without one the history
 * first, so that a re-run finds the chunk's versions there (see the top).
 */
async function writeRecords(run: Runner, { dbSchema, layout, chunk, records, progress }: ChunkWrite, at: string, inTransaction: boolean): Promise<void> {
  if (inTransaction) {
    await run(recordFirstMergeSql(layout, chunk.operation, at));
    await run(historyAfterRecordSql(layout, chunk.operation, at));
  } else {
    await run(historyMergeSql(layout, chunk.operation, at));
    await run(liveMergeSql(layout, chunk.operation, at));
  }
  // The chunk's versions in the change log (insert-only: a re-run adds nothing).
  await run(appendChunkChangesSql(dbSchema, layout.history, layout.schemaName, `${chunk.transaction}:${cursorText(chunk.from)}`, at, layout.cast(layout.columns[2].sqlType)));
  if (chunk.operation === 'UPSERT') {
    progress.rowsWritten += records.length;
    return;
  }
  // INSERT refuses ids that exist, DELETE ids that do not: the rows without a history row of this chunk.
  const rows = await run(outcomeSql(layout, at, chunk.maxErrors));
  const written = Number(rows.find((r) => Number(r.K) === 0)?.N ?? 0);
  progress.rowsWritten += written;
  const samples = rows.filter((r) => Number(r.K) === 1);
  progress.rowsRejected += records.length - written - samples.length;
  for (const s of samples) reject(progress, chunk.maxErrors, Number(s.N), chunk.operation === 'INSERT' ? `a record with id "${String(s.I)}" exists` : `no record with id "${String(s.I)}"`);
}

/** The action's progress replaced in the stored array. */
function withProgress(stored: unknown, action: number, progress: ActionProgress): ActionProgress[] {
  const all = JSON.parse(String(stored ?? '[]')) as ActionProgress[];
  all[action] = progress;
  return all;
}

/**
 * snowflake: the staging table filled outside the transaction (Snowflake commits an open
 * transaction before DDL: the CREATE; PUT is not transactional; the COPY INTO only fills the
 * session's temporary table, which the chunk rebuilds on a re-run), then everything else in one
 * BEGIN … COMMIT.
 */
async function inTransaction(session: Session, write: ChunkWrite): Promise<ChunkOutcome> {
  const run = runner(session);
  const { dbSchema, chunk, records, progress } = write;
  if (records.length) await fillStage(session, write);
  await run('BEGIN');
  try {
    const [state] = await run(chunkStateSql(dbSchema, chunk.transaction));
    const settled = checkState(state, chunk);
    if (settled) {
      await run('ROLLBACK');
      return settled;
    }
    // Inside one transaction no earlier attempt left rows: the time only has to be new.
    if (records.length) await writeRecords(run, write, chunkTime(), true);
    if (records.length) write.wrote();
    const now = new Date();
    const moved = count(await run(moveCursorSql(dbSchema, chunk, withProgress(state.PROGRESS, chunk.from.action, progress), now.toISOString(), expiry(now, chunk.leaseMs))), 'number of rows updated');
    if (moved !== 1) {
      await run('ROLLBACK');
      return { kind: 'lease-lost' };
    }
    await run('COMMIT');
    return { kind: 'committed', progress };
  } catch (err) {
    if (outageOf(err)) session.broken = true; // the transaction's fate is the warehouse's: the session is not reused
    else await run('ROLLBACK').catch(() => (session.broken = true));
    throw err;
  }
}

/** iceberg: no BEGIN/COMMIT; the chunk's time chosen once and kept, every write idempotent, the cursor last (see the top). */
async function idempotent(session: Session, write: ChunkWrite): Promise<ChunkOutcome> {
  const run = runner(session);
  const { dbSchema, chunk, records, progress } = write;
  const [state] = await run(chunkStateSql(dbSchema, chunk.transaction));
  const settled = checkState(state, chunk);
  if (settled) return settled;
  let at = state.CHUNK_FROM === cursorText(chunk.from) && typeof state.CHUNK_AT === 'string' ? state.CHUNK_AT : undefined;
  if (!at) {
    at = chunkTime();
    if (count(await run(markChunkSql(dbSchema, chunk.transaction, chunk.owner, chunk.from, at)), 'number of rows updated') !== 1) return { kind: 'lease-lost' };
  }
  if (records.length) {
    await fillStage(session, write);
    await writeRecords(run, write, at, false);
    write.wrote();
  }
  const now = new Date();
  const moved = count(await run(moveCursorSql(dbSchema, chunk, withProgress(state.PROGRESS, chunk.from.action, progress), now.toISOString(), expiry(now, chunk.leaseMs))), 'number of rows updated');
  // Not moved: another runner holds the transaction now; what this one wrote is what it writes too.
  return moved === 1 ? { kind: 'committed', progress } : { kind: 'lease-lost' };
}

function count(rows: Row[], column: string): number {
  return Number(rows[0]?.[column] ?? 0);
}

function codeOf(err: unknown): string {
  return String((err as { code?: unknown } | undefined)?.code ?? '');
}

const expiry = (now: Date, leaseMs: number) => new Date(now.getTime() + leaseMs).toISOString();

export function emptyProgress(): ActionProgress {
  return { rowsRead: 0, rowsWritten: 0, rowsRejected: 0, bytesRead: 0, errors: [] };
}

function reject(progress: ActionProgress, maxErrors: number, row: number, message: string): void {
  progress.rowsRejected += 1;
  if (progress.errors.length < maxErrors) progress.errors.push({ row, message });
}

/** One row per id: the last wins for UPSERT and DELETE; INSERT keeps the first and refuses the rest. */
export function dedupe(records: LoadChunk['records'], operation: LoadChunk['operation']) {
  const byId = new Map<string, LoadChunk['records'][number]>();
  const duplicates: LoadChunk['records'] = [];
  for (const r of records) {
    if (byId.has(r.id) && operation === 'INSERT') duplicates.push(r);
    else {
      byId.delete(r.id);
      byId.set(r.id, r);
    }
  }
  return { records: [...byId.values()], duplicates };
}

function fromRow(row: Row): StoredTransaction {
  const time = (v: unknown) => (v === null || v === undefined ? undefined : String(fromWarehouse(v, 'TIMESTAMP_TZ')));
  return {
    id: String(row.ID),
    status: row.STATUS as StoredTransaction['status'],
    spec: JSON.parse(String(row.SPEC)),
    progress: JSON.parse(String(row.PROGRESS)),
    cursor: JSON.parse(String(row.LOAD_CURSOR)),
    ...(row.ERROR ? { error: String(row.ERROR) } : {}),
    createdAt: time(row.CREATED_AT)!,
    updatedAt: time(row.UPDATED_AT)!,
    ...(row.STARTED_AT ? { startedAt: time(row.STARTED_AT) } : {}),
    ...(row.FINISHED_AT ? { finishedAt: time(row.FINISHED_AT) } : {}),
    ...(row.LEASE_OWNER ? { leaseOwner: String(row.LEASE_OWNER), leaseExpiresAt: time(row.LEASE_EXPIRES_AT) } : {}),
    ...(Number(row.LOST_LEASES) > 0 ? { lostLeases: Number(row.LOST_LEASES) } : {}),
  };
}
