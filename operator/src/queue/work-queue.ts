/**
 * A work queue of object keys, as controllers use it:
 * - a key is queued at most once, however often it is added (bursts of events collapse);
 * - a key is never handed to two workers at once: added while in process, it is queued again
 *   when the worker is done;
 * - failures back off per key, exponentially, until `forget`.
 * Timers are injected so that tests control time.
 */
import { backoffDelay } from '../kube/backoff.js';

export interface Scheduler {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const realScheduler: Scheduler = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface WorkQueueOptions {
  baseDelayMs?: number;
  maxDelayMs?: number;
  scheduler?: Scheduler;
  /** Called whenever the number of queued keys changes (for the depth gauge). */
  onDepthChange?: (depth: number) => void;
}

export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly queued = new Set<string>();
  private readonly processing = new Set<string>();
  /** Added while processing: queue again when done. */
  private readonly dirty = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly delayed = new Map<string, { handle: unknown; dueAt: number }>();
  private readonly waiters: ((key: string | undefined) => void)[] = [];
  private shuttingDown = false;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly scheduler: Scheduler;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly options: WorkQueueOptions = {}) {
    this.baseDelayMs = options.baseDelayMs ?? 200;
    this.maxDelayMs = options.maxDelayMs ?? 5 * 60_000;
    this.scheduler = options.scheduler ?? realScheduler;
  }

  /** Keys waiting to be handed out. */
  get depth(): number {
    return this.queue.length;
  }

  add(key: string): void {
    if (this.shuttingDown) return;
    if (this.processing.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    const waiter = this.waiters.shift();
    if (waiter) {
      this.processing.add(key);
      waiter(key);
      return;
    }
    this.queued.add(key);
    this.queue.push(key);
    this.options.onDepthChange?.(this.queue.length);
  }

  /** Adds the key after `ms`; an earlier pending delayed add of the same key wins. */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) return this.add(key);
    const dueAt = this.scheduler.now() + ms;
    const pending = this.delayed.get(key);
    if (pending && pending.dueAt <= dueAt) return;
    if (pending) this.scheduler.clearTimeout(pending.handle);
    const handle = this.scheduler.setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, ms);
    this.delayed.set(key, { handle, dueAt });
  }

  /** Adds the key after its backoff: base × 2^(failures so far), capped. Returns the delay. */
  addRateLimited(key: string): number {
    const failures = this.failures.get(key) ?? 0;
    this.failures.set(key, failures + 1);
    const delay = backoffDelay(this.baseDelayMs, this.maxDelayMs, failures);
    this.addAfter(key, delay);
    return delay;
  }

  /** Clears the key's failure count (after a successful reconcile). */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** The next key to process; undefined once the queue shuts down. */
  get(): Promise<string | undefined> {
    const key = this.queue.shift();
    if (key !== undefined) {
      this.queued.delete(key);
      this.processing.add(key);
      this.options.onDepthChange?.(this.queue.length);
      return Promise.resolve(key);
    }
    if (this.shuttingDown) return Promise.resolve(undefined);
    this.notifyIdleIfIdle();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Marks the key processed; a key added meanwhile is queued again. */
  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.delete(key)) this.add(key);
    this.notifyIdleIfIdle();
  }

  /** Resolves when nothing is queued or in process (delayed retries may still be pending). */
  whenIdle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stops handing out keys; workers waiting in get() receive undefined. */
  shutDown(): void {
    this.shuttingDown = true;
    for (const { handle } of this.delayed.values()) this.scheduler.clearTimeout(handle);
    this.delayed.clear();
    this.queue.length = 0;
    this.queued.clear();
    for (const waiter of this.waiters.splice(0)) waiter(undefined);
    this.notifyIdleIfIdle();
  }

  private isIdle(): boolean {
    return this.queue.length === 0 && this.processing.size === 0;
  }

  private notifyIdleIfIdle(): void {
    if (!this.isIdle()) return;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }
}
