/**
 * At most `maxInFlight` TokenReviews at once per process; up to `maxWaiting` more callers wait
 * their turn (first come, first served); beyond that a caller is refused at once (the caller
 * answers 503 with Retry-After). A slow or silent API server thus holds a bounded number of
 * sockets and requests, however many tokens arrive.
 */
export class ReviewSlotsFull extends Error {
  constructor() {
    super('too many ServiceAccount tokens are being reviewed at once');
    this.name = 'ReviewSlotsFull';
  }
}

export class ReviewSlots {
  private inFlight = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    readonly maxInFlight: number,
    readonly maxWaiting: number,
  ) {}

  get active(): number {
    return this.inFlight;
  }

  /** Runs `task` in a slot; throws ReviewSlotsFull when every slot and every waiting place is taken. */
  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.inFlight >= this.maxInFlight) {
      if (this.waiting.length >= this.maxWaiting) throw new ReviewSlotsFull();
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.inFlight++;
    }
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      // The slot passes straight to the next waiter; only when none waits is it given back.
      if (next) next();
      else this.inFlight--;
    }
  }
}
