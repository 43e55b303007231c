/**
 * The administrative API in files mode on a real data plane: /_admin/datasets for the
 * Environment's admin principals on the iam gateway only; a created Dataset is served (its
 * manifest written under DATA_DIR/datasets and hot-reloaded), paused and resumed, deleted and then
 * no longer served; datasets from other manifests are not changed; bad manifests are 400s naming
 * the field.
 */
import { expect } from 'chai';
import { cpSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import pino from 'pino';
import { startFunctionGateway } from '../src/function-gateway/server.js';
import { EXAMPLES_DIR, startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { call, client, type CallResult } from '../test-support/http.js';

describe('administrative API (files mode)', function () {
  this.timeout(120_000);
  let dp: TestDataPlane;
  let admin: ReturnType<typeof client>;

  const until = async (what: () => Promise<CallResult>, ok: (r: CallResult) => boolean): Promise<CallResult> => {
    const deadline = Date.now() + 20_000;
    let last = await what();
    while (!ok(last) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      last = await what();
    }
    expect(ok(last), last.text).to.equal(true);
    return last;
  };

  before(async () => {
    const manifests = mkdtempSync(join(tmpdir(), 'das-admin-'));
    cpSync(EXAMPLES_DIR, manifests, { recursive: true });
    const envFile = join(manifests, 'environment.yaml');
    const env = parse(readFileSync(envFile, 'utf8'));
    env.spec.admin = { principals: ['ops-*'] };
    writeFileSync(envFile, stringify(env));
    dp = await startTestDataPlane({ manifests });
    admin = client(dp.url, { host: 'iam.localhost', headers: { authorization: 'Proxy ops-alice' } });
  });
  after(async () => dp?.stop());

  const orders = {
    metadata: { name: 'orders' },
    spec: {
      location: { kind: 'postgres', databaseSchema: 'orders' },
      auth: { iam: { principals: ['ops-alice'] } },
      caller: { super: ['ops-alice'] },
      schemas: { 'shop.Order': { properties: { total: { type: 'number' } } } },
    },
  };

  it('refuses callers that are not admin principals, and other gateways', async () => {
    const notAdmin = await client(dp.url, { host: 'iam.localhost', headers: { authorization: 'Proxy demo-admin' } })({ path: '/_admin/datasets' });
    expect(notAdmin.status).to.equal(403);
    expect(notAdmin.json.error.code).to.equal('NOT_AN_ADMIN');
    const none = await client(dp.url, { host: 'iam.localhost' })({ path: '/_admin/datasets' });
    expect(none.status).to.equal(401);
    const publicGateway = await client(dp.url, { host: 'public.localhost' })({ path: '/_admin/datasets' });
    expect(publicGateway.status).to.equal(403);
    expect(publicGateway.json.error.code).to.equal('ADMIN_IAM_ONLY');
    // Refused before the body is looked at: nothing was written.
    const created = await client(dp.url, { host: 'iam.localhost', headers: { authorization: 'Proxy demo-admin' } })({ path: '/_admin/datasets', body: orders });
    expect(created.status).to.equal(403);
    expect(existsSync(join(dp.dataDir, 'datasets', 'orders.yaml'))).to.equal(false);
  });

  it('creates a Dataset that is then served; refuses a bad or duplicate one naming the field', async () => {
    const bad = await admin({ path: '/_admin/datasets', body: { metadata: { name: 'bad' }, spec: { location: { kind: 'postgres' }, schemas: { 'shop.Order': { properties: { total: { type: 'money' } } } } } } });
    expect(bad.status, bad.text).to.equal(400);
    expect(bad.json.error.details.map((d: { path: string }) => d.path).join(' ')).to.match(/spec\.schemas/);
    const badName = await admin({ path: '/_admin/datasets', body: { ...orders, metadata: { name: 'Not_A_Label' } } });
    expect(badName.status).to.equal(400);
    expect(badName.json.error.details[0].path).to.equal('$.metadata.name');

    const created = await admin({ path: '/_admin/datasets', body: orders });
    expect(created.status, created.text).to.equal(201);
    expect(created.json).to.include({ id: 'orders', managed: true });
    const write = () => admin({ path: '/orders', body: { create: { schema: 'shop.Order', id: 'o1', data: { total: 12.5 } } } });
    const served = await until(write, (r) => r.status === 201);
    expect(served.json).to.deep.equal({ id: 'o1', version: 1, total: 12.5 });
    expect((await admin({ path: '/_admin/datasets', body: orders })).status).to.equal(409);
    expect((await admin({ path: '/_admin/datasets', body: { ...orders, metadata: { name: 'demo' } } })).status).to.equal(409);

    const list = await admin({ path: '/_admin/datasets' });
    expect(list.status).to.equal(200);
    const byId = Object.fromEntries(list.json.items.map((d: { id: string }) => [d.id, d]));
    expect(byId.orders).to.include({ status: 'ready', managed: true, paused: false });
    expect(byId.demo).to.include({ managed: false });
    expect((await admin({ path: '/_admin/datasets/orders' })).json).to.include({ id: 'orders', status: 'ready' });
    expect((await admin({ path: '/_admin/datasets/nope' })).status).to.equal(404);
  });

  it('pauses (503 DATASET_PAUSED) and resumes a Dataset', async () => {
    const read = () => admin({ path: '/orders/shop.Order/o1' });
    expect((await admin({ path: '/_admin/datasets/orders/pause', method: 'POST' })).json).to.deep.equal({ id: 'orders', paused: true });
    const paused = await until(read, (r) => r.status === 503);
    expect(paused.json.error.code).to.equal('DATASET_PAUSED');
    expect(paused.headers['retry-after']).to.equal('30');
    expect((await admin({ path: '/_admin/datasets/orders' })).json.paused).to.equal(true);
    // /metrics says so (the store-unavailable alert leaves paused datasets out).
    const pausedGauge = async () => /^das_dataset_paused\{dataset="orders"\} (\d)$/m.exec((await call(dp.url, { path: '/metrics' })).text)?.[1];
    expect(await pausedGauge()).to.equal('1');
    expect((await admin({ path: '/_admin/datasets/orders/resume', method: 'POST' })).json).to.deep.equal({ id: 'orders', paused: false });
    const back = await until(read, (r) => r.status === 200);
    expect(back.json.total).to.equal(12.5);
    expect(await pausedGauge()).to.equal('0');
  });

  it('deletes a Dataset it created (then not served); leaves others alone', async () => {
    const demo = await admin({ path: '/_admin/datasets/demo', method: 'DELETE' });
    expect(demo.status).to.equal(409);
    expect(demo.json.error.code).to.equal('NOT_MANAGED');
    const deleted = await admin({ path: '/_admin/datasets/orders', method: 'DELETE' });
    expect(deleted.status, deleted.text).to.equal(200);
    const gone = await until(() => admin({ path: '/orders/shop.Order/o1' }), (r) => r.status === 404 && r.json.error.code === 'DATASET_NOT_FOUND');
    expect(gone.status).to.equal(404);
    expect((await admin({ path: '/_admin/datasets/orders', method: 'DELETE' })).status).to.equal(404);
    expect((await admin({ path: '/_admin/datasets', method: 'PUT', body: {} })).status).to.equal(405);
    // Malformed percent-encoding: the API firewall blocks it first (403); without it, a 400 INVALID_PATH.
    const malformed = await admin({ path: '/_admin/datasets/%E0%A4%A' });
    expect(malformed.status).to.be.oneOf([400, 403]);
    expect((await admin({ path: '/_admin/datasets/Bad_Name' })).status).to.equal(400);
    expect((await admin({ path: '/_admin/other' })).status).to.equal(404);
    const notJson = await admin({ path: '/_admin/datasets', body: 'x', headers: { 'content-type': 'text/plain' } });
    expect(notJson.status).to.equal(415);
    const badJson = await admin({ path: '/_admin/datasets', body: '{"metadata":' });
    expect(badJson.status).to.equal(400);
  });

  it('through the function gateway: create, get, patch {paused}, list and delete with schema Dataset', async () => {
    // The gateway calls as its own principal: ops-fn matches the admin pattern ops-*.
    const gateway = await startFunctionGateway({ upstreamUrl: dp.url, principal: 'ops-fn', logger: pino({ level: 'silent' }), port: 0, host: '127.0.0.1' });
    try {
      const invoke = async (payload: Record<string, unknown>) => (await call(gateway.url, { path: '/', body: { schema: 'Dataset', ...payload } })).json;
      const spec = { ...orders.spec, auth: { iam: { principals: ['ops-alice'] } }, location: { kind: 'postgres', databaseSchema: 'billing' } };
      const created = await invoke({ operation: 'create', id: 'billing', data: { spec } });
      expect(created.status.code, JSON.stringify(created)).to.equal(201);
      const bad = await invoke({ operation: 'create', id: 'billing2', data: { spec: { ...spec, schemas: { 'shop.Order': { properties: { total: { type: 'money' } } } } } } });
      expect(bad.status.code).to.equal(400);
      expect(bad.data.details.map((d: { path: string }) => d.path).join(' ')).to.match(/^\$\.data\.spec\.schemas/);
      // Another dataset's schema (demo, from the example manifests): 409 naming it, nothing written.
      const taken = await invoke({ operation: 'create', id: 'billing3', data: { spec: { ...spec, location: { kind: 'postgres', databaseSchema: 'demo' } } } });
      expect(taken.status.code, JSON.stringify(taken)).to.equal(409);
      expect(taken.status.message).to.contain('dataset "demo"');
      expect(existsSync(join(dp.dataDir, 'datasets', 'billing3.yaml'))).to.equal(false);
      const write = () => admin({ path: '/billing', body: { create: { schema: 'shop.Order', id: 'b1', data: { total: 1 } } } });
      await until(write, (r) => r.status === 201);
      expect((await invoke({ operation: 'get', id: 'billing' })).data).to.include({ id: 'billing', status: 'ready', managed: true });
      expect((await invoke({ operation: 'patch', id: 'billing', data: { paused: true } })).data).to.deep.equal({ id: 'billing', paused: true });
      await until(() => admin({ path: '/billing/shop.Order/b1' }), (r) => r.status === 503);
      expect((await invoke({ operation: 'patch', id: 'billing', data: { paused: 'yes' } })).status.code).to.equal(400);
      expect((await invoke({ operation: 'patch', id: 'billing', data: { paused: false } })).data.paused).to.equal(false);
      await until(() => admin({ path: '/billing/shop.Order/b1' }), (r) => r.status === 200);
      expect((await invoke({ operation: 'list' })).data.items.map((d: { id: string }) => d.id)).to.include('billing');
      expect((await invoke({ operation: 'delete', id: 'billing' })).status.code).to.equal(200);
      await until(() => admin({ path: '/billing/shop.Order/b1' }), (r) => r.status === 404);
      expect((await invoke({ operation: 'link', id: 'billing', link: 'x' })).status.code).to.equal(400);
    } finally {
      await gateway.stop();
    }
  });
});
