/**
 * A map bounded in size (the least recently used entry goes first) whose entries each carry their
 * own expiry. Memory is bounded by `maxEntries`, whatever callers send.
 */
export class ExpiringLru<V> {
  private readonly entries = new Map<string, { value: V; until: number }>();

  constructor(
    private readonly maxEntries: number,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    if (entry.until <= this.now()) return undefined;
    this.entries.set(key, entry); // re-inserted: most recently used last
    return entry.value;
  }

  set(key: string, value: V, until: number): void {
    if (until <= this.now() || this.maxEntries <= 0) return;
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { value, until });
  }
}
