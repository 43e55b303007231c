/**
 * The WebSocket and GraphQL surface against what an attacker on the network can send, through the
 * real entry point (main.ts as a child process, as `npm start` runs it): frames `ws` refuses before
 * any credentials, more connections than a replica may hold, a subscriber that stops reading while
 * many writes happen, operations over the GraphQL limits on every transport, and requests node's
 * HTTP parser refuses. Each time the process lives (/readyz answers) and the answer is the
 * documented close code or JSON error.
 */
import { expect } from 'chai';
import { connect } from 'node:net';
import WebSocket from 'ws';
import { call, client } from '../test-support/http.js';
import { rssOf, startReadyMain, stopMain, type ReadyMain } from '../test-support/main-process.js';
import { frame, OPCODE, rawUpgrade, textFrame, type RawWebSocket } from '../test-support/ws-frames.js';

const ADMIN = 'Proxy demo-admin';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MAX_CONNECTIONS = 12;
const MAX_UNAUTHENTICATED = 6;
const BUFFER_BUDGET = 1024 * 1024;

async function until(check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A `ws` client, connected (and initialised unless `init` is false). */
async function wsClient(port: number, protocol: 'graphql-transport-ws' | 'graphql-ws', init = true) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/demo/graphql`, protocol, { headers: { host: 'iam.localhost' } });
  const messages: Record<string, any>[] = [];
  ws.on('message', (data) => messages.push(JSON.parse(String(data))));
  ws.on('error', () => undefined);
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const next = async (type: string, timeoutMs = 10_000) => {
    await until(() => messages.some((m) => m.type === type), timeoutMs);
    return messages.splice(messages.findIndex((m) => m.type === type), 1)[0];
  };
  if (init) {
    ws.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: ADMIN } }));
    await next('connection_ack');
  }
  return { ws, messages, closed, next };
}

describe('WebSocket and GraphQL surface under hostile input (main.ts)', function () {
  this.timeout(120_000);
  let main: ReadyMain;
  let port: number;
  let url: string;
  let api: ReturnType<typeof client>;
  const alive = async () => {
    expect(main.child.exitCode, main.output().slice(-2000)).to.equal(null);
    expect((await call(url, { path: '/readyz' })).status).to.equal(200);
  };

  before(async () => {
    main = await startReadyMain({
      DAS_WS_MAX_CONNECTIONS: String(MAX_CONNECTIONS),
      DAS_WS_MAX_UNAUTHENTICATED: String(MAX_UNAUTHENTICATED),
      DAS_WS_MAX_BUFFERED_BYTES: String(BUFFER_BUDGET),
      DAS_WS_CLOSE_GRACE_MS: '1000',
      // Only the byte budget bounds the slow consumer below, not the count of queued events.
      DAS_SUBSCRIPTION_QUEUE: '100000',
    });
    port = main.port;
    url = main.url;
    api = client(url, { host: 'iam.localhost', headers: { authorization: ADMIN } });
    const made = await api({ path: '/demo', body: { create: { schema: 'demo.Company', id: 'acme', data: { name: 'Acme' } } } });
    expect(made.status, made.text).to.equal(201);
  });

  after(() => stopMain(main));

  describe('frames ws refuses, before connection_init', () => {
    const cases: Array<[string, () => Buffer[], number]> = [
      ['a 10 MiB text frame', () => [frame({ opcode: OPCODE.text, payload: Buffer.alloc(10 * 1024 * 1024, 0x61) })], 1009],
      ['a length header of 2^63 - 1 with no payload', () => [frame({ opcode: OPCODE.text, declaredLength: 2n ** 63n - 1n })], 1009],
      ['a text frame of invalid UTF-8 (ff fe 41)', () => [frame({ opcode: OPCODE.text, payload: Buffer.from([0xff, 0xfe, 0x41]) })], 1007],
      ['a reserved opcode (3)', () => [frame({ opcode: 3, payload: 'x' })], 1002],
      ['an unmasked frame', () => [frame({ opcode: OPCODE.text, payload: '{}', mask: false })], 1002],
      ['RSV1 without an extension', () => [frame({ opcode: OPCODE.text, payload: '{}', rsv: 4 })], 1002],
      ['a continuation without a first fragment', () => [frame({ opcode: OPCODE.continuation, payload: 'x' })], 1002],
      ['a fragmented ping', () => [frame({ opcode: OPCODE.ping, payload: 'x', fin: false })], 1002],
      ['invalid UTF-8 split across fragments', () => [frame({ opcode: OPCODE.text, payload: Buffer.from([0x7b, 0xe2]), fin: false }), frame({ opcode: OPCODE.continuation, payload: Buffer.from([0x28, 0x7d]) })], 1007],
    ];
    for (const [name, frames, code] of cases) {
      it(`${name}: that connection closes with ${code}, the process lives`, async () => {
        const raw = await rawUpgrade(port);
        expect(raw.status, raw.head).to.equal(101);
        for (const f of frames()) raw.send(f);
        expect(await raw.closed).to.equal(code);
        await alive();
      });
    }

    it('a message fragmented correctly is one message: connection_init in three frames is acknowledged', async () => {
      const raw = await rawUpgrade(port);
      const init = Buffer.from(JSON.stringify({ type: 'connection_init', payload: { Authorization: ADMIN } }));
      raw.send(frame({ opcode: OPCODE.text, payload: init.subarray(0, 5), fin: false }));
      raw.send(frame({ opcode: OPCODE.ping, payload: 'between fragments' }));
      raw.send(frame({ opcode: OPCODE.continuation, payload: init.subarray(5, 20), fin: false }));
      raw.send(frame({ opcode: OPCODE.continuation, payload: init.subarray(20) }));
      await until(() => raw.messages.length > 0);
      expect(JSON.parse(raw.messages[0])).to.deep.equal({ type: 'connection_ack' });
      raw.send(frame({ opcode: OPCODE.close, payload: Buffer.from([0x03, 0xe8]) }));
      expect(await raw.closed).to.equal(1000);
    });
  });

  describe('per-replica connection caps', () => {
    it(`holds at most ${MAX_UNAUTHENTICATED} unauthenticated and ${MAX_CONNECTIONS} in all; past a cap the upgrade is a 503 JSON error with Retry-After`, async () => {
      const open: RawWebSocket[] = [];
      for (let i = 0; i < MAX_UNAUTHENTICATED; i++) open.push(await rawUpgrade(port));
      expect(open.map((r) => r.status)).to.deep.equal(Array(MAX_UNAUTHENTICATED).fill(101));
      expect((await call(url, { path: '/metrics' })).text).to.match(new RegExp(`^das_subscription_unauthenticated_connections ${MAX_UNAUTHENTICATED}$`, 'm'));
      const refused = await rawUpgrade(port);
      expect(refused.status).to.equal(503);
      expect(refused.head).to.match(/\r\nretry-after: \d+/i);
      expect(/\r\nx-request-id: (\S+)/i.exec(refused.head)?.[1]).to.match(UUID);
      await refused.closed;
      const body = JSON.parse(refused.body());
      expect(body.error.code).to.equal('TOO_MANY_CONNECTIONS');
      expect(body.error.message).to.contain(`${MAX_UNAUTHENTICATED} WebSocket connections that have not authenticated`);
      expect(body.requestId).to.match(UUID);

      // Credentials in the upgrade count only against the total.
      const authorised = { headers: { authorization: ADMIN } };
      for (let i = MAX_UNAUTHENTICATED; i < MAX_CONNECTIONS; i++) open.push(await rawUpgrade(port, authorised));
      expect(open.map((r) => r.status)).to.deep.equal(Array(MAX_CONNECTIONS).fill(101));
      const full = await rawUpgrade(port, authorised);
      expect(full.status).to.equal(503);
      await full.closed;
      expect(JSON.parse(full.body()).error.message).to.contain(`at most ${MAX_CONNECTIONS} WebSocket connections`);

      // connection_init authenticates: that one no longer counts as unauthenticated.
      open[0].send(textFrame({ type: 'connection_init', payload: { Authorization: ADMIN } }));
      await until(() => open[0].messages.length > 0);
      open[MAX_CONNECTIONS - 1].socket.destroy();
      await open[MAX_CONNECTIONS - 1].closed;
      await until(async () => (await rawUpgrade(port).then((r) => (r.socket.destroy(), r.status))) === 101);

      // Once connections close, upgrades are accepted again.
      for (const r of open) r.socket.destroy();
      await until(async () => {
        const again = await rawUpgrade(port);
        again.socket.destroy();
        return again.status === 101;
      });
      await alive();
    });
  });

  describe('GraphQL operation limits on every transport', () => {
    const aliases = (n: number, field: (i: number) => string) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: ${field(i)}`).join(' ')} }`;
    const refusals: Array<[string, string, string]> = [
      ['20,000 aliases', aliases(20_000, () => '__typename'), 'QUERY_TOO_LONG'],
      ['1,000 aliased reads', aliases(1000, (i) => `demo_Person(id: "p${i}") { id }`), 'QUERY_TOO_LONG'],
      ['200 aliased reads (over the 100 aliases, under the 500 selections)', aliases(200, (i) => `demo_Person(id: "p${i}") { id }`), 'TOO_MANY_ALIASES'],
      ['150 aliases of list(limit: 1000)', aliases(150, () => 'list_demo_Person(limit: 1000) { items { id } }'), 'TOO_MANY_ALIASES'],
      ['6 lists of 1,000', aliases(6, () => 'list_demo_Person(limit: 1000) { items { id } }'), 'QUERY_TOO_COMPLEX'],
      ['an inverse link of 100 under a list of 100', '{ list_demo_Company(limit: 100) { items { employees(limit: 100) { items { id } } } } }', 'QUERY_TOO_COMPLEX'],
      ['links nested 6 deep', `{ demo_Company(id: "acme") { ${'employees { items { employer { '.repeat(6)}name${' } } }'.repeat(6)} } }`, 'QUERY_TOO_DEEP'],
    ];
    const ordinary = '{ demo_Company(id: "acme") { name employees(limit: 10) { items { id } } } }';

    it('HTTP POST: 400 naming the limit; an ordinary query answers', async () => {
      for (const [name, query, code] of refusals) {
        const res = await api({ path: '/demo/graphql', body: { query } });
        expect(res.status, `${name}: ${res.text.slice(0, 300)}`).to.equal(400);
        expect(res.json.error.code, name).to.equal(code);
        expect(res.json.error.details[0].path).to.equal('$.query');
        expect(res.headers['x-request-id']).to.match(UUID);
      }
      const ok = await api({ path: '/demo/graphql', body: { query: ordinary } });
      expect(ok.json).to.deep.equal({ data: { demo_Company: { name: 'Acme', employees: { items: [] } } } });
      await alive();
    });

    const protocols = [
      { protocol: 'graphql-transport-ws', start: 'subscribe', result: 'next' },
      { protocol: 'graphql-ws', start: 'start', result: 'data' },
    ] as const;
    for (const { protocol, start, result } of protocols) {
      it(`${protocol}: an error message naming the limit; the connection stays usable`, async () => {
        const c = await wsClient(port, protocol);
        for (const [name, query, code] of refusals) {
          c.ws.send(JSON.stringify({ id: name, type: start, payload: { query } }));
          const error = await c.next('error');
          expect(error.id).to.equal(name);
          expect(error.payload[0].extensions.code, name).to.equal(code);
        }
        c.ws.send(JSON.stringify({ id: 'ok', type: start, payload: { query: ordinary } }));
        expect((await c.next(result)).payload).to.deep.equal({ data: { demo_Company: { name: 'Acme', employees: { items: [] } } } });
        c.ws.close();
        await alive();
      });
    }
  });

  describe('a subscriber that stops reading', () => {
    const WRITES = Number(process.env.DAS_SLOW_CONSUMER_WRITES ?? 400);
    const query = 'subscription { demo_Person { op record { id email } } }';
    // 64 KiB per record: about 26 MB of events, well over the budget and the loopback socket buffers (a few MB).
    const email = 'e'.repeat(64 * 1024);

    /**
     * WRITES creates, five at a time, while `keeping` reads; the peak RSS of the data plane meanwhile.
     * Each five are written once `keeping` has the events of the ones before: the reading subscriber
     * never has more than five events (about 320 KiB) in flight, so on a loaded machine, where this
     * process may read late, it stays well inside the byte budget the paused one exceeds.
     */
    async function writeRound(prefix: string, keeping: Awaited<ReturnType<typeof wsClient>>): Promise<number> {
      let peak = rssOf(main.child.pid!);
      const sampler = setInterval(() => (peak = Math.max(peak, rssOf(main.child.pid!))), 50);
      let keepingClosed: number | undefined;
      void keeping.closed.then((code) => (keepingClosed = code));
      const received = (count: number) => () => {
        if (keepingClosed !== undefined) throw new Error(`the reading subscriber was closed (${keepingClosed})`);
        return keeping.messages.filter((m) => m.type === 'next').length >= count;
      };
      try {
        for (let i = 0; i < WRITES; i += 5) {
          const results = await Promise.all([0, 1, 2, 3, 4].map((j) => api({ path: '/demo', body: { create: { schema: 'demo.Person', id: `${prefix}-${i + j}`, data: { name: 'n', email } } } })));
          for (const r of results) expect(r.status, r.text).to.equal(201);
          await until(received(i + 5), 60_000);
        }
      } finally {
        clearInterval(sampler);
      }
      // The reading subscriber got every event (five writes at a time commit in any order).
      const ids = keeping.messages.filter((m) => m.type === 'next').map((m) => m.payload.data.demo_Person.record.id);
      keeping.messages.length = 0;
      expect(ids).to.have.length(WRITES);
      expect(new Set(ids)).to.deep.equal(new Set(Array.from({ length: WRITES }, (_, i) => `${prefix}-${i}`)));
      return peak;
    }

    it('is ended by its byte budget (terminated when its close frame cannot go out) while another subscriber gets every event; RSS stays bounded', async function () {
      const keeping = await wsClient(port, 'graphql-transport-ws');
      keeping.ws.send(JSON.stringify({ id: 'k', type: 'subscribe', payload: { query } }));
      const slow = await wsClient(port, 'graphql-transport-ws');
      slow.ws.send(JSON.stringify({ id: 's', type: 'subscribe', payload: { query } }));
      await new Promise((r) => setTimeout(r, 300)); // both registered
      (slow.ws as unknown as { _socket: { pause(): void } })._socket.pause();
      const before = rssOf(main.child.pid!);
      const peak = await writeRound('slow', keeping);

      // The server ended the paused one although it still does not read: with the count of queued
      // events out of reach (DAS_SUBSCRIPTION_QUEUE above), only the byte budget could end it, and
      // only terminating the socket completes the close while nothing is read.
      const metrics = async () => (await call(url, { path: '/metrics' })).text;
      await until(async () => /^das_subscription_connections 1$/m.test(await metrics()), 15_000);
      expect(Number(/^das_subscription_slow_consumers (\d+)/m.exec(await metrics())?.[1]), 'counted as a slow consumer').to.be.at.least(1);
      (slow.ws as unknown as { _socket: { resume(): void } })._socket.resume();
      expect(await slow.closed).to.be.oneOf([4429, 1006]);
      const grown = peak - before;
      if (process.env.DAS_SLOW_CONSUMER_WRITES) console.log(`      (RSS ${(before / 2 ** 20).toFixed(0)} MiB before, peak ${(peak / 2 ** 20).toFixed(0)} MiB)`);
      // A ceiling, not a measurement: request handling alone moves RSS by tens of MiB (garbage not yet collected).
      expect(grown, `peak RSS grew ${(grown / 2 ** 20).toFixed(1)} MiB`).to.be.below(128 * 2 ** 20);
      keeping.ws.close();
      await alive();
    });
  });

  describe("requests node's HTTP parser refuses", () => {
    const raw = (bytes: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1');
        let answer = '';
        socket.on('data', (d) => (answer += d.toString('latin1')));
        socket.on('error', reject);
        socket.on('close', () => resolve(answer));
        socket.write(bytes);
      });
    const parse = (answer: string) => {
      const [head, body] = answer.split('\r\n\r\n');
      return { status: Number(head.slice(9, 12)), head, json: JSON.parse(body) };
    };

    it('an HTTP/1.1 request without Host: a JSON 400 with x-request-id', async () => {
      const res = parse(await raw('GET /demo/demo.Company/acme HTTP/1.1\r\nauthorization: Proxy demo-admin\r\n\r\n'));
      expect(res.status).to.equal(400);
      expect(res.json.error.code).to.equal('MISSING_HOST');
      expect(/\r\nx-request-id: (\S+)/i.exec(res.head)?.[1]).to.equal(res.json.requestId).and.to.match(UUID);
      await alive();
    });

    it('a bad header and an overlong header: JSON 400 and 431 with x-request-id', async () => {
      const bad = parse(await raw('GET /readyz HTTP/1.1\r\nhost: x\r\nbad header: 1\r\n\r\n'));
      expect(bad.status).to.equal(400);
      expect(bad.json.error.code).to.equal('BAD_REQUEST');
      expect(bad.head).to.match(/\r\nx-request-id: [0-9a-f-]{36}/i);
      const long = parse(await raw(`GET /readyz HTTP/1.1\r\nhost: x\r\nx-long: ${'a'.repeat(40 * 1024)}\r\n\r\n`));
      expect(long.status).to.equal(431);
      expect(long.json.error.code).to.equal('HEADERS_TOO_LARGE');
      await alive();
    });
  });
});
