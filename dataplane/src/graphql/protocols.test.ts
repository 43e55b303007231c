/**
 * Both WebSocket protocols message by message, with a raw `ws` client against a real data plane:
 * the older graphql-ws protocol's whole exchange (init, ack, ka, start, data, error, stop,
 * complete, terminate) and, for both protocols, every protocol fault with its close code:
 * malformed messages, subscribe before the ack, duplicate ids, a second init, the init timeout,
 * refused credentials, and the per-connection limit.
 */
import { expect } from 'chai';
import WebSocket from 'ws';
import { adminClient, startTestDataPlane, type TestDataPlane } from '../../test-support/dataplane.js';
import { parseLegacyMessage } from './legacy-protocol.js';
import { chooseProtocol, closeReason, initAuthorization } from './websocket.js';

const ADMIN = 'Proxy demo-admin';
type Msg = Record<string, any>;

interface Peer {
  ws: WebSocket;
  next(ms?: number): Promise<Msg>;
  /** The next message that is not a keep-alive. */
  nextReal(ms?: number): Promise<Msg>;
  send(message: unknown): void;
  closed: Promise<{ code: number; reason: string }>;
}

function connect(dp: TestDataPlane, protocol: string, headers: Record<string, string> = {}): Promise<Peer> {
  const ws = new WebSocket(dp.url.replace('http://', 'ws://') + '/demo/graphql', protocol, { headers });
  const inbox: Msg[] = [];
  const waiters: ((m: Msg) => void)[] = [];
  ws.on('message', (data) => {
    const m = JSON.parse(String(data)) as Msg;
    const w = waiters.shift();
    if (w) w(m);
    else inbox.push(m);
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: String(reason) })));
  const next = (ms = 3000) =>
    new Promise<Msg>((resolve, reject) => {
      const m = inbox.shift();
      if (m) return resolve(m);
      const timer = setTimeout(() => reject(new Error('no message')), ms);
      waiters.push((msg) => {
        clearTimeout(timer);
        resolve(msg);
      });
    });
  const nextReal = async (ms = 3000): Promise<Msg> => {
    for (;;) {
      const m = await next(ms);
      if (m.type !== 'ka' && m.type !== 'ping' && m.type !== 'pong') return m;
    }
  };
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws, next, nextReal, send: (m) => ws.send(typeof m === 'string' ? m : JSON.stringify(m)), closed }));
    ws.once('error', reject);
  });
}

describe('WebSocket protocols: messages and faults', function () {
  this.timeout(60000);
  let dp: TestDataPlane;
  /** Until the replica counts one more subscription than `open`: it has taken its start position, so a write from now on reaches it. */
  const subscribed = async (open: number) => {
    for (const deadline = Date.now() + 30_000; dp.dataPlane.dispatcher.subscriptions <= open; await new Promise((r) => setTimeout(r, 10))) {
      if (Date.now() > deadline) throw new Error('the subscription was never counted');
    }
  };
  const write = (body: unknown) => adminClient(dp)({ path: '/demo', body });

  before(async () => {
    dp = await startTestDataPlane({ env: { DAS_SUBSCRIPTION_INIT_TIMEOUT_MS: '400', DAS_SUBSCRIPTION_KEEPALIVE_MS: '300', DAS_SUBSCRIPTIONS_PER_CONNECTION: '2' } });
    await write({ create: { schema: 'demo.Company', id: 'acme', data: { name: 'Acme' } } });
  });
  after(async () => dp?.stop());

  describe('the older graphql-ws protocol (subscriptions-transport-ws)', () => {
    it('init, ack, ka; start a subscription, data on a write, stop, complete; a query; keep-alives; terminate', async () => {
      const peer = await connect(dp, 'graphql-ws');
      expect(peer.ws.protocol).to.equal('graphql-ws');
      peer.send({ type: 'connection_init', payload: { Authorization: ADMIN } });
      expect(await peer.next()).to.deep.equal({ type: 'connection_ack' });
      expect(await peer.next()).to.deep.equal({ type: 'ka' });
      const open = dp.dataPlane.dispatcher.subscriptions;
      peer.send({ type: 'start', id: '1', payload: { query: 'subscription S($ids: [ID!]) { demo_Company(ids: $ids) { op record { id name } } }', variables: { ids: ['acme'] } } });
      await subscribed(open);
      await write({ update: { schema: 'demo.Company', id: 'acme', data: { name: 'Acme 2' } } });
      expect(await peer.nextReal()).to.deep.equal({ type: 'data', id: '1', payload: { data: { demo_Company: { op: 'UPDATE', record: { id: 'acme', name: 'Acme 2' } } } } });
      // Keep-alives keep coming.
      let kas = 0;
      for (let i = 0; i < 3; i++) if ((await peer.next(1000)).type === 'ka') kas++;
      expect(kas).to.equal(3);
      peer.send({ type: 'stop', id: '1' });
      expect(await peer.nextReal()).to.deep.equal({ type: 'complete', id: '1' });
      await write({ update: { schema: 'demo.Company', id: 'acme', data: { name: 'Acme 3' } } });
      peer.send({ type: 'start', id: '2', payload: { query: '{ demo_Company(id: "acme") { name } }' } });
      expect(await peer.nextReal()).to.deep.equal({ type: 'data', id: '2', payload: { data: { demo_Company: { name: 'Acme 3' } } } });
      expect(await peer.nextReal()).to.deep.equal({ type: 'complete', id: '2' });
      peer.send({ type: 'connection_terminate' });
      expect((await peer.closed).code).to.equal(1000);
    });

    it('answers an invalid operation with error for that id and keeps the connection', async () => {
      const peer = await connect(dp, 'graphql-ws');
      peer.send({ type: 'connection_init', payload: { authorization: ADMIN } });
      expect((await peer.next()).type).to.equal('connection_ack');
      peer.send({ type: 'start', id: 'a', payload: { query: 'subscription { demo_Company { salary } }' } });
      const error = await peer.nextReal();
      expect(error.type).to.equal('error');
      expect(error.id).to.equal('a');
      expect(error.payload[0].message).to.contain('salary');
      peer.send({ type: 'start', id: 'b', payload: { query: 'subscription { demo_Company(filter: "name ==") { op } }' } });
      const bad = await peer.nextReal();
      expect(bad).to.deep.include({ type: 'error', id: 'b' });
      expect(bad.payload[0].extensions.code).to.equal('INVALID_FILTER');
      peer.send({ type: 'start', id: 'c', payload: { query: 'subscription { demo_Company(after: "not-a-cursor") { op } }' } });
      expect((await peer.nextReal()).payload[0].extensions.code).to.equal('INVALID_CURSOR');
      // Two subscriptions at most per connection here (DAS_SUBSCRIPTIONS_PER_CONNECTION=2).
      for (const id of ['d', 'e']) peer.send({ type: 'start', id, payload: { query: 'subscription { demo_Company { op } }' } });
      peer.send({ type: 'start', id: 'f', payload: { query: 'subscription { demo_Company { op } }' } });
      const limited = await peer.nextReal();
      expect(limited).to.deep.include({ type: 'error', id: 'f' });
      expect(limited.payload[0].extensions.code).to.equal('TOO_MANY_SUBSCRIPTIONS');
      peer.ws.close();
    });

    const faults: Array<[string, (peer: Peer) => Promise<void> | void, number]> = [
      ['a message that is not JSON', (p) => p.send('{nope'), 4400],
      ['a JSON array', (p) => p.send('[]'), 4400],
      ['an unknown type', (p) => p.send({ type: 'subscribe', id: '1' }), 4400],
      ['start without an id', (p) => p.send({ type: 'start', payload: { query: '{ __typename }' } }), 4400],
      ['a binary message', (p) => p.ws.send(Buffer.from('{"type":"connection_init"}'), { binary: true }), 4400],
      ['start before connection_init', (p) => p.send({ type: 'start', id: '1', payload: { query: '{ __typename }' } }), 4401],
      ['no connection_init in time', () => undefined, 4408],
      [
        'a second connection_init',
        async (p) => {
          p.send({ type: 'connection_init', payload: { Authorization: ADMIN } });
          await p.next();
          p.send({ type: 'connection_init', payload: { Authorization: ADMIN } });
        },
        4429,
      ],
      [
        'a start with an id in use',
        async (p) => {
          p.send({ type: 'connection_init', payload: { Authorization: ADMIN } });
          await p.next();
          for (let i = 0; i < 2; i++) p.send({ type: 'start', id: 'same', payload: { query: 'subscription { demo_Company { op } }' } });
        },
        4409,
      ],
      ['credentials refused', (p) => p.send({ type: 'connection_init', payload: { Authorization: 'Proxy intruder' } }), 4403],
    ];
    for (const [what, act, code] of faults) {
      it(`closes with ${code} on ${what}`, async () => {
        const peer = await connect(dp, 'graphql-ws');
        await act(peer);
        expect((await peer.closed).code).to.equal(code);
      });
    }

    it('connection_error before the close when credentials are refused', async () => {
      const peer = await connect(dp, 'graphql-ws');
      peer.send({ type: 'connection_init', payload: { Authorization: 'Proxy intruder' } });
      const m = await peer.next();
      expect(m.type).to.equal('connection_error');
      expect(m.payload.code).to.equal('PRINCIPAL_NOT_ALLOWED');
    });
  });

  describe('graphql-transport-ws', () => {
    it('ack, subscribe, next, ping/pong, complete; the upgrade credentials suffice for connection_init', async () => {
      const peer = await connect(dp, 'graphql-transport-ws', { authorization: ADMIN });
      peer.send({ type: 'connection_init' });
      expect((await peer.next()).type).to.equal('connection_ack');
      peer.send({ type: 'ping' });
      expect(await peer.next()).to.deep.equal({ type: 'pong' });
      const open = dp.dataPlane.dispatcher.subscriptions;
      peer.send({ id: 'x', type: 'subscribe', payload: { query: 'subscription { demo_Company { op record { name } } }' } });
      await subscribed(open);
      await write({ update: { schema: 'demo.Company', id: 'acme', data: { name: 'Acme 4' } } });
      expect(await peer.nextReal()).to.deep.equal({ id: 'x', type: 'next', payload: { data: { demo_Company: { op: 'UPDATE', record: { name: 'Acme 4' } } } } });
      peer.send({ id: 'x', type: 'complete' });
      await new Promise((r) => setTimeout(r, 100));
      await write({ update: { schema: 'demo.Company', id: 'acme', data: { name: 'Acme 5' } } });
      await expectNothing(peer);
      peer.ws.close();
    });

    const faults: Array<[string, (peer: Peer) => Promise<void> | void, number]> = [
      ['a message that is not JSON', (p) => p.send('{nope'), 4400],
      ['an unknown type', (p) => p.send({ type: 'start', id: '1' }), 4400],
      ['subscribe before the ack', (p) => p.send({ id: '1', type: 'subscribe', payload: { query: '{ __typename }' } }), 4401],
      ['no connection_init in time', () => undefined, 4408],
      [
        'a second connection_init',
        async (p) => {
          p.send({ type: 'connection_init', payload: { Authorization: ADMIN } });
          await p.next();
          p.send({ type: 'connection_init', payload: { Authorization: ADMIN } });
        },
        4429,
      ],
      [
        'a subscribe with an id in use',
        async (p) => {
          p.send({ type: 'connection_init', payload: { Authorization: ADMIN } });
          await p.next();
          for (let i = 0; i < 2; i++) p.send({ id: 'same', type: 'subscribe', payload: { query: 'subscription { demo_Company { op } }' } });
        },
        4409,
      ],
      ['credentials refused', (p) => p.send({ type: 'connection_init', payload: { Authorization: 'Proxy intruder' } }), 4403],
      ['no credentials', (p) => p.send({ type: 'connection_init' }), 4401],
    ];
    for (const [what, act, code] of faults) {
      it(`closes with ${code} on ${what}`, async () => {
        const peer = await connect(dp, 'graphql-transport-ws');
        await act(peer);
        expect((await peer.closed).code).to.equal(code);
      });
    }

    it('refuses a subscription past the per-connection limit with an error for that id', async () => {
      const peer = await connect(dp, 'graphql-transport-ws');
      peer.send({ type: 'connection_init', payload: { Authorization: ADMIN } });
      await peer.next();
      for (const id of ['1', '2', '3']) peer.send({ id, type: 'subscribe', payload: { query: 'subscription { demo_Company { op } }' } });
      const m = await peer.nextReal();
      expect(m).to.deep.include({ id: '3', type: 'error' });
      expect(m.payload[0].extensions.code).to.equal('TOO_MANY_SUBSCRIPTIONS');
      peer.ws.close();
    });
  });

  it('pure parts: message parsing, protocol choice, credentials from the init payload, close reasons', () => {
    expect(parseLegacyMessage('{"type":"stop","id":"1"}')).to.deep.equal({ type: 'stop', id: '1' });
    expect(parseLegacyMessage('{"type":"connection_init","payload":3}')).to.have.property('malformed');
    expect(parseLegacyMessage('{"type":"start","id":"1","payload":{"query":"{a}","variables":[]}}')).to.have.property('malformed');
    expect(parseLegacyMessage('{"type":"start","id":"1","payload":{"query":"{a}","operationName":5}}')).to.have.property('malformed');
    expect(parseLegacyMessage('null')).to.have.property('malformed');
    expect(chooseProtocol(undefined)).to.equal('graphql-transport-ws');
    expect(chooseProtocol('graphql-ws, graphql-transport-ws')).to.equal('graphql-transport-ws');
    expect(chooseProtocol('graphql-ws')).to.equal('graphql-ws');
    expect(chooseProtocol('mqtt')).to.equal(undefined);
    expect(initAuthorization({ AUTHORIZATION: 'Proxy x' })).to.equal('Proxy x');
    expect(initAuthorization({ Authorization: 5 })).to.equal(undefined);
    expect(Buffer.byteLength(closeReason('é'.repeat(200)))).to.be.at.most(123);
  });
});

async function expectNothing(peer: Peer, ms = 400): Promise<void> {
  const got = await peer.nextReal(ms).then(
    (m) => m,
    () => undefined,
  );
  expect(got).to.equal(undefined);
}
