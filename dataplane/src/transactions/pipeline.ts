/**
 * A bounded pipeline of one item ahead: while an item is written (the store working, this process
 * mostly waiting), the next one is read and prepared (this process working). Two cores — Node and
 * the database — then work at once, and at most two items are held: the one being written and
 * the one prepared, whatever the size of the source.
 *
 * Items are written in source order, one at a time: a write starts only once the previous one has
 * settled, and the next item is asked of the source only once the previous one was prepared.
 */
export async function pipelined<T, U>(
  source: AsyncIterator<T>,
  prepare: (item: T) => U | Promise<U>,
  /** Writes a prepared item; answers false to stop (the rest is not written). */
  write: (prepared: U) => Promise<boolean>,
): Promise<void> {
  const produce = async (): Promise<{ done: true } | { done: false; value: U }> => {
    const next = await source.next();
    return next.done ? { done: true } : { done: false, value: await prepare(next.value) };
  };
  let ahead = produce();
  ahead.catch(() => undefined); // handled where it is awaited; never an unhandled rejection meanwhile
  try {
    for (;;) {
      const item = await ahead;
      if (item.done) return;
      // The write's synchronous part runs first; then the next item is read and prepared while it waits.
      const writing = write(item.value);
      ahead = produce();
      ahead.catch(() => undefined);
      if (!(await writing)) return;
    }
  } finally {
    // Closes the source once the read ahead settles (a generator cannot be closed mid-step).
    void ahead.then(
      () => source.return?.(undefined),
      () => source.return?.(undefined),
    ).catch(() => undefined);
  }
}

/** Lets pending I/O (the writer's round trips) run between slices of a long synchronous task. */
export const yieldToIo = () => new Promise<void>((resolve) => setImmediate(resolve));
