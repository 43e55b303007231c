/** A small LCG for fuzz tests: the same sequence for the same seed on every run, so a failure reproduces. */
export function random(seed: number) {
  let state = seed;
  const next = () => (state = (state * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)];
  return { next, pick };
}
