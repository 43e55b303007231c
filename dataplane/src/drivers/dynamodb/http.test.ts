/** The REST API on a data plane serving the DynamoDB example dataset (examples/dynamodb) on DynamoDB Local. */
import { expect } from 'chai';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pino from 'pino';
import { startFunctionGateway } from '../../function-gateway/server.js';
import { startTestDataPlane, type TestDataPlane } from '../../../test-support/dataplane.js';
import { dynamoDbLocation, dynamoDbSecrets } from '../../../test-support/dynamodb.js';
import { call, client } from '../../../test-support/http.js';
import { MAX_ATOMIC_ACTIONS } from './driver.js';

const EXAMPLE = resolve(import.meta.dirname, '../../../../examples/dynamodb');

describe('record API over DynamoDB (examples/dynamodb on DynamoDB Local)', function () {
  this.timeout(60_000);
  let dp: TestDataPlane;
  let api: ReturnType<typeof client>;
  const post = (body: unknown) => api({ method: 'POST', path: '/shop', body });

  before(async () => {
    const secrets = await dynamoDbSecrets();
    const location = await dynamoDbLocation(secrets.name);
    const dir = mkdtempSync(join(tmpdir(), 'das-ddb-manifests-'));
    cpSync(EXAMPLE, dir, { recursive: true });
    const file = join(dir, 'dataset-shop.yaml');
    // The example's location, pointed at the test peer with a fresh prefix and the credentials Secret.
    const text = readFileSync(file, 'utf8')
      .replace('endpoint: http://127.0.0.1:8000', `endpoint: ${location.endpoint}`)
      .replace('tablePrefix: local-', `tablePrefix: ${location.tablePrefix}\n    credentialsSecretRef: { name: ${secrets.name} }`);
    // The example enables raw SQL, so its documented refusal is what the endpoint answers.
    expect(text).to.include('rawSqlEndpointEnabled: true');
    expect(text).to.include(location.endpoint);
    writeFileSync(file, text);
    dp = await startTestDataPlane({ manifests: dir, env: { DAS_SECRETS_DIR: secrets.dir } });
    api = client(dp.url, { host: 'iam.example.test', headers: { authorization: 'Proxy shop-admin' } });
    // The dataset becomes ready once its tables exist.
    for (let i = 0; i < 100; i++) {
      if ((await api({ path: '/shop/shop.Customer/none' })).status === 404) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  });
  after(async () => dp?.stop());

  it('creates, reads, updates and reads an old version', async () => {
    const created = await post({ create: { schema: 'shop.Customer', id: 'ada', data: { name: 'Ada' } } });
    expect(created.status).to.equal(201);
    expect(created.json).to.include({ id: 'ada', version: 1, name: 'Ada' });
    expect((await api({ path: '/shop/shop.Customer/ada' })).json).to.deep.equal({ id: 'ada', version: 1, name: 'Ada' });
    const updated = await post({ update: { schema: 'shop.Customer', id: 'ada', data: { name: 'Ada L.' } } });
    expect(updated.json).to.include({ version: 2, name: 'Ada L.' });
    const old = await post({ read: { schema: 'shop.Customer', id: 'ada', version: 1 } });
    expect(old.json).to.include({ version: 1, name: 'Ada' });
  });

  it('409 RECORD_EXISTS for a create with a taken id, at every consistency level', async () => {
    await post({ create: { schema: 'shop.Customer', id: 'taken', data: { name: 'T' } } });
    for (const consistency of ['ATOMIC_ALL', 'ATOMIC', 'QUORUM', 'EVENTUAL']) {
      const res = await post({ create: { schema: 'shop.Customer', id: 'taken', data: { name: 'Again' }, consistency } });
      expect(res.status, consistency).to.equal(409);
      expect(res.json.error.code).to.equal('RECORD_EXISTS');
    }
  });

  it('400 RECORD_TOO_LARGE naming the record for an item over 400 KB; nothing stored', async () => {
    const res = await post({ create: { schema: 'shop.Customer', id: 'huge', data: { name: 'x'.repeat(420 * 1024) } } });
    expect(res.status).to.equal(400);
    expect(res.json.error.code).to.equal('RECORD_TOO_LARGE');
    expect(res.json.error.message).to.include('"huge"').and.include('400 KB');
    expect((await api({ path: '/shop/shop.Customer/huge' })).status).to.equal(404);
  });

  it(`400 TOO_MANY_ACTIONS for an atomic batch over ${MAX_ATOMIC_ACTIONS} actions, before anything is written; QUORUM takes it`, async () => {
    const actions = (prefix: string, consistency: string) =>
      Object.fromEntries(Array.from({ length: MAX_ATOMIC_ACTIONS + 1 }, (_, i) => [`a${i}`, { create: { schema: 'shop.Customer', id: `${prefix}-${i}`, data: { name: `n${i}` }, consistency } }]));
    const refused = await post({ batch: { actions: actions('many', 'ATOMIC') } });
    expect(refused.status).to.equal(400);
    expect(refused.json.error.code).to.equal('TOO_MANY_ACTIONS');
    expect((await api({ path: '/shop/shop.Customer/many-0' })).status).to.equal(404);
    const quorum = await post({ batch: { actions: actions('q', 'QUORUM') } });
    expect(quorum.status).to.equal(200);
    expect(Object.keys(quorum.json)).to.have.length(MAX_ATOMIC_ACTIONS + 1);
  });

  it('lists with filter, sort and signed nextToken; links both ways; a named query', async () => {
    await post({ create: { schema: 'shop.Customer', id: 'grace', data: { name: 'Grace' } } });
    const orders = Object.fromEntries(
      Array.from({ length: 25 }, (_, i) => [
        `o${i}`,
        { create: { schema: 'shop.Order', id: `o${String(i).padStart(2, '0')}`, data: { placed: `2024-01-${String(i + 1).padStart(2, '0')}T10:00:00+02:00`, total: i * 1.5, status: i % 3 ? 'open' : 'shipped', customer: { id: 'grace' } } } },
      ]),
    );
    expect((await post({ batch: { actions: orders } })).status).to.equal(200);
    const seen: string[] = [];
    let nextToken: string | undefined;
    do {
      const page = await api({ path: `/shop/shop.Order?filter=${encodeURIComponent("status == 'open'")}&sort=placed:desc&limit=4${nextToken ? `&nextToken=${encodeURIComponent(nextToken)}` : ''}` });
      expect(page.status).to.equal(200);
      seen.push(...page.json.items.map((o: { id: string }) => o.id));
      nextToken = page.json.nextToken;
    } while (nextToken);
    const open = Array.from({ length: 25 }, (_, i) => i).filter((i) => i % 3).reverse().map((i) => `o${String(i).padStart(2, '0')}`);
    expect(seen).to.deep.equal(open);
    const forged = await api({ path: `/shop/shop.Order?sort=placed:desc&nextToken=forged` });
    expect(forged.status).to.equal(400);
    expect(forged.json.error.code).to.equal('INVALID_NEXT_TOKEN');
    const inverse = await api({ path: '/shop/shop.Customer/grace/orders?limit=1000&sort=total:desc' });
    expect(inverse.json.items).to.have.length(25);
    expect(inverse.json.items[0]).to.include({ id: 'o24', total: 36 });
    const toOne = await api({ path: '/shop/shop.Order/o03/customer' });
    expect(toOne.json.items.map((c: { id: string }) => c.id)).to.deep.equal(['grace']);
    const query = await post({ query: { schema: 'shop.OrdersByStatus', arguments: { status: 'shipped' }, limit: 3 } });
    expect(query.status).to.equal(200);
    expect(query.json.items.map((o: { id: string }) => o.id)).to.deep.equal(['o24', 'o21', 'o18']);
    expect(query.json.nextToken).to.be.a('string');
  });

  it('raw SQL is not offered on DynamoDB: 400 RAW_SQL_NOT_SUPPORTED (docs/dynamodb.md says why)', async () => {
    const res = await api({ method: 'POST', path: '/shop/raw-query', body: { sql: 'SELECT @{c.name} FROM @{c}', using: { c: 'shop.Customer' } } });
    expect(res.status).to.equal(400);
    expect(res.json.error.code).to.equal('RAW_SQL_NOT_SUPPORTED');
    expect(res.json.error.message).to.include('DynamoDB');
  });

  describe('through the function gateway', () => {
    let gateway: Awaited<ReturnType<typeof startFunctionGateway>>;
    const dataset = { id: 'shop' };
    const invoke = async (payload: unknown) => {
      const res = await call(gateway.url, { path: '/', body: payload });
      expect(res.status).to.equal(200);
      return res.json as { data: any; status: { code: number; message?: string } };
    };
    before(async () => {
      gateway = await startFunctionGateway({ upstreamUrl: dp.url, principal: 'service-local-function-service-gateway', logger: pino({ level: 'silent' }), port: 0, host: '127.0.0.1' });
    });
    after(async () => gateway?.stop());

    it('create, get, patch, a taken id, a batch, list and query', async () => {
      expect((await invoke({ operation: 'create', dataset, schema: 'shop.Customer', id: 'fg', data: { name: 'Fay' } })).status.code).to.equal(201);
      expect((await invoke({ operation: 'get', dataset, schema: 'shop.Customer', id: 'fg' })).data).to.deep.equal({ id: 'fg', version: 1, name: 'Fay' });
      expect((await invoke({ operation: 'patch', dataset, schema: 'shop.Customer', id: 'fg', data: { name: 'Fay R.' } })).data).to.include({ version: 2, name: 'Fay R.' });
      const taken = await invoke({ operation: 'create', dataset, schema: 'shop.Customer', id: 'fg', data: { name: 'Again' } });
      expect(taken.status.code).to.equal(409);
      expect(taken.data.code).to.equal('RECORD_EXISTS');
      const batch = await invoke({
        operation: 'batch',
        dataset,
        actions: {
          a: { operation: 'create', schema: 'shop.Order', data: { id: 'fg-o1', total: 5, status: 'open', customer: { id: 'fg' } } },
          b: { operation: 'create', schema: 'shop.Order', data: { id: 'fg-o2', total: 7, status: 'open', customer: { id: 'fg' } } },
        },
      });
      expect(batch.status.code).to.equal(200);
      const list = await invoke({ operation: 'list', dataset, schema: 'shop.Order', filter: "customer.id == 'fg'", sort: 'total:desc', limit: 1 });
      expect(list.data.items.map((o: { id: string }) => o.id)).to.deep.equal(['fg-o2']);
      expect(list.data.nextToken).to.be.a('string');
      const next = await invoke({ operation: 'list', dataset, schema: 'shop.Order', filter: "customer.id == 'fg'", sort: 'total:desc', limit: 1, nextToken: list.data.nextToken });
      expect(next.data.items.map((o: { id: string }) => o.id)).to.deep.equal(['fg-o1']);
      const query = await invoke({ operation: 'query', dataset, data: { schema: 'shop.OrdersByStatus', arguments: { status: 'open' } }, limit: 1000 });
      expect(query.status.code).to.equal(200);
      expect(query.data.items.map((o: { id: string }) => o.id)).to.include.members(['fg-o1', 'fg-o2']);
    });
  });

  it('deletes: 404 afterwards, the earlier version still readable', async () => {
    await post({ create: { schema: 'shop.Customer', id: 'gone', data: { name: 'Gone' } } });
    const deleted = await post({ delete: { schema: 'shop.Customer', id: 'gone' } });
    expect(deleted.status).to.equal(200);
    expect((await api({ path: '/shop/shop.Customer/gone' })).status).to.equal(404);
    expect((await post({ read: { schema: 'shop.Customer', id: 'gone', version: 1 } })).json).to.include({ name: 'Gone' });
  });
});
