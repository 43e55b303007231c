/**
 * Subscriptions across two replicas on one store, for any location with a change feed: a
 * graphql-ws subscriber on replica `a` receiving the writes made through replica `b` — create,
 * replace, merge, delete, an ATOMIC batch, a bulk load — resuming after a disconnect with nothing
 * lost or repeated, an expired cursor refused, and /metrics counting the feed's reads and lag; and
 * the older protocol's subscriber with a filter and ids getting exactly the changes that match.
 * The PostgreSQL version with the protocol details is dataplane/src/graphql/subscriptions.test.ts.
 */
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Client } from 'graphql-ws';
import WebSocket from 'ws';
import { gqlClient, wsUrl } from './graphql-ws.js';
import { adminClient, startTestDataPlane, type TestDataPlane } from './dataplane.js';
import { waitForTransaction } from './transactions.js';

export interface FeedReplicas {
  a: TestDataPlane;
  b: TestDataPlane;
  /** Where `b` may read bulk-load files from (a `file:` directory its transactions accept). */
  imports: string;
  /** A cursor like `cursor` but past the retention (the store's own way of saying so). */
  expire(cursor: string): Promise<string>;
  /** Events of one ATOMIC batch arrive in commit order (not on DynamoDB: per item only). */
  batchOrdered: boolean;
  stop(): Promise<void>;
}

/**
 * Two data planes on one store and one data directory (`a` and `b`), with a bulk-load import
 * directory, once both serve the demo dataset.
 */
export async function startReplicaPair(manifests: string, prefix: string, env: Record<string, string>): Promise<Pick<FeedReplicas, 'a' | 'b' | 'imports'>> {
  const dataDir = mkdtempSync(join(tmpdir(), prefix));
  const a = await startTestDataPlane({ manifests, dataDir, env });
  const b = await startTestDataPlane({ manifests, dataDir, env });
  const imports = join(dataDir, 'imports');
  mkdirSync(imports, { recursive: true });
  // The dataset serves once its tables exist.
  for (const dp of [a, b]) for (let i = 0; i < 200 && !dp.dataPlane.store.dataset('demo'); i++) await new Promise((r) => setTimeout(r, 100));
  return { a, b, imports };
}

type Ev = { data?: Record<string, { op: string; cursor: string; record: Record<string, unknown> | null }>; errors?: { extensions?: { code?: string } }[] };

/**
 * Writes of demo.Person: create, replace, merge, delete, then an ATOMIC batch (p2, a company, p3),
 * giving CREATE p1 1, UPDATE p1 2, UPDATE p1 3, DELETE p1 4, CREATE p2 1, CREATE p3 1.
 */
export const PERSON_WRITES: readonly unknown[] = [
  { create: { schema: 'demo.Person', id: 'p1', data: { name: 'Ada', age: 36, address: { postcode: 'N1' }, employer: { id: 'acme' } } } },
  { update: { schema: 'demo.Person', id: 'p1', data: { name: 'Ada L', age: 37 } } },
  { update: { schema: 'demo.Person', id: 'p1', data: { address: { postcode: 'E2' } }, mode: 'merge' } },
  { delete: { schema: 'demo.Person', id: 'p1' } },
  {
    batch: {
      actions: {
        x: { create: { schema: 'demo.Person', id: 'p2', data: { name: 'Bo' }, consistency: 'ATOMIC' } },
        c: { create: { schema: 'demo.Company', id: 'initech', data: { name: 'Initech' }, consistency: 'ATOMIC' } },
        y: { create: { schema: 'demo.Person', id: 'p3', data: { name: 'Cy', employer: { id: 'initech' } }, consistency: 'ATOMIC' } },
      },
    },
  },
];

/** A subscription read in the background: its events wait here until taken. */
interface Collected {
  /** The next event, or undefined after `ms` without one. */
  next(ms: number): Promise<Ev | undefined>;
  take(n: number, ms: number): Promise<Ev[]>;
  stop(): Promise<void>;
}

function collect(iterator: AsyncIterator<Ev>): Collected {
  const queue: Ev[] = [];
  let wake: (() => void) | undefined;
  let ended: unknown;
  void (async () => {
    try {
      for (let r = await iterator.next(); !r.done; r = await iterator.next()) {
        queue.push(r.value);
        wake?.();
      }
      ended = new Error('the subscription ended');
    } catch (err) {
      ended = err;
    }
    wake?.();
  })();
  const next = async (ms: number) => {
    const deadline = Date.now() + ms;
    while (!queue.length && !ended && Date.now() < deadline) await new Promise<void>((r) => ((wake = r), setTimeout(r, Math.max(0, deadline - Date.now()))));
    if (queue.length) return queue.shift();
    if (ended) throw ended;
    return undefined;
  };
  return {
    next,
    async take(n, ms) {
      const out: Ev[] = [];
      const deadline = Date.now() + ms;
      while (out.length < n) {
        const ev = await next(deadline - Date.now());
        if (!ev) throw new Error(`timed out after ${out.length} of ${n} events: ${JSON.stringify(out)}`);
        out.push(ev);
      }
      return out;
    },
    stop: async () => void (await iterator.return?.()),
  };
}

/**
 * A subscription over the older protocol (subscriptions-transport-ws, subprotocol `graphql-ws`):
 * a bare `ws` client sending connection_init, then `start`; its `data` payloads as an iterator.
 */
function legacyIterate(dp: TestDataPlane, query: string, variables: Record<string, unknown>, sockets: WebSocket[]): AsyncIterator<Ev> {
  const ws = new WebSocket(wsUrl(dp), 'graphql-ws');
  sockets.push(ws);
  const queue: Ev[] = [];
  let wake: (() => void) | undefined;
  let closed: Error | undefined;
  ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: 'Proxy demo-admin' } })));
  ws.on('message', (data) => {
    const message = JSON.parse(String(data)) as { type: string; payload?: Ev };
    if (message.type === 'connection_ack') ws.send(JSON.stringify({ id: '1', type: 'start', payload: { query, variables } }));
    else if (message.type === 'data') queue.push(message.payload!);
    else if (message.type === 'error' || message.type === 'connection_error') closed = new Error(`${message.type}: ${JSON.stringify(message.payload)}`);
    wake?.();
  });
  ws.on('error', (err) => ((closed = err), wake?.()));
  ws.on('close', (code) => ((closed ??= new Error(`closed ${code}`)), wake?.()));
  return {
    async next() {
      while (!queue.length && !closed) await new Promise<void>((r) => (wake = r));
      if (queue.length) return { done: false, value: queue.shift()! };
      throw closed;
    },
    async return() {
      ws.close();
      return { done: true, value: undefined };
    },
  };
}

const until = async (check: () => boolean, ms = 10_000) => {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
};

export function describeFeedAcrossReplicas(label: string, start: () => Promise<FeedReplicas>): void {
  describe(`subscriptions across two replicas: ${label}`, function () {
    this.timeout(120_000);
    let t: FeedReplicas;
    const clients: Client[] = [];
    const client = (dp: TestDataPlane) => {
      const c = gqlClient(dp);
      clients.push(c);
      return c;
    };
    const write = async (body: unknown) => {
      const r = await adminClient(t.b)({ path: '/demo', body });
      expect(r.status, r.text).to.be.oneOf([200, 201]);
      return r.json;
    };
    const person = (e: Ev) => e.data!.demo_Person;
    /**
     * Waits until a new subscription is live: the dispatcher counts it before its feed has found
     * its starting position (on DynamoDB a few Streams calls), and writes before that are not its.
     * Writes `probe` until one arrives; returns that event.
     */
    const goLive = async (sub: Collected, probe: (n: number) => unknown): Promise<Ev> => {
      await until(() => t.a.dataPlane.dispatcher.subscriptions >= 1);
      for (let n = 0; n < 20; n++) {
        await write(probe(n));
        for (let ev = await sub.next(1000); ev; ev = await sub.next(1000)) {
          // Earlier probes may still come: take them until this one.
          if (Object.values(ev.data ?? {})[0]?.record?.name === `probe ${n}`) return ev;
        }
      }
      throw new Error('the subscription never went live');
    };

    before(async () => {
      t = await start();
      await write({ create: { schema: 'demo.Company', id: 'acme', data: { name: 'Acme' } } });
    });
    const sockets: WebSocket[] = [];
    after(async () => {
      for (const ws of sockets) ws.terminate();
      await Promise.all(clients.map((c) => c.dispose()));
      await t?.stop();
    });

    it('delivers creates, replaces, merges, deletes, an ATOMIC batch and a bulk load written through the other replica', async () => {
      const sub = collect(client(t.a).iterate({ query: 'subscription { demo_Person { op cursor record { id version name age address { postcode } employer { id name } } } }' }) as AsyncIterator<Ev>);
      await goLive(sub, (n) => (n === 0 ? { create: { schema: 'demo.Person', id: 'p0', data: { name: 'probe 0' } } } : { update: { schema: 'demo.Person', id: 'p0', data: { name: `probe ${n}` } } }));
      for (const body of PERSON_WRITES) await write(body);
      writeFileSync(join(t.imports, 'feed-people.ndjson'), [JSON.stringify({ id: 'p4', name: 'Di' }), JSON.stringify({ id: 'p5', name: 'Ed', age: 5 })].join('\n'));
      const api = adminClient(t.b);
      const created = await api({ path: '/demo', body: { create: { schema: 'Transaction', data: { actions: [{ locationUri: pathToFileURL(join(t.imports, 'feed-people.ndjson')).href, operation: 'UPSERT', format: 'NDJSON', schema: 'demo.Person' }] } } } });
      expect(created.status, created.text).to.equal(202);
      expect((await waitForTransaction(api, created.json.id)).status).to.equal('SUCCEEDED');

      const events = (await sub.take(8, 30_000)).map(person);
      const seen = events.map((e) => [e.op, e.record?.id, e.record?.version]);
      expect(seen.slice(0, 4)).to.deep.equal([
        ['CREATE', 'p1', 1],
        ['UPDATE', 'p1', 2],
        ['UPDATE', 'p1', 3],
        ['DELETE', 'p1', 4],
      ]);
      const batch = seen.slice(4, 6);
      if (t.batchOrdered) expect(batch).to.deep.equal([['CREATE', 'p2', 1], ['CREATE', 'p3', 1]]);
      else expect(batch).to.have.deep.members([['CREATE', 'p2', 1], ['CREATE', 'p3', 1]]);
      // A bulk load's rows commit together: their order among themselves is the store's.
      expect(seen.slice(6)).to.have.deep.members([['CREATE', 'p4', 1], ['CREATE', 'p5', 1]]);
      expect(events[0].record).to.deep.include({ name: 'Ada', age: 36, address: { postcode: 'N1' }, employer: { id: 'acme', name: 'Acme' } });
      expect(events[1].record).to.deep.include({ name: 'Ada L', age: 37, address: null, employer: null });
      expect(events[2].record).to.deep.include({ name: 'Ada L', address: { postcode: 'E2' } });
      expect(events[3].record).to.deep.equal({ id: 'p1', version: 4, name: null, age: null, address: null, employer: null });
      expect(events.find((e) => e.record?.id === 'p3')!.record?.employer).to.deep.equal({ id: 'initech', name: 'Initech' });
      expect(events.find((e) => e.record?.id === 'p5')!.record).to.deep.include({ name: 'Ed', age: 5 });
      expect(await sub.next(1500), 'nothing more, nothing twice').to.equal(undefined);

      const metrics = (await adminClient(t.a)({ path: '/metrics' })).text;
      expect(Number(/^das_change_feed_reads\{dataset="demo"\} (\d+)$/m.exec(metrics)?.[1])).to.be.greaterThan(0);
      expect(metrics).to.match(/^das_change_feed_lag_seconds\{dataset="demo"\} [0-9.e+-]+$/m);
      await sub.stop();
    });

    it('the older protocol (subscriptions-transport-ws) with a filter and ids gets exactly the matching changes', async () => {
      const query = 'subscription($f: String, $ids: [ID!]) { demo_Person(filter: $f, ids: $ids) { op cursor record { id version name age } } }';
      const sub = collect(legacyIterate(t.a, query, { f: 'age >= 30', ids: ['q0', 'q1', 'q3'] }, sockets));
      // Probes match both the filter and the ids; they are taken until the subscription is live.
      await goLive(sub, (n) => (n === 0 ? { create: { schema: 'demo.Person', id: 'q0', data: { name: 'probe 0', age: 99 } } } : { update: { schema: 'demo.Person', id: 'q0', data: { name: `probe ${n}`, age: 99 } } }));
      await write({ create: { schema: 'demo.Person', id: 'q1', data: { name: 'In', age: 40 } } }); // matches
      await write({ create: { schema: 'demo.Person', id: 'q2', data: { name: 'Not in ids', age: 50 } } });
      await write({ create: { schema: 'demo.Person', id: 'q3', data: { name: 'Too young', age: 10 } } });
      await write({ update: { schema: 'demo.Person', id: 'q3', data: { name: 'Older', age: 35 } } }); // matches now
      const events = (await sub.take(2, 30_000)).map((e) => e.data!.demo_Person);
      expect(events.map((e) => [e.op, e.record?.id, e.record?.version, e.record?.age])).to.deep.equal([
        ['CREATE', 'q1', 1, 40],
        ['UPDATE', 'q3', 2, 35],
      ]);
      expect(await sub.next(1500), 'nothing else').to.equal(undefined);
      await sub.stop();
    });

    it('resumes after a disconnect with every missed change once, then live; a cursor past the retention is CURSOR_EXPIRED', async () => {
      const first = client(t.a);
      const sub = collect(first.iterate({ query: 'subscription { demo_Company { op cursor record { id name } } }' }) as AsyncIterator<Ev>);
      const seen = await goLive(sub, (n) => ({ update: { schema: 'demo.Company', id: 'acme', data: { name: `probe ${n}` } } }));
      const cursor = seen.data!.demo_Company.cursor;
      await first.dispose();
      await until(() => t.a.dataPlane.dispatcher.subscriptions === 0);
      for (const n of [2, 3, 4]) await write({ update: { schema: 'demo.Company', id: 'acme', data: { name: `Acme ${n}` } } });
      const resumed = collect(client(t.a).iterate({ query: 'subscription($after: String) { demo_Company(after: $after) { op cursor record { name } } }', variables: { after: cursor } }) as AsyncIterator<Ev>);
      const replayed = await resumed.take(3, 15_000);
      expect(replayed.map((e) => e.data!.demo_Company.record!.name)).to.deep.equal(['Acme 2', 'Acme 3', 'Acme 4']);
      await write({ update: { schema: 'demo.Company', id: 'acme', data: { name: 'Acme 5' } } });
      const [live] = await resumed.take(1, 15_000);
      expect(live.data!.demo_Company.record!.name).to.equal('Acme 5');
      expect(await resumed.next(1500), 'nothing repeated').to.equal(undefined);
      await resumed.stop();

      const old = await t.expire(live.data!.demo_Company.cursor);
      const expired = client(t.a).iterate({ query: 'subscription($after: String) { demo_Company(after: $after) { op } }', variables: { after: old } }) as AsyncIterator<Ev>;
      const [answer] = await collect(expired).take(1, 15_000);
      expect(answer.errors?.[0].extensions?.code).to.equal('CURSOR_EXPIRED');
    });
  });
}
