/** The function gateway: invocation payloads proxied to a running data plane's REST API. */
import { expect } from 'chai';
import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import pino from 'pino';
import { startFunctionGateway } from '../src/function-gateway/server.js';
import { startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { call } from '../test-support/http.js';
import { capturingLogger } from '../test-support/logs.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
type Result = { data: any; status: { code: number; message?: string } };


/** Raw bytes to a server; resolves with what came back once the server closed or `waitMs` passed. */
function rawExchange(port: number, write: (socket: ReturnType<typeof connect>) => void, waitMs = 5000): Promise<{ status: number; headers: Record<string, string>; body: any; text: string }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks).toString('utf8');
      const [head, ...rest] = text.split('\r\n\r\n');
      const [statusLine, ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      let body: unknown;
      try {
        body = JSON.parse(rest.join('\r\n\r\n'));
      } catch {
        body = undefined;
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body, text });
    };
    const timer = setTimeout(finish, waitMs);
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', () => undefined); // the server may close while we still write: expected
    socket.on('close', finish);
    write(socket);
  });
}

describe('function gateway (service-E-function-service-gateway)', function () {
  this.timeout(60000);
  let dp: TestDataPlane;
  const dpLog = capturingLogger();
  let gateway: Awaited<ReturnType<typeof startFunctionGateway>>;
  const invoke = async (payload: unknown, headers: Record<string, string> = {}) => {
    const res = await call(gateway.url, { path: '/', body: payload, headers });
    expect(res.status).to.equal(200);
    expect(res.headers['x-request-id']).to.match(UUID);
    return res.json as Result;
  };
  const dataset = { id: 'demo' };
  /** A 400 from the gateway's own checks, naming `path`. */
  const expectInvalid = (result: Result, path: string) => {
    expect(result.status.code, JSON.stringify(result)).to.equal(400);
    expect(result.status.message).to.include(path);
    expect(result.data.details.map((d: { path: string }) => d.path)).to.deep.equal([path]);
  };

  before(async () => {
    dp = await startTestDataPlane({ logger: dpLog.logger });
    gateway = await startFunctionGateway({ upstreamUrl: dp.url, principal: 'service-local-function-service-gateway', logger: pino({ level: 'silent' }), port: 0, host: '127.0.0.1' });
  });
  after(async () => {
    await gateway?.stop();
    await dp?.stop();
  });

  it('creates, gets with expand, patches, updates and deletes through the REST API', async () => {
    expect((await invoke({ operation: 'create', dataset, schema: 'demo.Company', data: { id: 'fg-co', name: 'Gateway Co' } })).status.code).to.equal(201);
    const created = await invoke({ operation: 'create', dataset, schema: 'demo.Person', id: 'fg-p', data: { name: 'Fay', age: 30, employer: { id: 'fg-co' } } });
    expect(created).to.deep.equal({ data: { id: 'fg-p', version: 1, name: 'Fay', age: 30, employer: { id: 'fg-co' } }, status: { code: 201 } });
    const got = await invoke({ operation: 'get', dataset, schema: 'demo.Person', id: 'fg-p', expand: ['employer'] });
    expect(got.data.employer).to.deep.equal({ id: 'fg-co', version: 1, name: 'Gateway Co' });
    const patched = await invoke({ operation: 'patch', dataset, schema: 'demo.Person', id: 'fg-p', data: { age: 31 } });
    expect(patched.data).to.include({ version: 2, name: 'Fay', age: 31 });
    const updated = await invoke({ operation: 'update', dataset, schema: 'demo.Person', id: 'fg-p', data: { name: 'Fay R.' } });
    expect(updated.data).to.deep.equal({ id: 'fg-p', version: 3, name: 'Fay R.' });
    expect((await invoke({ operation: 'delete', dataset, schema: 'demo.Person', id: 'fg-p' })).data).to.deep.equal({ id: 'fg-p', version: 4, deleted: true });
    const gone = await invoke({ operation: 'get', dataset, schema: 'demo.Person', id: 'fg-p' });
    expect(gone.status).to.deep.include({ code: 404 });
    expect(gone.data.code).to.equal('RECORD_NOT_FOUND');
  });

  it('gets records whose ids a URL would resolve away (".", "..", "a/b", "?x")', async () => {
    for (const id of ['.', '..', 'a/b', '?x', '%2e%2e']) {
      expect((await invoke({ operation: 'create', dataset, schema: 'demo.Company', id, data: { name: `Odd ${id}` } })).status.code, id).to.equal(201);
      const got = await invoke({ operation: 'get', dataset, schema: 'demo.Company', id });
      expect(got, id).to.deep.equal({ data: { id, version: 1, name: `Odd ${id}` }, status: { code: 200 } });
    }
  });

  it('answers a batch as {data: {name: {operation, schema, data}}, status: {code: 200}}', async () => {
    const result = await invoke({
      operation: 'batch',
      dataset,
      actions: {
        a: { operation: 'create', schema: 'demo.Company', data: { id: 'fg-b1', name: 'B1' } },
        b: { operation: 'create', schema: 'demo.Company', data: { id: 'fg-b2', name: 'B2' } },
      },
    });
    expect(result).to.deep.equal({
      data: {
        a: { operation: 'create', schema: 'demo.Company', data: { id: 'fg-b1', version: 1, name: 'B1' } },
        b: { operation: 'create', schema: 'demo.Company', data: { id: 'fg-b2', version: 1, name: 'B2' } },
      },
      status: { code: 200 },
    });
  });

  it('reports bad payloads, unknown executors and operations not yet available in status.code', async () => {
    expect((await invoke({ operation: 'create', dataset, data: {} })).status).to.deep.include({ code: 400 });
    expect((await invoke({ operation: 'fly', dataset })).status.code).to.equal(400);
    expect((await invoke({ operation: 'query', dataset, data: { schema: 'demo.PeopleInPostcode' } })).data.code).to.equal('MISSING_ARGUMENT');
    const executor = await invoke({ operation: 'get', dataset, schema: 'demo.Company', id: 'fg-b1', executor: { id: 'nope' } });
    expect(executor.status.code).to.equal(400);
    expect(executor.data.code).to.equal('UNKNOWN_EXECUTOR');
    const notJson = await call(gateway.url, { path: '/', body: '{oops' });
    expect(notJson.status).to.equal(200);
    expect(notJson.json.status.code).to.equal(400);
    expect(notJson.json.data.code).to.equal('MALFORMED_JSON');
    expect((await invoke({ operation: 'get', dataset: { id: 'sealed' }, schema: 'demo.Company', id: 'x' })).status.code).to.equal(403);
  });

  describe('strict payloads: unknown fields and wrong values are a 400 naming the JSON path', () => {
    it('unknown top-level fields, per operation', async () => {
      expectInvalid(await invoke({ operation: 'create', dataset, schema: 'demo.Company', data: { name: 'x' }, bogus: 1 }), '$.bogus');
      expectInvalid(await invoke({ operation: 'get', dataset, schema: 'demo.Company', id: 'x', data: {} }), '$.data');
      expectInvalid(await invoke({ operation: 'delete', dataset, schema: 'demo.Company', id: 'x', expand: ['a'] }), '$.expand');
      expectInvalid(await invoke({ operation: 'batch', dataset, actions: { a: { operation: 'delete', schema: 'demo.Company', id: 'x' } }, schema: 'demo.Company' }), '$.schema');
      expectInvalid(await invoke({ operation: 'create', dataset, schema: 'demo.Company', data: {}, 'odd key': 1 }), '$["odd key"]');
      // Not-yet operations still check their field names and the common fields before the 501.
      expectInvalid(await invoke({ operation: 'list', dataset, schema: 'demo.Person', bogus: true }), '$.bogus');
      expectInvalid(await invoke({ operation: 'list', dataset, schema: 'demo.Person', executor: { id: '' } }), '$.executor.id');
      expectInvalid(await invoke({ operation: 'query', dataset: { id: 'demo', name: 'x' }, data: {} }), '$.dataset.name');
      const transaction = await invoke({ operation: 'transaction', dataset, data: {} });
      expect(transaction.status.code).to.equal(400);
      expect(transaction.data.details[0].path).to.equal('$.data.actions');
    });

    it('wrong types and values of known fields', async () => {
      const nope = await invoke({ operation: 'create', dataset, schema: 'demo.Company', data: { name: 'x' }, consistency: 'NOPE' });
      expectInvalid(nope, '$.consistency');
      expect(nope.status.message).to.include('ATOMIC_ALL, ATOMIC, QUORUM, EVENTUAL, ASYNC');
      expectInvalid(await invoke({ operation: 'create', dataset, schema: 'demo.Company', data: { name: 'x' }, executor: { id: '' } }), '$.executor.id');
      expectInvalid(await invoke({ operation: 'create', dataset, schema: 'demo.Company', data: { name: 'x' }, executor: { id: 7 } }), '$.executor.id');
      expectInvalid(await invoke({ operation: 'create', dataset, schema: 'demo.Company', data: { name: 'x' }, executor: { id: 'default', x: 1 } }), '$.executor.x');
      expectInvalid(await invoke({ operation: 'create', dataset, schema: 'demo.Company', data: { name: 'x' }, executor: 'default' }), '$.executor');
      expectInvalid(await invoke({ operation: 'get', dataset, schema: 'demo.Company', id: 'x', expand: 'employer' }), '$.expand');
      expectInvalid(await invoke({ operation: 'get', dataset, schema: 'demo.Company', id: 7 }), '$.id');
      expectInvalid(await invoke({ operation: 'create', dataset, schema: 'demo.Company', id: 'a', data: { id: 'b', name: 'x' } }), '$.data.id');
      expectInvalid(await invoke({ operation: 'patch', dataset, schema: 'demo.Company', id: 'a', data: [] }), '$.data');
      expectInvalid(await invoke({ operation: 'create', dataset: 'demo', schema: 'demo.Company', data: {} }), '$.dataset');
      expectInvalid(await invoke([{ operation: 'create' }]), '$');
    });

    it('inner batch actions: unknown fields, a different executor or dataset, operations a batch cannot hold', async () => {
      const batch = (a: unknown, outer: Record<string, unknown> = {}) => invoke({ operation: 'batch', dataset, actions: { a }, ...outer });
      const write = { operation: 'create', schema: 'demo.Company', data: { name: 'x' } };
      expectInvalid(await batch({ ...write, executor: { id: 'default' } }), '$.actions["a"].executor');
      expectInvalid(await batch({ ...write, executor: { id: 'other' } }, { executor: { id: 'default' } }), '$.actions["a"].executor');
      expectInvalid(await batch({ ...write, bogus: 1 }), '$.actions["a"].bogus');
      expectInvalid(await batch({ ...write, consistency: 'SOMETIMES' }), '$.actions["a"].consistency');
      expectInvalid(await batch({ ...write, dataset: { id: 'sealed' } }), '$.actions["a"].dataset.id');
      expectInvalid(await batch({ operation: 'get', schema: 'demo.Company', id: 'x' }), '$.actions["a"].operation');
      expectInvalid(await batch('create'), '$.actions["a"]');
      expectInvalid(await invoke({ operation: 'batch', dataset, actions: {} }), '$.actions');
      // Repeating the batch's own executor and dataset is fine.
      const same = await batch({ ...write, data: { id: 'fg-same', name: 'S' }, executor: { id: 'default' }, dataset }, { executor: { id: 'default' } });
      expect(same.status.code, JSON.stringify(same)).to.equal(200);
    });

    it('passes consistency through to the REST action (ASYNC answers 202)', async () => {
      const accepted = await invoke({ operation: 'create', dataset, schema: 'demo.Company', id: 'fg-async', data: { name: 'Later' }, consistency: 'ASYNC' });
      expect(accepted).to.deep.equal({ data: { accepted: true, consistency: 'ASYNC', id: 'fg-async' }, status: { code: 202 } });
      const batch = await invoke({ operation: 'batch', dataset, consistency: 'ASYNC', actions: { x: { operation: 'create', schema: 'demo.Company', id: 'fg-async2', data: { name: 'L2' } } } });
      expect(batch).to.deep.equal({ data: { x: { operation: 'create', schema: 'demo.Company', data: { id: 'fg-async2' } } }, status: { code: 202 } });
      await dp.dataPlane.engine.drain();
      expect((await invoke({ operation: 'get', dataset, schema: 'demo.Company', id: 'fg-async2' })).status.code).to.equal(200);
    });

    it('a batch at EVENTUAL reports each failed action with its own status; problem paths are the payload\'s', async () => {
      const result = await invoke({
        operation: 'batch',
        dataset,
        consistency: 'EVENTUAL',
        actions: {
          ok: { operation: 'create', schema: 'demo.Company', id: 'fg-ev1', data: { name: 'E1' } },
          dup: { operation: 'create', schema: 'demo.Company', id: 'fg-ev1', data: { name: 'E1 again' } },
        },
      });
      expect(result.status.code).to.equal(207);
      expect(result.data.ok.data).to.include({ id: 'fg-ev1', version: 1 });
      expect(result.data.dup).to.deep.include({ operation: 'create', schema: 'demo.Company' });
      expect(result.data.dup.status.code).to.equal(409);
      const bad = await invoke({ operation: 'create', dataset, schema: 'demo.Person', data: { name: 'N', age: 'old' } });
      expect(bad.status.code).to.equal(400);
      expect(bad.data.details.map((d: { path: string }) => d.path)).to.deep.equal(['$.data.age']);
      const badInner = await invoke({ operation: 'batch', dataset, actions: { p: { operation: 'patch', schema: 'demo.Person', id: 'x', data: { age: 'old' } } } });
      expect(badInner.data.details[0].path).to.equal('$.actions["p"].data.age');
    });
  });

  it('a batch action named __proto__ is executed and answered like any other', async () => {
    const text =
      '{"operation":"batch","dataset":{"id":"demo"},"actions":{' +
      '"__proto__":{"operation":"create","schema":"demo.Company","id":"fg-proto","data":{"name":"Proto"}},' +
      '"constructor":{"operation":"create","schema":"demo.Company","id":"fg-ctor","data":{"name":"Ctor"}}}}';
    const res = await call(gateway.url, { path: '/', body: text });
    const result = JSON.parse(res.text) as Result;
    expect(result.status.code, res.text).to.equal(200);
    expect(Object.keys(result.data)).to.deep.equal(['__proto__', 'constructor']);
    expect(Object.hasOwn(result.data, '__proto__')).to.equal(true);
    expect(result.data['__proto__']).to.deep.equal({ operation: 'create', schema: 'demo.Company', data: { id: 'fg-proto', version: 1, name: 'Proto' } });
    expect((await invoke({ operation: 'get', dataset, schema: 'demo.Company', id: 'fg-proto' })).data).to.include({ name: 'Proto' });
    expect((await invoke({ operation: 'get', dataset, schema: 'demo.Company', id: 'fg-ctor' })).data).to.include({ name: 'Ctor' });
  });

  it('every answer carries x-request-id; a caller\'s UUID is kept and sent upstream, so the data plane logs it', async () => {
    const mine = '0b4a6d1e-8f27-4c3a-9d5e-2a1b3c4d5e6f';
    const res = await call(gateway.url, { path: '/', body: { operation: 'get', dataset, schema: 'demo.Company', id: 'fg-b1' }, headers: { 'x-request-id': mine } });
    expect(res.headers['x-request-id']).to.equal(mine);
    expect(dpLog.lines.some((l) => l.reqId === mine && l.msg === 'request')).to.equal(true);
    const other = await call(gateway.url, { path: '/', body: { operation: 'get', dataset, schema: 'demo.Company', id: 'fg-b1' }, headers: { 'x-request-id': 'not a uuid' } });
    expect(other.headers['x-request-id']).to.match(UUID).and.not.equal('not a uuid');
    expect(dpLog.lines.some((l) => l.reqId === other.headers['x-request-id'])).to.equal(true);
  });

  describe('HTTP framing', () => {
    it('healthz and readyz; 404 for other paths; 405 for GET /: JSON with x-request-id', async () => {
      for (const path of ['/healthz', '/readyz']) {
        const res = await call(gateway.url, { path });
        expect(res.status).to.equal(200);
        expect(res.json).to.deep.equal({ data: { status: 'ok' }, status: { code: 200 } });
        expect(res.headers['x-request-id']).to.match(UUID);
      }
      const cases: [string, string, number][] = [
        ['GET', '/nowhere', 404],
        ['POST', '/nowhere', 404],
        ['GET', '/', 405],
        ['PUT', '/invoke', 405],
        ['POST', '/healthz', 405],
      ];
      for (const [method, path, code] of cases) {
        const res = await call(gateway.url, { method, path });
        expect(res.status, `${method} ${path}`).to.equal(code);
        expect(res.headers['content-type']).to.match(/^application\/json/);
        expect(res.headers['x-request-id']).to.match(UUID);
        expect(res.json).to.deep.equal({ data: null, status: { code, message: res.json.status.message } });
      }
    });

    it('a non-JSON Content-Type is a 415', async () => {
      const res = await call(gateway.url, { path: '/', body: 'operation=get', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      expect(res.status).to.equal(415);
      expect(res.json.status.code).to.equal(415);
      expect(res.headers['x-request-id']).to.match(UUID);
      const latin1 = await call(gateway.url, { path: '/', body: '{}', headers: { 'content-type': 'application/json; charset=latin1' } });
      expect(latin1.status).to.equal(415);
    });

    it('a payload announced over the limit is refused at once, without waiting for (or buffering) the rest', async () => {
      const port = Number(new URL(gateway.url).port);
      // The rest of the 100 MiB never comes and the socket stays open: an answer at all (rawExchange
      // gives up after 5 s) is one that did not wait for it.
      const answer = await rawExchange(port, (socket) => {
        socket.write(`POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${100 * 1024 * 1024}\r\n\r\n`);
        socket.write(Buffer.alloc(64 * 1024, 0x20));
      });
      expect(answer.status, answer.text.slice(0, 200)).to.equal(413);
      expect(answer.body.status.code).to.equal(413);
      expect(answer.headers['x-request-id']).to.match(UUID);
    });

    it('a chunked payload that grows over the limit is a 413 once the limit is passed', async () => {
      const small = await startFunctionGateway({ upstreamUrl: dp.url, principal: 'p', logger: pino({ level: 'silent' }), port: 0, host: '127.0.0.1', maxPayload: 1024 });
      try {
        const answer = await rawExchange(Number(new URL(small.url).port), (socket) => {
          socket.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n');
          const chunk = 'x'.repeat(800);
          // More than the limit, and the request never ends: only the limit can produce the answer.
          for (let i = 0; i < 4; i++) socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
        });
        expect(answer.status, answer.text.slice(0, 200)).to.equal(413);
        expect(answer.body).to.deep.equal({ data: null, status: { code: 413, message: 'the payload is larger than 1024 bytes' } });
      } finally {
        await small.stop();
      }
    });

    it('requests node cannot parse get a JSON answer in the function shape, with x-request-id', async () => {
      const answer = await rawExchange(Number(new URL(gateway.url).port), (socket) => socket.end('POST / HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0001b\r\n\r\n'));
      expect(answer.status).to.equal(400);
      expect(answer.headers['x-request-id']).to.match(UUID);
      expect(answer.body).to.deep.equal({ data: null, status: { code: 400, message: answer.body.status.message } });
    });

    it('an HTTP/1.1 request without Host gets a JSON 400 in the function shape, with x-request-id', async () => {
      const answer = await rawExchange(Number(new URL(gateway.url).port), (socket) => socket.write('GET /healthz HTTP/1.1\r\n\r\n'));
      expect(answer.status).to.equal(400);
      expect(answer.headers['x-request-id']).to.match(UUID);
      expect(answer.body).to.deep.equal({ data: null, status: { code: 400, message: 'an HTTP/1.1 request needs a Host header' } });
    });

    it('an unreachable data plane is status.code 502; a data plane whose store is down answers 503, passed through', async () => {
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const port = (closed.address() as AddressInfo).port;
      await new Promise<void>((resolve) => closed.close(() => resolve()));
      const orphan = await startFunctionGateway({ upstreamUrl: `http://127.0.0.1:${port}`, principal: 'p', logger: pino({ level: 'silent' }), port: 0, host: '127.0.0.1' });
      try {
        const res = await call(orphan.url, { path: '/', body: { operation: 'get', dataset, schema: 'demo.Company', id: 'x' } });
        expect(res.status).to.equal(200);
        expect(res.json.status.code).to.equal(502);
        expect(res.json.status.message).to.include('ECONNREFUSED');
      } finally {
        await orphan.stop();
      }
      // A data plane on a PostgreSQL that is not there: it starts, and answers its datasets 503.
      const storeless = await startTestDataPlane({ databaseUrl: `postgres://nobody@127.0.0.1:${port}/none` });
      const toStoreless = await startFunctionGateway({ upstreamUrl: storeless.url, principal: 'service-local-function-service-gateway', logger: pino({ level: 'silent' }), port: 0, host: '127.0.0.1' });
      try {
        const res = await call(toStoreless.url, { path: '/', body: { operation: 'get', dataset, schema: 'demo.Company', id: 'x' } });
        expect(res.json.status.code, res.text).to.equal(503);
        expect(res.json.data.code).to.be.a('string');
      } finally {
        await toStoreless.stop();
        await storeless.stop();
      }
    });
  });
});
