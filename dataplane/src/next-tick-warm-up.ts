/**
 * Calls `process.nextTick` in one shape, many times, before the data plane starts anything else.
 *
 * Why: Node 24's `nextTick` builds each tick as an object literal with computed (symbol) keys. In
 * a process that starts an embedded PostgreSQL (`npm start`, no DATABASE_URL), V8's optimising
 * compiler compiled it during that start-up on feedback the start-up had made megamorphic, and from
 * then on every tick defined its properties through the runtime (`DefineKeyedOwnPropertyInLiteral`,
 * map migrations): about 0.4 µs a tick, seven ticks per read (node's HTTP server and streams, pg),
 * 3.5 µs of a read's ~55 µs for the life of the process. Ticks of one shape first get it compiled
 * on monomorphic feedback, and the start-up no longer changes that. Measured with perf
 * (docs/performance.md, "The tenth round"): ten such processes of eleven without this, none of
 * eight with it; a process given DATABASE_URL (as in a cluster) did not fall into it (two of two
 * without this).
 *
 * In rounds of a few thousand, each round run before the next is queued, so no more than one
 * round's ticks are alive at once. About 200,000 no-op ticks: tens of milliseconds at start.
 */
const WARM_UP_TICKS = 200_000;
const PER_ROUND = 2_000;

export async function warmUpNextTick(ticks = WARM_UP_TICKS): Promise<number> {
  let ran = 0;
  const tick = (): void => {
    ran++;
  };
  for (let queued = 0; queued < ticks; ) {
    const round = Math.min(PER_ROUND, ticks - queued);
    for (let i = 0; i < round; i++) process.nextTick(tick);
    queued += round;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return ran;
}
