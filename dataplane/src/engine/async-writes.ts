/**
 * ASYNC writes: acknowledged with 202 at once, written in the background.
 *
 * - A write the store cannot take right now (STORE_UNAVAILABLE) is retried with backoff until it
 *   lands, so an outage delays ASYNC writes instead of dropping them.
 * - A write the store refuses for a reason of its own (a taken id, a missing record) cannot
 *   succeed by retrying: it is logged at error level with its dataset, schema and id.
 * - The queue is bounded (operations held in memory): past the bound, a new ASYNC request is
 *   answered 503 with Retry-After rather than growing memory without limit.
 * - Shutdown drains the queue: retries go on until the deadline, and whatever is still unwritten
 *   then is logged, one error line per operation, so nothing is lost silently. A crash
 *   (SIGKILL, OOM) loses what is queued: ASYNC trades that for the early acknowledgement.
 */
import type { Logger } from 'pino';
import type { DatasetConfig } from '../../../model/types.js';
import type { LocationDriver, OpResult, StatementContext, WriteOp } from './contract.js';
import { ApiError } from './errors.js';
import { apiErrorOf, isUnavailable } from './store-outcomes.js';

export interface AsyncWriterOptions {
  /** Operations that may wait in memory at once (default 20,000). */
  maxQueuedOps?: number;
  /** First retry delay; doubles up to maxRetryDelayMs. */
  retryDelayMs?: number;
  maxRetryDelayMs?: number;
}

interface Job {
  dataset: DatasetConfig;
  driver: LocationDriver;
  ops: WriteOp[];
  ctx?: StatementContext;
}

export class AsyncWriter {
  private queued = 0;
  private notWritten = 0;
  private readonly running = new Set<Promise<void>>();
  private readonly timers = new Set<{ timer: NodeJS.Timeout; wake: () => void }>();
  private deadline = Infinity;
  private readonly maxQueued: number;
  private readonly firstDelay: number;
  private readonly maxDelay: number;

  constructor(
    private readonly logger: Logger,
    options: AsyncWriterOptions = {},
  ) {
    this.maxQueued = options.maxQueuedOps ?? 20_000;
    this.firstDelay = options.retryDelayMs ?? 200;
    this.maxDelay = options.maxRetryDelayMs ?? 5_000;
  }

  /** Operations accepted and not yet written. */
  get pending(): number {
    return this.queued;
  }

  /** Takes the ops for background writing, or throws 503 when the queue is full or draining. */
  accept(job: Job): void {
    if (this.deadline !== Infinity) throw new ApiError(503, 'SHUTTING_DOWN', 'this replica is shutting down; send the write again (it goes to another replica)', [], 1);
    if (this.queued + job.ops.length > this.maxQueued) {
      throw new ApiError(503, 'ASYNC_QUEUE_FULL', `${this.queued} ASYNC operations are waiting to be written; retry shortly or use a synchronous consistency level`, [], 2);
    }
    this.queued += job.ops.length;
    const work = this.run(job).finally(() => this.running.delete(work));
    this.running.add(work);
  }

  private async run(job: Job): Promise<void> {
    let ops = job.ops;
    let delay = this.firstDelay;
    for (;;) {
      let results: OpResult[];
      try {
        results = await job.driver.write(job.dataset, ops, 'QUORUM', { ...job.ctx, background: true });
      } catch (err) {
        if (!isUnavailable(err)) {
          this.lost(job, ops, err instanceof Error ? err.message : String(err));
          return;
        }
        results = ops.map(() => ({ ok: false as const, failure: { kind: 'unavailable' as const, detail: (err as Error).message } }));
      }
      const retry: WriteOp[] = [];
      for (const [i, r] of results.entries()) {
        if (r.ok) this.queued--;
        else if (r.failure.kind === 'unavailable') retry.push(ops[i]);
        else {
          this.queued--;
          const error = apiErrorOf(r.failure);
          this.logger.error({ dataset: job.dataset.id, schema: ops[i].schema, id: ops[i].id, op: ops[i].op, code: error.code }, `ASYNC write refused by the store: ${error.message}`);
        }
      }
      if (!retry.length) return;
      if (Date.now() + delay > this.deadline) {
        this.lost(job, retry, 'the store was still unreachable when the shutdown deadline passed');
        return;
      }
      this.logger.warn({ dataset: job.dataset.id, ops: retry.length, retryInMs: delay }, 'ASYNC write waiting for the store');
      await this.sleep(delay);
      ops = retry;
      delay = Math.min(delay * 2, this.maxDelay);
    }
  }

  private lost(job: Job, ops: WriteOp[], why: string): void {
    this.queued -= ops.length;
    this.notWritten += ops.length;
    for (const op of ops) this.logger.error({ dataset: job.dataset.id, schema: op.schema, id: op.id, op: op.op }, `ASYNC write NOT written: ${why}`);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const entry = {
        timer: setTimeout(() => {
          this.timers.delete(entry);
          resolve();
        }, ms),
        wake: () => {
          clearTimeout(entry.timer);
          this.timers.delete(entry);
          resolve();
        },
      };
      this.timers.add(entry);
    });
  }

  /**
   * Stops taking new work and waits for the queue to empty, retrying until `deadlineMs` from now.
   * Resolves with the number of operations that could not be written (each one logged).
   */
  async drain(deadlineMs = Infinity): Promise<number> {
    const before = this.queued;
    const lostBefore = this.notWritten;
    this.deadline = Date.now() + deadlineMs;
    // A retry waiting past the deadline gives up now instead of sleeping through it.
    const guard = Number.isFinite(deadlineMs)
      ? setTimeout(() => {
          for (const t of [...this.timers]) t.wake();
        }, deadlineMs)
      : undefined;
    try {
      while (this.running.size) await Promise.allSettled([...this.running]);
    } finally {
      if (guard) clearTimeout(guard);
    }
    const lost = this.notWritten - lostBefore;
    if (before) this.logger.info({ pending: before, notWritten: lost }, 'ASYNC writes drained');
    return lost;
  }
}
