/**
 * A rolling restart through the real entry point (dataplane/src/main.ts, as `npm start` and the
 * container run it): two replicas on one PostgreSQL behind a readiness-aware round-robin proxy
 * (test-support/ready-proxy.ts, refreshing from /readyz every second as endpoints do), steady REST
 * load on keep-alive and on fresh connections, and subscribers of both protocols that resume with
 * `after: <cursor>` on 1012. Each replica is SIGTERMed, waited for and started again in turn.
 * Nothing may fail, no event may be lost or repeated, and each replica must be gone within its
 * shutdown delay plus the time its in-flight work takes (bounded generously: delay + 5 s).
 */
import { expect } from 'chai';
import { Agent } from 'node:http';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../src/db/embedded.js';
import { call } from '../test-support/http.js';
import { startMain, waitReady, type MainProcess } from '../test-support/main-process.js';
import { freshDatabase } from '../test-support/postgres.js';
import { ReadyProxy } from '../test-support/ready-proxy.js';
import { ResumingSubscriber } from '../test-support/resuming-subscriber.js';

const ADMIN = 'Proxy demo-admin';
const DELAY_MS = 2000;
const PACE_MS = 5;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Load {
  requests: number;
  failures: string[];
  /** Ids whose create was answered 201. */
  created: string[];
  stop(): Promise<void>;
}

/**
 * Clients that each send one request after another (paced by PACE_MS, so a restarting replica gets
 * some of the 2 cores) until stopped: creates (which become events) and reads of the last create.
 */
function steadyLoad(url: string, clients: { name: string; agent: Agent | false }[]): Load {
  let running = true;
  const load: Load = { requests: 0, failures: [], created: [], stop: async () => undefined };
  const loops = clients.map(async ({ name, agent }) => {
    for (let i = 0; running; i++) {
      const id = `${name}-${i}`;
      const create = i % 2 === 0;
      const path = create ? '/demo' : `/demo/demo.Person/${name}-${i - 1}`;
      try {
        const res = await call(url, { path, host: 'iam.localhost', headers: { authorization: ADMIN }, agent, body: create ? { create: { schema: 'demo.Person', id, data: { name: id, age: i % 90 } } } : undefined });
        load.requests++;
        if (res.status !== (create ? 201 : 200)) load.failures.push(`${name} ${path}: ${res.status} ${res.text.slice(0, 200)}`);
        else if (create) load.created.push(id);
      } catch (err) {
        load.requests++;
        load.failures.push(`${name} ${path}: ${(err as Error).message}`);
      }
      await sleep(PACE_MS);
    }
  });
  load.stop = async () => {
    running = false;
    await Promise.all(loops);
  };
  return load;
}

describe('rolling restart of two data-plane replicas (dataplane/src/main.ts) behind a readiness-aware proxy', function () {
  this.timeout(120_000);
  const dirs: string[] = [];
  const replicas: (MainProcess | undefined)[] = [];
  let proxy: ReadyProxy | undefined;

  after(async () => {
    await proxy?.close();
    for (const r of replicas) if (r && r.child.exitCode === null) r.child.kill('SIGKILL');
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('loses no request and no event, and each replica exits within its delay plus in-flight time', async () => {
    const databaseUrl = await freshDatabase('rolling');
    const ports = [await freePort(), await freePort()];
    const start = async (i: number) => {
      const dir = mkdtempSync(join(tmpdir(), 'das-rolling-'));
      chmodSync(dir, 0o755);
      dirs.push(dir);
      const main = startMain({ DATA_DIR: dir, PORT: String(ports[i]), HOST: '127.0.0.1', DATABASE_URL: databaseUrl, DAS_SHUTDOWN_DELAY_MS: String(DELAY_MS) }, 'compiled');
      replicas[i] = main;
      await waitReady(`http://127.0.0.1:${ports[i]}`, main);
      return main;
    };
    // One after the other: the first prepares the tables, the second finds them.
    await start(0);
    await start(1);
    proxy = await ReadyProxy.start(ports, 1000);
    await proxy.waitFor(ports[0]);
    await proxy.waitFor(ports[1]);

    const wsUrl = `${proxy.url.replace('http', 'ws')}/demo/graphql`;
    const subscribers = [
      new ResumingSubscriber(wsUrl, 'graphql-transport-ws', ADMIN),
      new ResumingSubscriber(wsUrl, 'graphql-transport-ws', ADMIN),
      new ResumingSubscriber(wsUrl, 'graphql-ws', ADMIN),
      new ResumingSubscriber(wsUrl, 'graphql-ws', ADMIN),
    ];
    await Promise.all(subscribers.map((s) => s.started));
    // A marker write every subscriber must see: from then on, each is registered and counting.
    expect((await call(proxy.url, { path: '/demo', host: 'iam.localhost', headers: { authorization: ADMIN }, body: { create: { schema: 'demo.Person', id: 'marker', data: { name: 'marker' } } } })).status).to.equal(201);
    const deadline = Date.now() + 15_000;
    while (subscribers.some((s) => !s.created.includes('marker')) && Date.now() < deadline) await sleep(50);
    for (const s of subscribers) expect(s.created, 'every subscriber saw the marker').to.include('marker');

    const load = steadyLoad(proxy.url, [
      { name: 'keepalive-a', agent: new Agent({ keepAlive: true, maxSockets: 1 }) },
      { name: 'keepalive-b', agent: new Agent({ keepAlive: true, maxSockets: 1 }) },
      { name: 'fresh-a', agent: false },
      { name: 'fresh-b', agent: false },
    ]);
    const exits: number[] = [];
    await sleep(1000);
    for (const i of [0, 1]) {
      const main = replicas[i]!;
      const signalled = Date.now();
      main.child.kill('SIGTERM');
      const code = await main.exited;
      exits.push(Date.now() - signalled);
      expect(code, main.output().slice(-2000)).to.equal(0);
      await start(i);
      await proxy.waitFor(ports[i]);
      await sleep(1000);
    }
    await load.stop();

    const created = new Set(['marker', ...load.created]);
    const settle = Date.now() + 20_000;
    while (subscribers.some((s) => s.created.length < created.size) && Date.now() < settle) await sleep(100);
    for (const s of subscribers) s.stop();

    const resumes = subscribers.map((s) => s.resumes);
    console.log(
      `      (${load.requests} requests, ${load.failures.length} failed; ${load.created.length} creates; exits after ${exits.join(' ms, ')} ms with a ${DELAY_MS} ms delay; ` +
        `subscribers resumed ${resumes.join('/')} times, events per subscriber ${subscribers.map((s) => s.created.length).join('/')})`,
    );
    expect(load.failures, 'failed requests').to.deep.equal([]);
    expect(proxy.upstreamFailures, 'connections the proxy could not place').to.equal(0);
    expect(load.requests).to.be.greaterThan(100);
    for (const exit of exits) expect(exit, 'exit within delay + in-flight time').to.be.below(DELAY_MS + 5000);
    for (const s of subscribers) {
      expect(s.failures, 'subscriber failures').to.deep.equal([]);
      expect(s.repeated, 'repeated events').to.deep.equal([]);
      expect(new Set(s.created).size, 'no id twice').to.equal(s.created.length);
      expect([...created].filter((id) => !s.created.includes(id)), 'lost events').to.deep.equal([]);
      expect(s.created.filter((id) => !created.has(id)), 'events of writes that were not acknowledged').to.deep.equal([]);
      expect(s.closes.slice(0, -1).every((c) => c === 1012), `closes before the end: ${s.closes.join(',')}`).to.equal(true);
    }
    expect(resumes.reduce((a, b) => a + b, 0), 'subscribers were moved by the restarts').to.be.at.least(subscribers.length);
  });
});
