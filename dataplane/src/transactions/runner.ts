/**
 * Runs transactions in the background. Every data plane runs one: it claims a PENDING transaction
 * (or a RUNNING one whose lease expired: its replica died) in each dataset's store, reads its
 * files a chunk at a time and hands each chunk to the store with the cursor it starts at, so a
 * chunk is written exactly once whoever runs it. Stopping (shutdown) gives the transaction back.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { DatasetConfig } from '../../../model/types.js';
import type { DataPlaneSettings } from '../../../model/settings/dataplane.js';
import type { ActionProgress, BulkLoadStore, LoadChunk, LoadCursor, LocationDriver, StatementContext, StoredTransaction } from '../engine/contract.js';
import { isUnavailable } from '../engine/store-outcomes.js';
import { pipelined, yieldToIo } from './pipeline.js';
import { fileLimits, storableMessage, type FileLimits } from './limits.js';
import { FormatError, readChunks, type Format, type RawChunk } from './readers.js';
import { rowMapper } from './rows.js';
import { openLocation, SourceError, type SourceSettings } from './sources.js';
import type { BulkLoadMetrics } from '../metrics.js';

/** Rows mapped between two looks at pending I/O (so the chunk being written is not held up). */
const MAP_SLICE = 1000;

/** A chunk ready to write: its records, and what it adds to the action's progress before its writes. */
interface PreparedChunk {
  records: LoadChunk['records'];
  rowsRead: number;
  bytesRead: number;
  /** Rows refused in mapping, and the first of them (at most maxErrors). */
  rejected: number;
  refused: ActionProgress['errors'];
  end: number;
}

export interface RunnerOptions {
  logger: Logger;
  /** Datasets served now (ready ones; paused ones are left out: their loads wait). */
  datasets: () => DatasetConfig[];
  /** Whether a dataset is paused now: a load under way stops at its next chunk and is given back. */
  paused?: (datasetId: string) => boolean;
  driverFor: (dataset: DatasetConfig) => LocationDriver;
  sources: SourceSettings;
  /** Rows per chunk (one database transaction each). */
  chunkRows?: number;
  /** How long a claim holds without renewal; another replica takes over after it. */
  leaseMs?: number;
  pollMs?: number;
  /** Transactions this process runs at once. */
  concurrency?: number;
  /** The first errors kept per action (DAS_BULK_MAX_ERRORS). */
  maxErrors?: number;
  /** Leases a transaction may lose (its replica stopped mid-load) before it FAILs instead of being claimed again (DAS_BULK_MAX_LOST_LEASES). */
  maxLostLeases?: number;
  /** What a file may declare (DAS_BULK_MAX_* budgets: limits.ts). */
  fileLimits?: FileLimits;
  /** The environment's executors now: a transaction created with one runs its statements on its warehouse. */
  executors?: () => readonly { name: string; warehouse?: string }[];
  /** Rows and outcomes counted for GET /metrics (metrics.ts). */
  metrics?: BulkLoadMetrics;
}

/** Runner settings (DAS_BULK_*). DAS_BULK_MAX_ERRORS is at most 100: each stored error is at most 500 characters, so a Transaction record stays under ~60 KB per action. */
export function runnerSettings(s: DataPlaneSettings): Pick<RunnerOptions, 'chunkRows' | 'leaseMs' | 'pollMs' | 'concurrency' | 'maxErrors' | 'maxLostLeases' | 'fileLimits'> {
  return {
    chunkRows: s.DAS_BULK_CHUNK_ROWS,
    leaseMs: s.DAS_BULK_LEASE_MS,
    pollMs: s.DAS_BULK_POLL_MS,
    concurrency: s.DAS_BULK_CONCURRENCY,
    maxErrors: s.DAS_BULK_MAX_ERRORS,
    maxLostLeases: s.DAS_BULK_MAX_LOST_LEASES,
    fileLimits: fileLimits(s),
  };
}

export class TransactionRunner {
  readonly owner = `${process.pid}-${randomUUID().slice(0, 8)}`;
  private readonly running = new Set<Promise<void>>();

  /** Loads this process runs now. */
  get runningCount(): number {
    return this.running.size;
  }
  private timer: NodeJS.Timeout | undefined;
  private stopping = false;
  private ticking = false;
  private again = false;

  constructor(private readonly options: RunnerOptions) {}

  private get leaseMs() {
    return this.options.leaseMs ?? 30_000;
  }

  start(): void {
    this.timer = setInterval(() => this.kick(), this.options.pollMs ?? 2000);
    this.timer.unref();
    this.kick();
  }

  /** Looks for work now (after a create). */
  kick(): void {
    if (this.stopping) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = true;
    void this.tick()
      .catch((err: unknown) => this.options.logger.warn({ err: (err as Error).message }, 'transactions: claiming failed'))
      .finally(() => {
        this.ticking = false;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  private async tick(): Promise<void> {
    for (const dataset of this.options.datasets()) {
      const driver = this.options.driverFor(dataset);
      if (!driver.capabilities.bulkLoad || !driver.bulkLoad) continue;
      while (!this.stopping && this.running.size < (this.options.concurrency ?? 2)) {
        let tx: StoredTransaction | undefined;
        try {
          tx = await driver.bulkLoad.claim(dataset, this.owner, this.leaseMs);
        } catch (err) {
          if (!isUnavailable(err)) this.options.logger.warn({ dataset: dataset.id, err: (err as Error).message }, 'transactions: claim failed');
          break;
        }
        if (!tx) break;
        const run = this.run(dataset, driver.bulkLoad, tx).finally(() => {
          this.running.delete(run);
          this.kick();
        });
        this.running.add(run);
      }
    }
  }

  /** Stops claiming; running loads give their transaction back at the next chunk. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    await Promise.all([...this.running]);
  }

  /** The executor the transaction was created with, resolved now (one removed from the environment since fails the load). */
  private executorContext(tx: StoredTransaction): StatementContext | undefined {
    const name = tx.spec.executor;
    if (!name) return undefined;
    const executor = this.options.executors?.().find((e) => e.name === name);
    if (!executor) throw new SourceError('SOURCE_UNREADABLE', `the executor "${name}" the transaction was created with is no longer in the environment`);
    return { executor: name, ...(executor.warehouse ? { warehouse: executor.warehouse } : {}) };
  }

  private async run(dataset: DatasetConfig, store: BulkLoadStore, tx: StoredTransaction): Promise<void> {
    const log = this.options.logger.child({ dataset: dataset.id, transaction: tx.id });
    log.info({ cursor: tx.cursor }, 'transaction claimed');
    const progress = tx.progress;
    const lostLeases = tx.lostLeases ?? 0;
    if (lostLeases >= (this.options.maxLostLeases ?? 3)) {
      // Its replica stopped (a crash, an abort, a kill) that many times while loading: the file may be what stops them.
      const { action, file, row } = tx.cursor;
      const where = tx.spec.actions[action] ? `${tx.spec.actions[action].locationUri}, file ${file + 1} of the location, after row ${row}` : 'its last file';
      const error = storableMessage(`a replica stopped while loading this file (${where}) ${lostLeases} times; not claimed again (DAS_BULK_MAX_LOST_LEASES)`);
      log.error({ lostLeases }, 'transaction failed: its replicas kept stopping');
      await store.finish(dataset, tx.id, this.owner, { status: 'FAILED', error, progress }).catch(() => undefined);
      this.options.metrics?.finished(dataset.id, 'FAILED');
      return;
    }
    let lost = false;
    // Renewed between chunks too: reading one row group may take longer than a chunk's write.
    const renewal = setInterval(() => {
      store.renew(dataset, tx.id, this.owner, this.leaseMs).then(
        (held) => void (lost ||= !held),
        () => undefined,
      );
    }, Math.max(50, Math.floor(this.leaseMs / 3)));
    renewal.unref();
    const giveBack = async (why: string) => {
      log.info({ why }, 'transaction given back');
      if (!lost) await store.finish(dataset, tx.id, this.owner, undefined).catch(() => undefined);
    };
    try {
      const ctx = this.executorContext(tx);
      const { actions } = tx.spec;
      for (let a = tx.cursor.action; a < actions.length; a++) {
        const action = actions[a];
        if (!Object.hasOwn(dataset.schemas, action.schema)) throw new SourceError('SOURCE_UNREADABLE', `the dataset has no schema "${action.schema}" any more`);
        const files = await openLocation(action.locationUri, this.options.sources);
        const map = rowMapper(dataset, action.schema, action.operation, this.options.driverFor(dataset).capabilities);
        for (let f = a === tx.cursor.action ? tx.cursor.file : 0; f < files.length; f++) {
          let row = a === tx.cursor.action && f === tx.cursor.file ? tx.cursor.row : 0;
          const chunks = readChunks(files[f], action.format as Format, row, this.options.chunkRows ?? 10_000, this.options.fileLimits);
          // Each chunk is read, decoded and mapped while the previous one is written (pipeline.ts):
          // mapping yields what the chunk adds to the progress, applied when the chunk is written.
          const maxErrors = this.options.maxErrors ?? 10;
          const prepare = async (chunk: RawChunk): Promise<PreparedChunk> => {
            const refused: PreparedChunk['refused'] = [];
            let rejected = 0;
            const records: LoadChunk['records'] = [];
            for (let i = 0; i < chunk.rows.length; i++) {
              if (i > 0 && i % MAP_SLICE === 0) await yieldToIo();
              const raw = chunk.rows[i];
              const mapped = raw.value ? map(raw.value) : { problem: raw.problem ?? 'unreadable row' };
              if ('id' in mapped) records.push({ id: mapped.id, data: mapped.data, row: raw.row });
              else {
                rejected += 1;
                // Stored with the transaction: sanitized and bounded, whatever the row held.
                if (refused.length < maxErrors) refused.push({ row: raw.row, source: files[f].name, message: storableMessage(mapped.problem), ...(mapped.path ? { path: storableMessage(mapped.path, 300) } : {}) });
              }
            }
            return { records, rowsRead: chunk.rows.length, bytesRead: chunk.bytes, rejected, refused, end: chunk.end };
          };
          let stopped: (() => Promise<void>) | undefined;
          const stop = (then: () => Promise<void>) => {
            stopped = then;
            return false;
          };
          await pipelined(chunks, prepare, async ({ records, rowsRead, bytesRead, rejected, refused, end }) => {
            if (this.stopping) return stop(() => giveBack('shutting down'));
            if (this.options.paused?.(dataset.id)) return stop(() => giveBack('dataset paused'));
            if (lost) return stop(async () => log.warn('lease lost: another replica runs the transaction'));
            const previous = progress[a];
            const before: ActionProgress = structuredClone(previous);
            before.rowsRead += rowsRead;
            before.bytesRead += bytesRead;
            before.rowsRejected += rejected;
            before.errors.push(...refused.slice(0, Math.max(0, maxErrors - before.errors.length)));
            const from: LoadCursor = { action: a, file: f, row };
            const to: LoadCursor = { action: a, file: f, row: end };
            const outcome = await store.loadChunk(dataset, {
              transaction: tx.id,
              owner: this.owner,
              leaseMs: this.leaseMs,
              schema: action.schema,
              operation: action.operation,
              records,
              from,
              to,
              progress: before,
              maxErrors,
              ...(ctx ? { ctx } : {}),
            });
            if (outcome.kind !== 'committed') {
              lost = true;
              return stop(async () => log.warn({ outcome: outcome.kind }, 'chunk not written: another replica holds the transaction'));
            }
            progress[a] = outcome.progress;
            this.options.metrics?.chunk(dataset.id, {
              read: rowsRead,
              written: outcome.progress.rowsWritten - previous.rowsWritten,
              rejected: outcome.progress.rowsRejected - previous.rowsRejected,
            });
            row = end;
            return true;
          });
          if (stopped) return await stopped();
          const last = a === actions.length - 1 && f === files.length - 1;
          if (!last) {
            const next: LoadCursor = f + 1 < files.length ? { action: a, file: f + 1, row: 0 } : { action: a + 1, file: 0, row: 0 };
            if (!(await store.advance(dataset, tx.id, this.owner, next, progress))) return void (lost = true);
          }
        }
      }
      const nothing = nothingWritten(progress);
      if (nothing) {
        log.warn({ progress: progress.map(({ errors: _e, ...p }) => p) }, 'transaction failed: every row was refused');
        await store.finish(dataset, tx.id, this.owner, { status: 'FAILED', error: storableMessage(nothing), progress });
        this.options.metrics?.finished(dataset.id, 'FAILED');
        return;
      }
      await store.finish(dataset, tx.id, this.owner, { status: 'SUCCEEDED', progress });
      this.options.metrics?.finished(dataset.id, 'SUCCEEDED');
      log.info({ progress: progress.map(({ errors: _e, ...p }) => p) }, 'transaction succeeded');
    } catch (err) {
      if (isUnavailable(err)) {
        // The store went away: the lease runs out and a replica (maybe this one) continues later.
        log.warn({ err: (err as Error).message }, 'transaction paused: store unreachable');
        return;
      }
      const message = storableMessage(err instanceof SourceError || err instanceof FormatError ? err.message : `load failed: ${(err as Error).message}`);
      if (!(err instanceof SourceError || err instanceof FormatError)) log.error({ err }, 'transaction failed');
      await store.finish(dataset, tx.id, this.owner, { status: 'FAILED', error: message, progress }).catch(() => undefined);
      this.options.metrics?.finished(dataset.id, 'FAILED');
    } finally {
      clearInterval(renewal);
    }
  }
}

/**
 * Why a load that read rows but wrote none is no success: every row was refused (a file in a
 * format other than the one declared, a mapping that matches nothing). A load that read no row
 * at all (empty files, a CSV header alone) did all it was asked: it SUCCEEDs with 0 rows.
 */
export function nothingWritten(progress: readonly ActionProgress[]): string | undefined {
  const written = progress.reduce((n, p) => n + p.rowsWritten, 0);
  const refused = progress.reduce((n, p) => n + p.rowsRejected, 0);
  if (written > 0 || refused === 0) return undefined;
  // The earliest row of the first action that refused any (mapping and the store each list theirs).
  const first = progress.find((p) => p.errors.length)?.errors.reduce((a, b) => (b.row < a.row ? b : a));
  const where = first ? `; the first, row ${first.row}${first.source ? ` of ${first.source}` : ''}: ${first.message}` : '';
  return `no row was written: all ${refused} row${refused === 1 ? ' was' : 's were'} refused${where}`;
}
