/**
 * A subscriber's events between the dispatcher (which pushes synchronously, never waiting for a
 * client) and the protocol (which pulls as fast as the socket takes them). Bounded: a push past
 * the bound reports an overflow instead of growing, so a slow client is cut off, not waited for.
 */
export class EventQueue<T> implements AsyncIterableIterator<T> {
  private readonly items: T[] = [];
  private waiting: ((result: IteratorResult<T>) => void) | undefined;
  private failWaiting: ((err: unknown) => void) | undefined;
  private ended = false;
  private failure: unknown;

  constructor(
    private readonly bound: number,
    /** Called once when the queue ends for any reason (the consumer returned, it overflowed, it was ended). */
    private readonly onEnd: () => void,
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
    this.items.push(item);
    return true;
  }

  /** Ends the stream after the queued events (or at once with an error). */
  end(err?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.failure = err;
    if (err !== undefined) this.items.length = 0;
    if (this.waiting && (err !== undefined || !this.items.length)) {
      const [resolve, reject] = [this.waiting, this.failWaiting!];
      this.waiting = this.failWaiting = undefined;
      if (err !== undefined) reject(err);
      else resolve({ value: undefined, done: true });
    }
    this.onEnd();
  }

  next(): Promise<IteratorResult<T>> {
    if (this.items.length) return Promise.resolve({ value: this.items.shift()!, done: false });
    if (this.ended) return this.failure !== undefined ? Promise.reject(this.failure) : Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.waiting = resolve;
      this.failWaiting = reject;
    });
  }

  return(): Promise<IteratorResult<T>> {
    this.items.length = 0;
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
