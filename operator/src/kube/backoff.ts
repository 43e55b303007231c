/** Exponential backoff: base, 2×base, 4×base… capped at max. */
export class ExponentialBackoff {
  private failures = 0;

  constructor(
    readonly baseMs: number,
    readonly maxMs: number,
  ) {}

  /** The delay before the next attempt, counting this failure. */
  next(): number {
    const delay = backoffDelay(this.baseMs, this.maxMs, this.failures);
    this.failures++;
    return delay;
  }

  reset(): void {
    this.failures = 0;
  }
}

export function backoffDelay(baseMs: number, maxMs: number, failures: number): number {
  // 2 ** 40 already exceeds any sensible cap; avoid Infinity for long failure streaks.
  return Math.min(maxMs, baseMs * 2 ** Math.min(failures, 40));
}
