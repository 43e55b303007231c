/** The function gateway: invocation payloads proxied to a running data plane's REST API. */
import { expect } from 'chai';
import pino from 'pino';
import { startFunctionGateway } from '../src/function-gateway/server.js';
import { startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { call } from '../test-support/http.js';

describe('function gateway (service-E-function-service-gateway)', function () {
  this.timeout(60000);
  let dp: TestDataPlane;
  let gateway: Awaited<ReturnType<typeof startFunctionGateway>>;
  const invoke = async (payload: unknown) => {
    const res = await call(gateway.url, { path: '/', body: payload });
    expect(res.status).to.equal(200);
    return res.json as { data: any; status: { code: number; message?: string } };
  };
  const dataset = { id: 'demo' };

  before(async () => {
    dp = await startTestDataPlane();
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
    expect((await invoke({ operation: 'delete', dataset, schema: 'demo.Person', id: 'fg-p' })).data).to.deep.equal({ id: 'fg-p', version: 3, deleted: true });
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
    expect((await invoke({ operation: 'list', dataset, schema: 'demo.Person' })).status.code).to.equal(501);
    const executor = await invoke({ operation: 'get', dataset, schema: 'demo.Company', id: 'fg-b1', executor: { id: 'nope' } });
    expect(executor.status.code).to.equal(400);
    expect(executor.data.code).to.equal('UNKNOWN_EXECUTOR');
    const notJson = await call(gateway.url, { path: '/', body: '{oops' });
    expect(notJson.json.status.code).to.equal(400);
    expect((await invoke({ operation: 'get', dataset: { id: 'sealed' }, schema: 'demo.Company', id: 'x' })).status.code).to.equal(403);
  });
});
