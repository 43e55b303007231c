/**
 * Microbenchmark of the record engine's own part of a write, in one process, a few seconds: the
 * bench's create and batch-of-10 bodies (bench/run.ts) through `JSON.parse`,
 * `parseStructuredRequest` and `RecordEngine.execute` with a driver that answers at once, so
 * what is timed is the engine (action parsing, validation, statements handed over, the answer's
 * shaping), not PostgreSQL. `BENCH_BEFORE_ROOT=<another checkout>` runs the same from that
 * checkout's sources beside this one's, alternating.
 *
 *   NODE_OPTIONS=--max-semi-space-size=64 npx tsx bench/write-micro.ts
 *
 * Nanoseconds per write (median of the rounds) and bytes allocated per write (heap growth over a
 * run short enough for no scavenge: hence the larger semi-space).
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import pino from 'pino';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CALLS = Number(process.env.BENCH_CALLS ?? 20_000);

const person = (id: string, n: number) => ({ name: `Person ${id}`, email: `${id}@example.com`, age: 20 + (n % 50), address: { street: `${n} Main St`, postcode: 'N1' } });
const BODIES = {
  create: (n: number) => JSON.stringify({ create: { schema: 'demo.Person', id: `c-${n}`, data: person(`c-${n}`, n), consistency: 'ATOMIC' } }),
  'batch of 10': (n: number) =>
    JSON.stringify({ batch: { actions: Object.fromEntries(Array.from({ length: 10 }, (_, k) => [`a${k}`, { create: { schema: 'demo.Person', id: `b-${n}-${k}`, data: person(`b-${n}-${k}`, n + k), consistency: 'ATOMIC' } }])) } }),
};

type Step = { name: string; run: (i: number) => Promise<unknown> };

async function stepsOf(root: string): Promise<Step[]> {
  const load = (path: string) => import(pathToFileURL(resolve(root, path)).href);
  const { RecordEngine } = await load('dataplane/src/engine/engine.ts');
  const { parseStructuredRequest } = await load('dataplane/src/engine/actions.ts');
  const { postgresCapabilities } = await load('dataplane/src/drivers/postgres/driver.ts');
  const { loadManifests } = await load('model/manifests.ts');
  const { renderDatasetConfig } = await load('model/render.ts');
  const dataset = renderDatasetConfig(loadManifests(resolve(root, 'examples')).datasets.find((d: { metadata: { name: string } }) => d.metadata.name === 'demo'));
  const driver = {
    capabilities: postgresCapabilities({ rawSql: false }),
    write: async (_: unknown, ops: { id: string; data: unknown }[]) => ops.map((op) => ({ ok: true, record: { id: op.id, version: 1, data: op.data } })),
  };
  const configs = { dataset: () => ({ status: 'ready', config: dataset }) };
  const engine = new RecordEngine(configs, () => driver, pino({ level: 'silent' }));
  return Object.entries(BODIES).map(([name, body]) => {
    const texts = Array.from({ length: 1000 }, (_, i) => body(i));
    return { name, run: (i: number) => engine.execute(dataset, parseStructuredRequest(JSON.parse(texts[i % 1000]))) };
  });
}

async function time(step: Step): Promise<number> {
  const start = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) await step.run(i);
  return Number(process.hrtime.bigint() - start) / CALLS;
}

async function allocated(step: Step): Promise<number> {
  const tries: number[] = [];
  for (let k = 0; k < 3; k++) {
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 200; i++) await step.run(i);
    tries.push((process.memoryUsage().heapUsed - before) / 200);
  }
  return Math.min(...tries.filter((b) => b >= 0));
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const roots: [string, string][] = [['this checkout', process.cwd()]];
  if (process.env.BENCH_BEFORE_ROOT) roots.unshift(['before', process.env.BENCH_BEFORE_ROOT]);
  const sets = await Promise.all(roots.map(([, root]) => stepsOf(root)));
  for (const steps of sets) for (const step of steps) await time(step); // warm-up
  const figures = sets.map((steps) => steps.map(() => [] as number[]));
  for (let round = 0; round < ROUNDS; round++) {
    for (let s = 0; s < sets[0].length; s++) for (let r = 0; r < sets.length; r++) figures[r][s].push(await time(sets[r][s]));
  }
  const bytes: number[][] = [];
  for (const steps of sets) {
    const row: number[] = [];
    for (const step of steps) row.push(await allocated(step));
    bytes.push(row);
  }
  console.log(`ns per write, median of ${ROUNDS} rounds of ${CALLS}; bytes allocated per write (least of three runs of 200)`);
  console.log(`${''.padEnd(16)}${roots.map(([name]) => `${name} ns`.padStart(18) + 'B'.padStart(8)).join('')}`);
  sets[0].forEach((step, s) => console.log(`${step.name.padEnd(16)}${figures.map((f, r) => median(f[s]).toFixed(0).padStart(18) + bytes[r][s].toFixed(0).padStart(8)).join('')}`));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
