/**
 * `npx tsx bench/alloc-sites.ts`: where a read's allocations come from. Runs the data plane (and
 * the bare PreparedRead handler) on embedded PostgreSQL under load, with V8's sampling heap
 * profiler (bench/heap-sampler.mjs) on during one window per request kind, and prints the bytes
 * allocated per request in total and by allocating function (self), largest first.
 *
 * ALLOC_SECONDS (4), ALLOC_TOP (30), ALLOC_ROOT=<another checkout> profiles that checkout's data
 * plane instead, ALLOC_KINDS (get,post,graphql,bare), BENCH_LOG_LEVEL (info), ALLOC_SAVE=<dir> keeps
 * each profile there (`<kind>.heapprofile`, for Chrome DevTools' Memory tab).
 */
import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort, startEmbeddedPostgres } from '../dataplane/src/db/embedded.js';
import { call } from '../dataplane/test-support/http.js';
import { HEADERS, ROOT, waitFor } from './support.js';

const SECONDS = Number(process.env.ALLOC_SECONDS ?? 4);
const TOP = Number(process.env.ALLOC_TOP ?? 30);
const SERVER_ROOT = process.env.ALLOC_ROOT ?? ROOT;
const KINDS = new Set((process.env.ALLOC_KINDS ?? 'get,post,graphql,bare').split(','));
const RECORDS = 1000;

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

const person = (n: number) => ({ name: `Person p${n}`, email: `p${n}@example.com`, age: 20 + (n % 50), address: { street: `${n} Main St`, postcode: 'N1' } });
const GRAPHQL_READ = 'query Person($id: ID!) { demo_Person(id: $id) { id version name email age address { street postcode } } }';
const REQUESTS: Record<string, (n: number) => { method?: string; path: string; body?: string }> = {
  get: (n) => ({ path: `/demo/demo.Person/p${n % RECORDS}` }),
  bare: (n) => ({ path: `/demo/demo.Person/p${n % RECORDS}` }),
  post: (n) => ({ method: 'POST', path: '/demo', body: JSON.stringify({ read: { schema: 'demo.Person', id: `p${n % RECORDS}` } }) }),
  graphql: (n) => ({ method: 'POST', path: '/demo/graphql', body: JSON.stringify({ query: GRAPHQL_READ, variables: { id: `p${n % RECORDS}` } }) }),
};

function startServer(script: string, cwd: string, env: Record<string, string>, out: string): ChildProcess {
  const sampler = resolve(import.meta.dirname, 'heap-sampler.mjs');
  return spawn(process.execPath, ['--import', 'tsx', '--import', sampler, script], {
    cwd,
    env: { ...process.env, NODE_ENV: 'production', HEAP_SAMPLER_OUT: out, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

async function load(url: string, kind: string, seconds: number): Promise<number> {
  let i = 0;
  const result = await autocannon({
    url,
    connections: 32,
    duration: seconds,
    headers: { ...HEADERS, 'content-type': 'application/json' },
    requests: [{ setupRequest: (req: any) => ({ ...req, ...REQUESTS[kind](i++) }) }],
  });
  if (result.errors + result.non2xx) throw new Error(`${kind}: ${result.errors + result.non2xx} errors`);
  return result.requests.total;
}

const siteOf = ({ functionName, url, lineNumber, columnNumber }: ProfileNode['callFrame']) =>
  `${functionName || '(anonymous)'} ${url.replace(/^file:\/\//, '').replace(/^.*\/node_modules\//, 'nm/').replace(/^.*?\/(dataplane|model|bench)\//, '$1/')}:${lineNumber + 1}:${columnNumber + 1}`;
/** The project's own code (not node's, not a dependency's). */
const own = (url: string) => /\/(dataplane|model|bench)\//.test(url) && !url.includes('/node_modules/');

/**
 * Bytes by allocating function (self size), and by the innermost frame of the project's own code
 * on the allocation's stack (what node or a dependency allocated on its behalf included).
 */
function bySite(root: ProfileNode): { self: Map<string, number>; byOwn: Map<string, number> } {
  const self = new Map<string, number>();
  const byOwn = new Map<string, number>();
  const add = (m: Map<string, number>, k: string, n: number) => m.set(k, (m.get(k) ?? 0) + n);
  const walk = (node: ProfileNode, owner: string) => {
    const mine = own(node.callFrame.url) ? siteOf(node.callFrame) : owner;
    if (node.selfSize) {
      add(self, siteOf(node.callFrame), node.selfSize);
      add(byOwn, mine, node.selfSize);
    }
    for (const child of node.children) walk(child, mine);
  };
  walk(root, '(no own frame: node, dependencies)');
  return { self, byOwn };
}

async function profile(child: ChildProcess, url: string, kind: string, out: string): Promise<void> {
  await load(url, kind, 2); // warm-up: JIT, prepared statements, pool
  rmSync(out, { force: true });
  child.kill('SIGUSR2');
  const requests = await load(url, kind, SECONDS);
  child.kill('SIGUSR2');
  for (let i = 0; i < 100 && !existsSync(out); i++) await new Promise((r) => setTimeout(r, 100));
  await new Promise((r) => setTimeout(r, 300));
  if (process.env.ALLOC_SAVE) copyFileSync(out, join(process.env.ALLOC_SAVE, `${kind}.heapprofile`));
  const head = JSON.parse(readFileSync(out, 'utf8')).head as ProfileNode;
  const { self, byOwn } = bySite(head);
  const total = [...self.values()].reduce((s, b) => s + b, 0);
  console.log(`\n${kind}: ${requests} requests, ${(total / requests / 1024).toFixed(2)} KiB per request (sampled)`);
  for (const [title, sites] of [['by allocating function', self], ['by innermost own frame', byOwn]] as const) {
    console.log(`-- ${title}`);
    for (const [site, bytes] of [...sites].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`${(bytes / requests).toFixed(0).padStart(7)} B  ${site}`);
  }
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'das-alloc-'));
  chmodSync(dir, 0o755);
  const db = await startEmbeddedPostgres({ dir });
  const children: ChildProcess[] = [];
  try {
    await db.createDatabase('bench');
    const databaseUrl = db.urlFor('bench');
    const port = await freePort();
    const out = join(dir, 'heap.json');
    const dp = startServer('dataplane/src/main.ts', SERVER_ROOT, { DATABASE_URL: databaseUrl, PORT: String(port), LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info' }, out);
    children.push(dp);
    const url = `http://127.0.0.1:${port}`;
    await waitFor(url, '/readyz', dp);
    const batch: Record<string, unknown> = {};
    for (let n = 0; n < RECORDS; n++) batch[`p${n}`] = { create: { schema: 'demo.Person', id: `p${n}`, data: person(n) } };
    const seeded = await call(url, { path: '/demo', host: HEADERS.host, headers: { authorization: HEADERS.authorization }, body: { batch: { actions: batch } } });
    if (seeded.status !== 200) throw new Error(`seeding failed: ${seeded.status}`);
    for (const kind of ['get', 'post', 'graphql']) if (KINDS.has(kind)) await profile(dp, url, kind, out);
    if (KINDS.has('bare')) {
      const barePort = await freePort();
      const bare = startServer('bench/bare-server.ts', ROOT, { DATABASE_URL: databaseUrl, PORT: String(barePort), BARE_READ: 'prepared' }, out);
      children.push(bare);
      const bareUrl = `http://127.0.0.1:${barePort}`;
      await waitFor(bareUrl, '/demo/demo.Person/p1', bare);
      await profile(bare, bareUrl, 'bare', out);
    }
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 1000));
    await db.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
