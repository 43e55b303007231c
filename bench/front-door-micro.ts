/**
 * Microbenchmark of pure front-door steps every request runs, in one process, a few seconds:
 * addressing a read by id (`resolveGateway` + `matchRoute`), the JSON body's depth bound
 * (`jsonDepth`) and its whole decoding (`decodeJsonBody`) on the bench's GraphQL, POST read and
 * create bodies, and the engine's validation of a create's data (`validateRecordData`).
 * `BENCH_BEFORE_ROOT=<another checkout>` runs the same steps from that checkout's sources beside
 * this one's, alternating, so before/after come from the same minutes.
 *
 *   npx tsx bench/front-door-micro.ts
 *   BENCH_BEFORE_ROOT=/tmp/before npx tsx bench/front-door-micro.ts
 *
 * Figures are nanoseconds per call, median of the rounds; on a shared machine compare only the
 * two columns of one run.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CALLS = Number(process.env.BENCH_CALLS ?? 300_000);

const BODIES = {
  graphql: { query: 'query Person($id: ID!) { demo_Person(id: $id) { id version name email age address { street postcode } } }', variables: { id: 'p123' } },
  'POST read': { read: { schema: 'demo.Person', id: 'p123' } },
  create: { create: { schema: 'demo.Person', id: 'x1', data: { name: 'Ada Lovelace', email: 'ada@example.com', age: 36, address: { street: '1 Main "St"', postcode: 'N1 9GU' } } } },
};

type Step = { name: string; run: (i: number) => unknown };

async function stepsOf(root: string): Promise<Step[]> {
  const load = (path: string) => import(pathToFileURL(resolve(root, path)).href);
  const { resolveGateway } = await load('dataplane/src/front-door/gateway.ts');
  const { matchRoute } = await load('dataplane/src/http/routes.ts');
  const { jsonDepth, decodeJsonBody } = await load('dataplane/src/http/body.ts');
  const paths = Array.from({ length: 1000 }, (_, i) => `/demo/demo.Person/p${i}`);
  const steps: Step[] = [{ name: 'address a read by id', run: (i) => matchRoute(resolveGateway('iam.localhost', paths[i % 1000], 'Proxy demo-admin').rest) }];
  for (const [name, body] of Object.entries(BODIES)) {
    const raw = Buffer.from(JSON.stringify(body));
    const text = raw.toString('utf8');
    steps.push({ name: `jsonDepth, ${name} body (${raw.length} B)`, run: () => jsonDepth(text, 64) });
    steps.push({ name: `decodeJsonBody, ${name} body`, run: () => decodeJsonBody(raw) });
  }
  // The engine's check of a create's data against its schema (ajv, then NUL and indexed sizes), with the PostgreSQL driver's index limit.
  const { validateRecordData } = await load('dataplane/src/engine/record-validation.ts');
  const { loadManifests } = await load('model/manifests.ts');
  const { renderDatasetConfig } = await load('model/render.ts');
  const dataset = renderDatasetConfig(loadManifests(resolve(root, 'examples')).datasets.find((d: { metadata: { name: string } }) => d.metadata.name === 'demo'));
  const datas = Array.from({ length: 1000 }, (_, i) => ({ ...BODIES.create.create.data, name: `Person x${i}` }));
  steps.push({ name: 'validateRecordData, create data', run: (i) => validateRecordData(dataset, 'demo.Person', datas[i % 1000], true, '$.create.data', { indexedKeyBytes: 2600, id: `x${i}` }) ?? 1 });
  return steps;
}

function time(step: Step): number {
  let sink = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) if (step.run(i)) sink++;
  const ns = Number(process.hrtime.bigint() - start) / CALLS;
  return sink >= 0 ? ns : NaN;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const roots: [string, string][] = [['this checkout', process.cwd()]];
  if (process.env.BENCH_BEFORE_ROOT) roots.unshift(['before', process.env.BENCH_BEFORE_ROOT]);
  const sets = await Promise.all(roots.map(([, root]) => stepsOf(root)));
  for (const steps of sets) for (const step of steps) time(step); // warm-up: optimised code
  const figures = sets.map((steps) => steps.map(() => [] as number[]));
  for (let round = 0; round < ROUNDS; round++) {
    for (let s = 0; s < sets[0].length; s++) for (let r = 0; r < sets.length; r++) figures[r][s].push(time(sets[r][s]));
  }
  console.log(`ns per call, median of ${ROUNDS} rounds of ${CALLS} calls`);
  console.log(`${''.padEnd(44)}${roots.map(([name]) => name.padStart(16)).join('')}`);
  sets[0].forEach((step, s) => console.log(`${step.name.padEnd(44)}${figures.map((f) => median(f[s]).toFixed(0).padStart(16)).join('')}`));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
