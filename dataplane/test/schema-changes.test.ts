/** Config changes reaching storage: additive DDL applied, destructive changes refused and reported. */
import { expect } from 'chai';
import pg from 'pg';
import pino from 'pino';
import { renderDatasetConfig } from '../../model/render.js';
import type { DatasetResource, RecordSchemaDef } from '../../model/types.js';
import { ConfigStore } from '../src/config/store.js';
import { PostgresDriver } from '../src/drivers/postgres/driver.js';
import { adminClient, startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { client } from '../test-support/http.js';
import { freshDatabase } from '../test-support/postgres.js';
import { dataPlaneSettings } from '../../model/settings/dataplane.js';

const dataset = (generation: number, person: RecordSchemaDef): DatasetResource => ({
  apiVersion: 'dataaccess.dev/v1alpha1',
  kind: 'Dataset',
  metadata: { name: 'evolving', generation },
  spec: { environment: 'local', location: { kind: 'postgres' }, schemas: { 'shop.Person': person } },
});

describe('schema changes on PostgreSQL', function () {
  this.timeout(30000);
  let driver: PostgresDriver;
  let store: ConfigStore;

  let url: string;
  before(async () => {
    url = await freshDatabase();
    driver = new PostgresDriver({ logger: pino({ level: 'silent' }), settings: dataPlaneSettings({ DATABASE_URL: url }) });
    store = new ConfigStore({
      async prepare(config) {
        const report = await driver.prepare(config);
        return report.refused.length ? report.refused.join('; ') : undefined;
      },
      async purge(config) {
        await driver.purge(config);
      },
    });
  });
  after(async () => driver.close());

  it('adds a column for a new property and keeps existing records readable', async () => {
    const v1 = renderDatasetConfig(dataset(1, { properties: { name: { type: 'string' } } }));
    store.upsertDataset(v1);
    await store.settled();
    await driver.write(v1, [{ op: 'create', schema: 'shop.Person', id: 'a', data: { name: 'A' } }], 'ATOMIC');

    const v2 = renderDatasetConfig(dataset(2, { properties: { name: { type: 'string' }, nickname: { type: 'string' }, home: { type: 'object', properties: { city: { type: 'string' } } } } }));
    const report = await driver.prepare(v2);
    expect(report.refused).to.deep.equal([]);
    expect(report.applied.join('\n')).to.contain('ADD COLUMN IF NOT EXISTS "nickname" text').and.contain('"home_city" text');
    const old = await driver.read(v2, { schema: 'shop.Person', id: 'a' });
    expect(old?.data).to.deep.equal({ name: 'A' });
    const [res] = await driver.write(v2, [{ op: 'update', schema: 'shop.Person', id: 'a', data: { nickname: 'ay', home: { city: 'Oslo' } }, merge: true }], 'ATOMIC');
    expect(res.ok && res.record.data).to.deep.equal({ name: 'A', nickname: 'ay', home: { city: 'Oslo' } });
    // re-preparing the same config adds nothing
    expect((await driver.prepare(v2)).applied.filter((s) => s.includes('ADD COLUMN'))).to.deep.equal([]);
    store.upsertDataset(v2);
    await store.settled();
    expect(store.dataset('evolving')?.config.generation).to.equal(2);
  });

  it('refuses a type change, reports it, and keeps serving the previous config', async () => {
    const v3 = renderDatasetConfig(dataset(3, { properties: { name: { type: 'integer' }, nickname: { type: 'string' }, home: { type: 'object', properties: { city: { type: 'string' } } } } }));
    store.upsertDataset(v3);
    await store.settled();
    const state = store.dataset('evolving')!;
    expect(state.status).to.equal('ready');
    expect(state.config.generation).to.equal(2);
    expect(state.status === 'ready' && state.warning).to.contain('generation 3 refused').and.contain('column "name"').and.contain('text');
  });

  it('refuses two properties that map to one column', async () => {
    const clash = renderDatasetConfig(dataset(4, { properties: { homeCity: { type: 'string' }, home: { type: 'object', properties: { city: { type: 'string' } } } } }));
    const report = await driver.prepare(clash);
    expect(report.refused.join()).to.contain('"home_city"');
  });

  it('purges a removed dataset with deletionPolicy Delete, and refuses to purge one served again', async () => {
    const served = store.dataset('evolving')!.config;
    store.upsertDataset(served);
    await store.settled();
    let refused: Error | undefined;
    await store.purgeDataset(served).catch((err: Error) => (refused = err));
    expect(refused?.message).to.contain('served again');
    store.removeDataset('evolving');
    await store.purgeDataset(served);
    const db = new pg.Client(url);
    await db.connect();
    try {
      const { rows } = await db.query("SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'evolving'");
      expect(rows[0].n).to.equal(0);
      expect((await db.query("SELECT 1 FROM pg_namespace WHERE nspname = 'evolving'")).rowCount).to.equal(0);
    } finally {
      await db.end();
    }
  });
});

describe('removing a dataset with deletionPolicy Retain from a running data plane', function () {
  this.timeout(60000);
  let dp: TestDataPlane;
  let api: ReturnType<typeof client>;
  before(async () => {
    dp = await startTestDataPlane();
    api = adminClient(dp);
  });
  after(async () => dp?.stop());

  it('keeps the tables and records, and serves them again when the dataset comes back', async () => {
    const store = dp.dataPlane.store;
    const config = store.dataset('demo')!.config;
    expect(config.deletionPolicy, 'the example dataset uses the default policy').to.equal('Retain');
    expect((await api({ path: '/demo', body: { create: { schema: 'demo.Company', id: 'kept', data: { name: 'First' } } } })).status).to.equal(201);
    const updated = await api({ path: '/demo', body: { update: { schema: 'demo.Company', id: 'kept', data: { name: 'Second' } } } });
    expect(updated.status, updated.text).to.equal(200);

    store.removeDataset('demo');
    await store.settled();
    const gone = await api({ path: '/demo/demo.Company/kept' });
    expect(gone.status).to.equal(404);
    expect(gone.json.error.code).to.equal('DATASET_NOT_FOUND');

    const db = new pg.Client(dp.databaseUrl);
    await db.connect();
    try {
      const tables = await db.query("SELECT table_name FROM information_schema.tables WHERE table_schema = 'demo' ORDER BY table_name");
      expect(tables.rows.map((r) => r.table_name)).to.include.members(['demo_company', 'demo_company_history', 'demo_person', 'demo_person_history']);
      expect((await db.query('SELECT id, version, name FROM demo.demo_company')).rows).to.deep.equal([{ id: 'kept', version: 2, name: 'Second' }]);
      expect((await db.query('SELECT version, name FROM demo.demo_company_history ORDER BY version')).rows).to.deep.equal([
        { version: 1, name: 'First' },
        { version: 2, name: 'Second' },
      ]);
    } finally {
      await db.end();
    }

    store.upsertDataset(config);
    await store.settled();
    expect(store.dataset('demo')?.status).to.equal('ready');
    const back = await api({ path: '/demo/demo.Company/kept' });
    expect(back.status, back.text).to.equal(200);
    expect(back.json).to.include({ id: 'kept', name: 'Second', version: 2 });
    expect((await api({ path: '/demo/demo.Company/kept?version=1' })).json).to.include({ id: 'kept', name: 'First', version: 1 });
  });
});
