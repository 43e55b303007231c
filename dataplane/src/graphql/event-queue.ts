import type { ByteBudget } from './send-budget.js';

/**
 * A subscriber's events between the dispatcher (which pushes synchronously, never waiting for a
 * client) and the protocol (which pulls as fast as the socket takes them). Bounded: a push past
 * the bound reports an overflow instead of growing, so a slow client is cut off, not waited for.
 * With a byte budget (its connection's, send-budget.ts), queued events also count their bytes.
 */
export class EventQueue<T> implements AsyncIterableIterator<T> {
  private readonly items: T[] = [];
  private readonly sizes: number[] = [];
  private waiting: ((result: IteratorResult<T>) => void) | undefined;
  private failWaiting: ((err: unknown) => void) | undefined;
  private ended = false;
  private failure: unknown;

  constructor(
    private readonly bound: number,
    /** Called once when the queue ends for any reason (the consumer returned, it overflowed, it was ended). */
    private readonly onEnd: () => void,
    private readonly budget?: ByteBudget,
    private readonly sizeOf: (item: T) => number = () => 0,
  ) {}

  get size(): number {
    return this.items.length;
  }

  /** Adds an event; false (and nothing added) when the queue is over its bound or ended. */
  push(item: T): boolean {
    if (this.ended) return false;
    if (this.waiting) {
      const resolve = this.waiting;
      this.waiting = this.failWaiting = undefined;
      resolve({ value: item, done: false });
      return true;
    }
    if (this.items.length >= this.bound) return false;
    const size = this.budget ? this.sizeOf(item) : 0;
    if (this.budget && !this.budget.take(size)) return false;
    this.items.push(item);
    this.sizes.push(size);
    return true;
  }

  /** Ends the stream after the queued events (or at once with an error). */
  end(err?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.failure = err;
    if (err !== undefined) this.clear();
    if (this.waiting && (err !== undefined || !this.items.length)) {
      const [resolve, reject] = [this.waiting, this.failWaiting!];
      this.waiting = this.failWaiting = undefined;
      if (err !== undefined) reject(err);
      else resolve({ value: undefined, done: true });
    }
    this.onEnd();
  }

  next(): Promise<IteratorResult<T>> {
    if (this.items.length) {
      this.budget?.give(this.sizes.shift()!);
      return Promise.resolve({ value: this.items.shift()!, done: false });
    }
    if (this.ended) return this.failure !== undefined ? Promise.reject(this.failure) : Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.waiting = resolve;
      this.failWaiting = reject;
    });
  }

  private clear(): void {
    for (const size of this.sizes) this.budget?.give(size);
    this.items.length = this.sizes.length = 0;
  }

  return(): Promise<IteratorResult<T>> {
    this.clear();
    this.end();
    return Promise.resolve({ value: undefined, done: true });
  }

  throw(err: unknown): Promise<IteratorResult<T>> {
    this.end(err);
    return Promise.reject(err);
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }
}
