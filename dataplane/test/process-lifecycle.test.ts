/**
 * The real entry point's lifecycle (dataplane/src/main.ts under tsx, as `npm start` runs it, and
 * the compiled dist/dataplane/src/main.js, as the container runs it): SIGTERM with requests in
 * flight and ASYNC writes pending, kill -9 and a restart, a DATA_DIR the database cannot reach.
 */
import { expect } from 'chai';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort, startEmbeddedPostgres } from '../src/db/embedded.js';
import { call } from '../test-support/http.js';
import { startMain, waitReady, type EntryPoint } from '../test-support/main-process.js';

const admin = { host: 'iam.localhost', headers: { authorization: 'Proxy demo-admin' } };

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'das-life-'));
  chmodSync(dir, 0o755); // as root, the embedded server runs as the postgres user and must reach it
  return dir;
}

/** Counts rows with the embedded server of a stopped data plane, started just for that. */
async function countRows(dir: string, sql: string): Promise<number> {
  const db = await startEmbeddedPostgres({ dir: join(dir, 'postgres') });
  try {
    const client = new pg.Client(db.url);
    await client.connect();
    try {
      return (await client.query(sql)).rows[0].n as number;
    } finally {
      await client.end();
    }
  } finally {
    await db.stop();
  }
}

/** Alive and not a zombie (an orphan's new parent may not reap it at once). */
function running(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
}

const logLines = (output: string) =>
  output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

// The container gets one SIGTERM; a terminal's Ctrl-C reaches npm, tsx and node, and the wrappers
// relay it too, so the data plane sees SIGINT twice in a row: still one graceful stop.
const cases: { entry: EntryPoint; signals: NodeJS.Signals[] }[] = [
  { entry: 'compiled', signals: ['SIGTERM'] },
  { entry: 'tsx', signals: ['SIGINT', 'SIGINT'] },
];

for (const { entry, signals } of cases) {
  describe(`data plane process (${entry === 'tsx' ? 'dataplane/src/main.ts' : 'dist/dataplane/src/main.js'})`, function () {
    this.timeout(180_000);

    it(`on ${signals.join(' + ')} finishes the request in flight and writes every pending ASYNC write, then exits 0`, async () => {
      const dir = dataDir();
      const port = await freePort();
      const url = `http://127.0.0.1:${port}`;
      const main = startMain({ DATA_DIR: dir, PORT: String(port) }, entry);
      await waitReady(url, main);

      // 2,000 ASYNC creates in 20 batches: acknowledged at once, written one after another.
      const batches = Array.from({ length: 20 }, (_, b) => {
        const actions: Record<string, unknown> = {};
        for (let i = 0; i < 100; i++) actions[`a${i}`] = { create: { schema: 'demo.Company', id: `async-${b}-${i}`, data: { name: `A ${b}/${i}` }, consistency: 'ASYNC' } };
        return call(url, { ...admin, path: '/demo', body: { batch: { actions } } });
      });
      const acks = await Promise.all(batches);
      for (const ack of acks) expect(ack.status, ack.text).to.equal(202);
      // A synchronous batch still running when the signal arrives.
      const syncActions: Record<string, unknown> = {};
      for (let i = 0; i < 300; i++) syncActions[`s${i}`] = { create: { schema: 'demo.Company', id: `sync-${i}`, data: { name: `S ${i}` }, consistency: 'ATOMIC' } };
      const inFlight = call(url, { ...admin, path: '/demo', body: { batch: { actions: syncActions } } });
      await new Promise((r) => setTimeout(r, 20));
      const signalled = Date.now();
      for (const signal of signals) {
        main.child.kill(signal);
        await new Promise((r) => setTimeout(r, 5));
      }
      const response = await inFlight;
      const code = await main.exited;
      const shutdownMs = Date.now() - signalled;
      expect(code, main.output().slice(-2000)).to.equal(0);
      expect(response.status, response.text).to.equal(200);

      const stopping = logLines(main.output()).find((l) => l.msg === 'shutting down: finishing in-flight requests');
      expect(stopping, 'the shutdown is logged').to.not.equal(undefined);
      // The test means something only if writes were still queued when the signal came.
      expect(stopping!.inFlightAsync as number, 'ASYNC operations pending at SIGTERM').to.be.greaterThan(200);
      console.log(`      (${entry}: ${String(stopping!.inFlightAsync)} ASYNC operations pending at SIGTERM; exit after ${shutdownMs} ms)`);

      expect(await countRows(dir, "SELECT count(*)::int AS n FROM demo.demo_company WHERE id LIKE 'async-%'")).to.equal(2000);
      expect(await countRows(dir, "SELECT count(*)::int AS n FROM demo.demo_company WHERE id LIKE 'sync-%'")).to.equal(300);
      rmSync(dir, { recursive: true, force: true });
    });
  });
}

describe('data plane process: crash and restart (dataplane/src/main.ts)', function () {
  this.timeout(180_000);

  it('after kill -9, starts again on the same DATA_DIR: the orphaned PostgreSQL is stopped and records survive', async () => {
    const dir = dataDir();
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const first = startMain({ DATA_DIR: dir, PORT: String(port) });
    await waitReady(url, first);
    const created = await call(url, { ...admin, path: '/demo', body: { create: { schema: 'demo.Company', id: 'survivor', data: { name: 'Survivor' } } } });
    expect(created.status).to.equal(201);
    first.child.kill('SIGKILL');
    await first.exited;
    const orphan = Number(readFileSync(join(dir, 'postgres/pgdata/postmaster.pid'), 'utf8').split('\n')[0]);
    expect(running(orphan), 'the killed data plane left its PostgreSQL running').to.equal(true);

    const second = startMain({ DATA_DIR: dir, PORT: String(port) });
    try {
      await waitReady(url, second);
      expect(second.output()).to.contain('left running by a data plane that did not shut down');
      const read = await call(url, { ...admin, path: '/demo/demo.Company/survivor' });
      expect(read.status).to.equal(200);
      expect(read.json).to.include({ id: 'survivor', name: 'Survivor' });
    } finally {
      second.child.kill('SIGTERM');
      expect(await second.exited).to.equal(0);
    }
    expect(running(orphan), 'the orphan is gone').to.equal(false);
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a DATA_DIR whose PostgreSQL a live data plane is using, and says what to do', async () => {
    const dir = dataDir();
    const port = await freePort();
    const first = startMain({ DATA_DIR: dir, PORT: String(port) });
    try {
      await waitReady(`http://127.0.0.1:${port}`, first);
      const second = startMain({ DATA_DIR: dir, PORT: String(await freePort()) });
      expect(await second.exited).to.equal(1);
      expect(second.output()).to.contain(`is in use by process ${first.child.pid}`);
      expect(second.output()).to.contain('another DATA_DIR');
      expect((await call(`http://127.0.0.1:${port}`, { path: '/readyz' })).status, 'the first one is untouched').to.equal(200);
    } finally {
      first.child.kill('SIGTERM');
      expect(await first.exited).to.equal(0);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('as root, refuses a DATA_DIR under a 0700 directory up front, saying why and what to do, and leaves nothing behind', async function () {
    if (process.getuid?.() !== 0) this.skip(); // only root runs the server as another user
    const closed = mkdtempSync(join(tmpdir(), 'das-closed-')); // mode 0700, like /root
    const target = join(closed, 'data');
    mkdirSync(target);
    const main = startMain({ DATA_DIR: target, PORT: String(await freePort()) });
    expect(await main.exited).to.equal(1);
    const output = main.output();
    expect(output).to.contain(`cannot enter ${closed} (mode 0700)`);
    expect(output).to.contain('DATABASE_URL');
    expect(output).to.not.contain('Cannot read properties of undefined');
    expect(existsSync(join(target, 'postgres/pgdata')), 'no half-made cluster').to.equal(false);
    expect(readdirSync(target), 'DATA_DIR is left as it was').to.deep.equal([]);
    rmSync(closed, { recursive: true, force: true });
  });
});

describe('function gateway process (DAS_MODE=function-gateway, dataplane/src/main.ts)', function () {
  this.timeout(60_000);

  it('on SIGTERM answers /readyz 503 draining at once, keeps serving for DAS_SHUTDOWN_DELAY_MS, then exits 0', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const main = startMain({ DAS_MODE: 'function-gateway', DAS_UPSTREAM_URL: 'http://127.0.0.1:1', DAS_FUNCTION_NAME: 'fn', PORT: String(port), HOST: '127.0.0.1', DAS_SHUTDOWN_DELAY_MS: '1500' });
    try {
      await waitReady(url, main);
      main.child.kill('SIGTERM');
      let ready = await call(url, { path: '/readyz' });
      for (let i = 0; i < 50 && ready.status === 200; i++) {
        await new Promise((r) => setTimeout(r, 20));
        ready = await call(url, { path: '/readyz' });
      }
      expect(ready.status).to.equal(503);
      expect(ready.json.data.status).to.equal('draining');
      expect((await call(url, { path: '/healthz' })).status, 'still serving during the delay').to.equal(200);
      expect(await main.exited, main.output().slice(-2000)).to.equal(0);
    } finally {
      if (main.child.exitCode === null) main.child.kill('SIGKILL');
    }
  });
});
