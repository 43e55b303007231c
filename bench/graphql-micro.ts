/**
 * Microbenchmark of what a GraphQL read by id does beyond REST's `read` action sent as a POST body
 * (bench/run.ts's `graphql` and `postRead` requests), step by step, in one process, a few seconds:
 * the body's decoding, the firewall's body rules (both managed rule sets) over each body, the
 * GraphQL layer (`parseGraphQLRequest` + `runGraphQLQuery` with a stub engine answering the
 * record at once, so only graphql/ and graphql-jit are timed; of it, `prepareOperation`: the cached
 * document, the measure and the variables' coercion), and the answer's serialisation.
 * `BENCH_BEFORE_ROOT=<another checkout>` runs the same steps from that checkout's sources beside
 * this one's, alternating, so before/after come from the same minutes.
 *
 *   NODE_ENV=production NODE_OPTIONS=--max-semi-space-size=64 npx tsx bench/graphql-micro.ts
 *
 * Figures are nanoseconds per call, median of the rounds, and bytes allocated per call (heap growth
 * over a run short enough for no scavenge: hence the larger semi-space); on a shared machine
 * compare only the columns of one run.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CALLS = Number(process.env.BENCH_CALLS ?? 100_000);

const QUERY = 'query Person($id: ID!) { demo_Person(id: $id) { id version name email age address { street postcode } } }';
const BODIES = {
  graphql: (i: number) => JSON.stringify({ query: QUERY, variables: { id: `p${i % 1000}` } }),
  'POST read': (i: number) => JSON.stringify({ read: { schema: 'demo.Person', id: `p${i % 1000}` } }),
};
const RECORD = { id: 'p123', version: 1, name: 'Person p123', email: 'p123@example.com', age: 43, address: { street: '123 Main St', postcode: 'N1' } };

type Step = { name: string; run: (i: number) => unknown; async?: boolean };

async function stepsOf(root: string): Promise<Step[]> {
  const load = (path: string) => import(pathToFileURL(resolve(root, path)).href);
  const { decodeJsonBody } = await load('dataplane/src/http/body.ts');
  const { inspect } = await load('dataplane/src/firewall/inspect.ts');
  const { parseGraphQLRequest, runGraphQLQuery } = await load('dataplane/src/graphql/http.ts');
  const { loadManifests } = await load('model/manifests.ts');
  const { renderDatasetConfig } = await load('model/render.ts');
  const demo = loadManifests(resolve(root, 'examples')).datasets.find((d: { metadata: { name: string } }) => d.metadata.name === 'demo');
  const dataset = renderDatasetConfig(demo);
  const firewall = { managedRules: ['common', 'knownBadInputs'], trustedProxies: [], ipAddresses: { allowed: [], blocked: [] } };
  const headers = { host: 'iam.localhost', 'content-type': 'application/json', authorization: 'Proxy demo-admin', 'content-length': '150' };
  const engine = { read: async () => ({ ...RECORD }) };
  const steps: Step[] = [];
  for (const [name, body] of Object.entries(BODIES)) {
    const raws = Array.from({ length: 1000 }, (_, i) => Buffer.from(body(i)));
    const texts = raws.map((r) => r.toString('utf8'));
    steps.push({ name: `decodeJsonBody, ${name} (${raws[0].length} B)`, run: (i) => decodeJsonBody(raws[i % 1000]) });
    steps.push({
      name: `firewall body rules, ${name}`,
      run: (i) => inspect({ method: 'POST', rawUrl: '/demo/graphql', headers, clientAddress: '127.0.0.1', bodyText: texts[i % 1000], bodyBytes: raws[i % 1000].length }, firewall, 'body') ?? 1,
    });
  }
  const values = Array.from({ length: 1000 }, (_, i) => JSON.parse(BODIES.graphql(i)));
  const { prepareOperation } = await load('dataplane/src/graphql/limits.ts');
  const { datasetSchema } = await load('dataplane/src/graphql/schema.ts');
  steps.push({ name: 'prepareOperation (cached document)', run: (i) => prepareOperation(datasetSchema(dataset), QUERY, values[i % 1000].variables).document });
  steps.push({ name: 'runGraphQLQuery (stub engine)', async: true, run: (i) => runGraphQLQuery(engine, dataset, parseGraphQLRequest(values[i % 1000])) });
  const result = { data: { demo_Person: RECORD } };
  steps.push({ name: 'JSON.stringify, GraphQL answer', run: () => JSON.stringify(result) });
  steps.push({ name: 'JSON.stringify, record', run: () => JSON.stringify(RECORD) });
  return steps;
}

async function time(step: Step): Promise<number> {
  let sink = 0;
  const start = process.hrtime.bigint();
  if (step.async) for (let i = 0; i < CALLS; i++) sink += (await step.run(i)) ? 1 : 0;
  else for (let i = 0; i < CALLS; i++) if (step.run(i)) sink++;
  const ns = Number(process.hrtime.bigint() - start) / CALLS;
  return sink >= 0 ? ns : NaN;
}

/** Bytes allocated per call: heap growth over a run short enough for no scavenge (run with --max-semi-space-size=64). */
async function allocated(step: Step): Promise<number> {
  const n = 2000;
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < n; i++) await step.run(i);
  return (process.memoryUsage().heapUsed - before) / n;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const roots: [string, string][] = [['this checkout', process.cwd()]];
  if (process.env.BENCH_BEFORE_ROOT) roots.unshift(['before', process.env.BENCH_BEFORE_ROOT]);
  const sets = await Promise.all(roots.map(([, root]) => stepsOf(root)));
  for (const steps of sets) for (const step of steps) await time(step); // warm-up: optimised code, documents cached and compiled
  const figures = sets.map((steps) => steps.map(() => [] as number[]));
  for (let round = 0; round < ROUNDS; round++) {
    for (let s = 0; s < sets[0].length; s++) for (let r = 0; r < sets.length; r++) figures[r][s].push(await time(sets[r][s]));
  }
  const bytes = [] as number[][];
  for (const steps of sets) {
    const row = [] as number[];
    for (const step of steps) {
      const tries = [await allocated(step), await allocated(step), await allocated(step)];
      row.push(Math.min(...tries.filter((b) => b >= 0)));
    }
    bytes.push(row);
  }
  console.log(`ns per call, median of ${ROUNDS} rounds of ${CALLS} calls; bytes allocated per call (least of three runs of 2,000)`);
  console.log(`${''.padEnd(44)}${roots.map(([name]) => `${name} ns`.padStart(18) + 'B'.padStart(8)).join('')}`);
  sets[0].forEach((step, s) => console.log(`${step.name.padEnd(44)}${figures.map((f, r) => median(f[s]).toFixed(0).padStart(18) + bytes[r][s].toFixed(0).padStart(8)).join('')}`));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
