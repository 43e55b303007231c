/**
 * Requests that used to break the data plane (issue: production hardening), each answered with a
 * 4xx (or a 503 for overload) in the REST error shape, with x-request-id — never a 500, a crash or
 * a silently altered value.
 */
import { expect } from 'chai';
import { connect, type Socket } from 'node:net';
import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminClient, EXAMPLES_DIR, startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { call, type CallResult } from '../test-support/http.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function expectError(res: CallResult, status: number, code: string, path?: string): void {
  expect(res.status, res.text).to.equal(status);
  expect(res.headers['x-request-id']).to.match(UUID);
  expect(res.json?.error?.code, res.text).to.equal(code);
  if (path) expect(res.json.error.details.map((d: { path?: string }) => d.path)).to.include(path);
}

/** Sends raw bytes and returns the raw answer (the server closes or answers within a second). */
function rawExchange(url: string, bytes: Buffer | string): Promise<string> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    let answer = '';
    socket.on('data', (d) => (answer += d.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => resolve(answer));
    socket.write(bytes);
    setTimeout(() => socket.end(), 1500);
  });
}

describe('hostile input', function () {
  this.timeout(60_000);
  let dp: TestDataPlane;
  let api: ReturnType<typeof adminClient>;

  before(async () => {
    dp = await startTestDataPlane({ env: { DAS_BODY_BUDGET_BYTES: String(4 * 1024 * 1024) } });
    api = adminClient(dp);
  });
  after(() => dp.stop());

  describe('deeply nested JSON', () => {
    const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
    it('is a 400 JSON_TOO_DEEP wherever it sits: consistency, update.mode, a raw-query argument value', async () => {
      const bodies = [
        `{"create": {"schema": "demo.Company", "data": {"name": "x"}, "consistency": ${deep(5000)}}}`,
        `{"update": {"schema": "demo.Company", "id": "x", "data": {"name": "x"}, "mode": ${deep(5000)}}}`,
      ];
      for (const body of bodies) expectError(await api({ path: '/demo', body }), 400, 'JSON_TOO_DEEP', '$');
      const raw = `{"sql": "SELECT 1", "arguments": {"a": {"type": "integer", "value": ${deep(5000)}}}}`;
      expectError(await api({ path: '/demo/raw-query', body: raw }), 400, 'JSON_TOO_DEEP', '$');
      // Shallow nesting of the same shape is still judged on its meaning.
      expectError(await api({ path: '/demo', body: `{"create": {"schema": "demo.Company", "data": {"name": "x"}, "consistency": ${deep(3)}}}` }), 400, 'INVALID_CONSISTENCY');
    });
  });

  describe('text that cannot be stored as sent', () => {
    it('refuses a lone UTF-16 surrogate in an id or a text value, naming the path, instead of storing U+FFFD', async () => {
      const create = (id: string, name: string) => `{"create": {"schema": "demo.Company", "id": "${id}", "data": {"name": "${name}"}}}`;
      expectError(await api({ path: '/demo', body: create('\\ud800', 'x') }), 400, 'INVALID_TEXT', '$.create.id');
      expectError(await api({ path: '/demo', body: create('ok-id', 'a\\udfffb') }), 400, 'INVALID_TEXT', '$.create.data.name');
      // A proper pair is text like any other.
      const pair = await api({ path: '/demo', body: create('emoji-\\ud83d\\ude00', 'x') });
      expect(pair.status, pair.text).to.equal(201);
      expect(pair.json.id).to.equal('emoji-\u{1F600}');
      // Nothing was stored under the replacement character.
      expect((await api({ path: `/demo/demo.Company/${encodeURIComponent('\uFFFD')}` })).status).to.equal(404);
    });

    it('refuses a body that is not valid UTF-8, naming the byte offset', async () => {
      const body = Buffer.concat([Buffer.from('{"create": {"schema": "demo.Company", "data": {"name": "'), Buffer.from([0xc3, 0x28]), Buffer.from('"}}}')]);
      const res = await api({ path: '/demo', body });
      expectError(res, 400, 'INVALID_UTF8', '$');
      expect(res.json.error.message).to.contain('byte offset 56');
    });

    it('refuses NUL in a text value with the JSON path of the value', async () => {
      const res = await api({ path: '/demo', body: { create: { schema: 'demo.Person', id: 'nul', data: { name: 'a\u0000b', address: { street: 'x\u0000' } } } } });
      expectError(res, 400, 'INVALID_TEXT', '$.create.data.name');
    });

    it('refuses a body in another charset or compressed, instead of guessing', async () => {
      expectError(await api({ path: '/demo', headers: { 'content-type': 'application/json; charset=latin1' }, body: '{"read": {}}' }), 415, 'UNSUPPORTED_ENCODING');
      expectError(await api({ path: '/demo', headers: { 'content-encoding': 'gzip' }, body: '{"read": {}}' }), 415, 'UNSUPPORTED_ENCODING');
    });
  });

  describe('memory', () => {
    it('answers 503 SERVER_BUSY with Retry-After once slow uploads hold the body budget, and serves again when they end', async () => {
      // 4 MiB budget: four unfinished 1 MiB bodies hold it all.
      const { port } = new URL(dp.url);
      const sockets: Socket[] = [];
      for (let i = 0; i < 4; i++) {
        const socket = connect(Number(port), '127.0.0.1');
        socket.on('error', () => undefined);
        socket.write(
          `POST /demo HTTP/1.1\r\nHost: iam.localhost\r\nAuthorization: Proxy demo-admin\r\nContent-Type: application/json\r\nContent-Length: ${1024 * 1024}\r\n\r\n{"create": `,
        );
        sockets.push(socket);
      }
      await new Promise((r) => setTimeout(r, 300));
      const busy = await api({ path: '/demo', body: { read: { schema: 'demo.Company', id: 'x' } } });
      expectError(busy, 503, 'SERVER_BUSY');
      expect(busy.headers['retry-after']).to.match(/^\d+$/);
      for (const s of sockets) s.destroy();
      await new Promise((r) => setTimeout(r, 300));
      expect((await api({ path: '/demo', body: { read: { schema: 'demo.Company', id: 'x' } } })).status).to.equal(404);
    });

    it('refuses a declared body over the limit before reading it', async () => {
      const answer = await rawExchange(dp.url, `POST /demo HTTP/1.1\r\nHost: iam.localhost\r\nAuthorization: Proxy demo-admin\r\nContent-Type: application/json\r\nContent-Length: 2000000\r\n\r\n{`);
      expect(answer).to.match(/^HTTP\/1.1 413/);
      expect(answer).to.contain('BODY_TOO_LARGE');
    });
  });

  describe("requests node's HTTP parser refuses", () => {
    it('answers each in JSON with x-request-id: control characters, Content-Length with Transfer-Encoding, headers over 32 KiB', async () => {
      const cases: [string, RegExp, string][] = [
        ['GET /demo/echo HTTP/1.1\r\nHost: iam.localhost\r\nX-Bad: a\u0001b\r\n\r\n', /^HTTP\/1.1 400/, 'BAD_REQUEST'],
        ['POST /demo HTTP/1.1\r\nHost: iam.localhost\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}', /^HTTP\/1.1 400/, 'BAD_REQUEST'],
        [`GET /demo/echo HTTP/1.1\r\nHost: iam.localhost\r\nX-Big: ${'a'.repeat(40 * 1024)}\r\n\r\n`, /^HTTP\/1.1 431/, 'HEADERS_TOO_LARGE'],
      ];
      for (const [request, status, code] of cases) {
        const answer = await rawExchange(dp.url, request);
        expect(answer, request.slice(0, 60)).to.match(status);
        expect(answer.toLowerCase()).to.match(/x-request-id: [0-9a-f-]{36}/);
        expect(answer).to.contain(`"code":"${code}"`);
      }
    });

    it('lets headers up to 32 KiB and a 20 KB path reach the firewall, which judges them as docs/security.md says', async () => {
      const big = Object.fromEntries([1, 2, 3, 4].map((i) => [`x-big-${i}`, 'a'.repeat(7 * 1024)]));
      const echo = await call(dp.url, { path: '/demo/echo', host: 'iam.localhost', headers: { authorization: 'Proxy demo-admin', ...big } });
      expect(echo.status, echo.text).to.equal(200);
      const longPath = await call(dp.url, { path: `/demo/demo.Company/${'a'.repeat(20 * 1024)}`, host: 'iam.localhost', headers: { authorization: 'Proxy demo-admin' } });
      // It reaches the data plane (node used to answer a bare 431) and the firewall's URI rule judges it.
      expectError(longPath, 403, 'FIREWALL_BLOCKED');
    });
  });
});

describe('readiness with a dataset that cannot be served', function () {
  this.timeout(60_000);

  it('is 200 "degraded" naming the dataset, so the replica stays in its Service but does not call itself ready', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'das-degraded-'));
    cpSync(EXAMPLES_DIR, dir, { recursive: true });
    writeFileSync(
      join(dir, 'dataset-warehouse.yaml'),
      [
        'apiVersion: dataaccess.dev/v1alpha1',
        'kind: Dataset',
        'metadata: {name: warehouse}',
        'spec:',
        '  environment: local',
        // Storage it can never prepare (two properties on one column: refused, not retried).
        '  location: {kind: postgres}',
        '  auth: {iam: {principals: [demo-admin]}}',
        '  schemas:',
        '    w.Thing: {properties: {aB: {type: string}, a_b: {type: string}}}',
      ].join('\n'),
    );
    const dp = await startTestDataPlane({ manifests: dir });
    try {
      const ready = await call(dp.url, { path: '/readyz' });
      expect(ready.status, ready.text).to.equal(200);
      expect(ready.json.status).to.equal('degraded');
      expect(ready.json.degraded).to.deep.equal(['warehouse']);
      expect(ready.json.datasets.warehouse.status).to.equal('failed');
      expect(ready.json.datasets.demo.status).to.equal('ready');
      const res = await call(dp.url, { path: '/warehouse/w.Thing/x', host: 'iam.localhost', headers: { authorization: 'Proxy demo-admin' } });
      expect(res.status).to.equal(503);
      expect(res.json.error.code).to.equal('DATASET_UNAVAILABLE');
      expect(res.headers['retry-after']).to.match(/^\d+$/);
    } finally {
      await dp.stop();
    }
  });
});
