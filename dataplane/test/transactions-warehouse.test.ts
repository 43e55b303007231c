/**
 * Transactions (bulk loads) end to end on the warehouse kinds: the warehouse examples
 * (examples/warehouse: `sales` on snowflake, `lake` on iceberg) served by a data plane through the
 * real snowflake-sdk against the Snowflake test peer, loaded through REST and the function gateway —
 * Parquet UPSERT (versions and history as any write), NDJSON INSERT (an existing id refused), CSV
 * DELETE (tombstones) — with the statements asserted from the peer's query log: Iceberg without
 * BEGIN/COMMIT, and the load's MERGEs on the warehouse of the executor the transaction names.
 */
import { expect } from 'chai';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pino from 'pino';
import type { SnowflakeTestPeerHandle } from '../../e2e/peers/snowflake/peer.js';
import { sharedSnowflakePeer, warehouseExampleManifests } from '../test-support/snowflake-peer.js';
import { startFunctionGateway } from '../src/function-gateway/server.js';
import { startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { call, client } from '../test-support/http.js';
import { parquetFile } from '../test-support/transactions.js';

describe('transactions (bulk loads) on the warehouse kinds (examples/warehouse, snowflake-sdk against the test peer)', function () {
  this.timeout(120_000);
  let dp: TestDataPlane;
  let peer: SnowflakeTestPeerHandle;
  let imports: string;
  const SALES = `SALES_TX_${process.pid}`;
  const LAKE = `LAKE_TX_${process.pid}`;
  const api = (dataset: 'sales' | 'lake') => client(dp.url, { host: 'iam.localhost', headers: { authorization: `Proxy ${dataset}-admin` } });
  const fileUri = (name: string) => pathToFileURL(join(imports, name)).href;

  const waitFor = async (dataset: 'sales' | 'lake', id: string): Promise<any> => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const res = await api(dataset)({ path: `/${dataset}/Transaction/${id}` });
      expect(res.status, res.text).to.equal(200);
      if (res.json.status === 'SUCCEEDED' || res.json.status === 'FAILED') return res.json;
      if (Date.now() > deadline) throw new Error(`transaction ${id} still ${res.json.status}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const run = async (dataset: 'sales' | 'lake', actions: Record<string, unknown>[], headers: Record<string, string> = {}) => {
    const res = await api(dataset)({ path: `/${dataset}`, headers, body: { create: { schema: 'Transaction', data: { actions } } } });
    expect(res.status, res.text).to.equal(202);
    expect(res.json.status).to.equal('PENDING');
    return waitFor(dataset, res.json.id);
  };

  before(async () => {
    peer = await sharedSnowflakePeer();
    const { manifests, secretsDir } = warehouseExampleManifests(peer, { sales: SALES, lake: LAKE });
    dp = await startTestDataPlane({ manifests, env: { DAS_SECRETS_DIR: secretsDir, DAS_BULK_CHUNK_ROWS: '2', DAS_BULK_POLL_MS: '100' } });
    imports = join(dp.dataDir, 'imports');
    mkdirSync(imports, { recursive: true });
    for (const [dataset, path] of [['sales', '/sales/sales.Customer/none'], ['lake', '/lake/lake.Device/none']] as const) {
      for (let i = 0; i < 200 && (await api(dataset)({ path })).status !== 404; i++) await new Promise((r) => setTimeout(r, 100));
    }
  });
  after(async () => dp?.stop());

  it('snowflake: a Parquet UPSERT in chunks, loaded again (version 2, version 1 readable); NDJSON INSERT refuses an existing id; CSV DELETE writes tombstones', async () => {
    writeFileSync(
      join(imports, 'orders.parquet'),
      parquetFile(
        [
          { name: 'id', data: ['o1', 'o2', 'o3', 'o4', 'o5'], type: 'STRING' },
          { name: 'placed', data: [new Date('2024-05-06T07:08:09.123Z'), null, new Date(0), new Date(1e12), new Date(2e12)], type: 'TIMESTAMP' },
          { name: 'total', data: [1.5, 2.25, null, 0, -3], type: 'DOUBLE' },
          { name: 'status', data: ['NEW', 'PAID', null, 'NEW', 'SHIPPED'], type: 'STRING' },
          { name: 'customer', data: [{ id: 'c1' }, null, { id: 'c2' }, null, null] },
        ],
        { rowGroupSize: 2, codec: 'GZIP' },
      ),
    );
    const action = { locationUri: fileUri('orders.parquet'), operation: 'UPSERT', format: 'PARQUET', schema: 'sales.Order' };
    peer.clearQueries();
    const tx = await run('sales', [action]);
    expect(tx.status, JSON.stringify(tx)).to.equal('SUCCEEDED');
    expect(tx.actions[0]).to.include({ rowsRead: 5, rowsWritten: 5, rowsRejected: 0 });
    expect(tx).to.not.have.property('executor');
    const o1 = (await api('sales')({ path: '/sales/sales.Order/o1' })).json;
    expect(o1).to.deep.equal({ id: 'o1', version: 1, placed: '2024-05-06T07:08:09.123Z', total: 1.5, status: 'NEW', customer: { id: 'c1' } });
    expect((await api('sales')({ path: '/sales/sales.Order/o2' })).json).to.deep.equal({ id: 'o2', version: 1, total: 2.25, status: 'PAID' });
    // Three chunks of at most two rows, each in one BEGIN … COMMIT, on the dataset's own warehouse.
    const merges = peer.queries().filter((q) => q.database === SALES && q.sqlText.startsWith('MERGE INTO "SALES"."SALES_ORDER'));
    expect(merges).to.have.length(6);
    expect(merges.every((q) => q.inTransaction && q.warehouse === 'LOADING_WH')).to.equal(true);
    const again = await run('sales', [action]);
    expect(again.actions[0]).to.include({ rowsWritten: 5 });
    expect((await api('sales')({ path: '/sales/sales.Order/o1' })).json.version).to.equal(2);
    expect((await api('sales')({ path: '/sales/sales.Order/o1?version=1' })).json).to.include({ version: 1, status: 'NEW' });

    writeFileSync(join(imports, 'more.ndjson'), [{ id: 'o1', status: 'DUP' }, { id: 'o6', status: 'NEW', total: 6 }, { id: 'o7', total: 'seven' }].map((r) => JSON.stringify(r)).join('\n') + '\n');
    const inserted = await run('sales', [{ locationUri: fileUri('more.ndjson'), operation: 'INSERT', format: 'NDJSON', schema: 'sales.Order' }]);
    expect(inserted.status).to.equal('SUCCEEDED');
    expect(inserted.actions[0]).to.include({ rowsRead: 3, rowsWritten: 1, rowsRejected: 2 });
    expect(inserted.actions[0].errors.map((e: any) => e.row).sort()).to.deep.equal([1, 3]);
    expect(inserted.actions[0].errors.find((e: any) => e.row === 1).message).to.equal('a record with id "o1" exists');
    expect((await api('sales')({ path: '/sales/sales.Order/o6' })).json).to.include({ version: 1, total: 6 });
    expect((await api('sales')({ path: '/sales/sales.Order/o1' })).json.status).to.equal('NEW');

    writeFileSync(join(imports, 'gone.csv'), 'id\no2\nnope\no6\n');
    const deleted = await run('sales', [{ locationUri: fileUri('gone.csv'), operation: 'DELETE', format: 'CSV', schema: 'sales.Order' }]);
    expect(deleted.actions[0]).to.include({ rowsRead: 3, rowsWritten: 2, rowsRejected: 1 });
    expect(deleted.actions[0].errors).to.deep.equal([{ row: 2, message: 'no record with id "nope"' }]);
    expect((await api('sales')({ path: '/sales/sales.Order/o2' })).status).to.equal(404);
    expect((await api('sales')({ path: '/sales/sales.Order/o2?version=2' })).json.version).to.equal(2);
    expect((await api('sales')({ path: '/sales/sales.Order/o6?version=1' })).json.total).to.equal(6);
    const listed = await api('sales')({ path: `/sales/Transaction?filter=${encodeURIComponent("status == 'SUCCEEDED'")}&sort=createdAt:desc&limit=2` });
    expect(listed.status, listed.text).to.equal(200);
    expect(listed.json.items.map((t: any) => t.id)).to.deep.equal([deleted.id, inserted.id]);
  });

  it('iceberg: an NDJSON UPSERT (links, timestamps) in chunks, never BEGIN/COMMIT, a fixed number of statements per chunk; versions continue', async () => {
    writeFileSync(join(imports, 'readings.ndjson'), Array.from({ length: 5 }, (_, i) => JSON.stringify({ id: `r${i}`, at: `2024-05-01T1${i}:00:00Z`, celsius: 20 + i, device: { id: 'd1' } })).join('\n') + '\n');
    const action = { locationUri: fileUri('readings.ndjson'), operation: 'UPSERT', format: 'NDJSON', schema: 'lake.Reading' };
    peer.clearQueries();
    const tx = await run('lake', [action]);
    expect(tx.status, JSON.stringify(tx)).to.equal('SUCCEEDED');
    expect(tx.actions[0]).to.include({ rowsRead: 5, rowsWritten: 5 });
    const log = peer.queries().filter((q) => q.database === LAKE);
    expect(log.filter((q) => /^(BEGIN|START|COMMIT|ROLLBACK)/i.test(q.sqlText))).to.deep.equal([]);
    expect(log.every((q) => !q.inTransaction)).to.equal(true);
    // Per chunk (2, 2, 1 rows): the same statements — the staging table, its file PUT on the user stage and COPY INTO it, the two MERGEs.
    const perChunk = log.filter((q) => /^(CREATE OR REPLACE TEMPORARY|PUT |COPY INTO "DAS_LOAD_STAGE"|MERGE INTO "EVENTS"\."LAKE_READING)/.test(q.sqlText));
    const kinds = perChunk.map((q) => q.sqlText.split(' ')[0]);
    expect(kinds).to.deep.equal(Array.from({ length: 3 }, () => ['CREATE', 'PUT', 'COPY', 'MERGE', 'MERGE']).flat());
    expect(log.filter((q) => /^INSERT INTO "DAS_LOAD_STAGE"/.test(q.sqlText)), 'no array-bound INSERT').to.deep.equal([]);
    expect(log.filter((q) => /^(PUT|COPY) /.test(q.sqlText)).every((q) => q.status === 'succeeded')).to.equal(true);
    expect((await api('lake')({ path: '/lake/lake.Reading/r3' })).json).to.deep.equal({ id: 'r3', version: 1, at: '2024-05-01T13:00:00.000Z', celsius: 23, device: { id: 'd1' } });
    await run('lake', [action]);
    expect((await api('lake')({ path: '/lake/lake.Reading/r3' })).json.version).to.equal(2);
    expect((await api('lake')({ path: '/lake/lake.Reading/r3?version=1' })).json.celsius).to.equal(23);
  });

  it('the executor: a transaction created through the function gateway with executor.id (or executor-name) records it and runs its MERGEs on that executor\'s warehouse', async () => {
    const gateway = await startFunctionGateway({ upstreamUrl: dp.url, principal: 'service-local-function-service-gateway', logger: pino({ level: 'silent' }), port: 0, host: '127.0.0.1' });
    try {
      writeFileSync(join(imports, 'customers.ndjson'), `${JSON.stringify({ id: 'x1', name: 'One', region: 'EU' })}\n${JSON.stringify({ id: 'x2', name: 'Two' })}\n`);
      const action = { locationUri: fileUri('customers.ndjson'), operation: 'UPSERT', format: 'NDJSON', schema: 'sales.Customer' };
      peer.clearQueries();
      const started = (await call(gateway.url, { path: '/', body: { dataset: { id: 'sales' }, operation: 'transaction', executor: { id: 'reporting' }, data: { actions: [action] } } })).json;
      expect(started.status.code, JSON.stringify(started)).to.equal(202);
      expect(started.data.executor).to.deep.equal({ id: 'reporting' });
      const done = await waitFor('sales', started.data.id);
      expect(done).to.deep.include({ status: 'SUCCEEDED', executor: { id: 'reporting' } });
      const merges = peer.queries().filter((q) => q.database === SALES && q.sqlText.startsWith('MERGE INTO "SALES"."SALES_CUSTOMER'));
      expect(merges).to.have.length(2);
      expect(merges.map((q) => q.warehouse)).to.deep.equal(['REPORTING_WH', 'REPORTING_WH']);
      expect((await api('sales')({ path: '/sales/sales.Customer/x1' })).json).to.include({ version: 1, region: 'EU' });
      // REST with the header does the same; an unknown executor is a 400 before anything is stored.
      peer.clearQueries();
      const viaRest = await run('sales', [action], { 'executor-name': 'reporting' });
      expect(viaRest.executor).to.deep.equal({ id: 'reporting' });
      // The transaction's own bookkeeping (create, claim, finish) stays on the dataset's warehouse; the load's statements go to the executor's.
      const restMerges = peer.queries().filter((q) => q.database === SALES && q.sqlText.startsWith('MERGE INTO "SALES"."SALES_CUSTOMER'));
      expect(restMerges.map((q) => q.warehouse)).to.deep.equal(['REPORTING_WH', 'REPORTING_WH']);
      expect(peer.queries().find((q) => q.database === SALES && q.sqlText.startsWith('MERGE INTO "SALES"."DAS_TRANSACTIONS"'))?.warehouse).to.equal('LOADING_WH');
      const unknown = await api('sales')({ path: '/sales', headers: { 'executor-name': 'nope' }, body: { create: { schema: 'Transaction', data: { actions: [action] } } } });
      expect(unknown.status).to.equal(400);
      expect(unknown.json.error.code).to.equal('UNKNOWN_EXECUTOR');
    } finally {
      await gateway.stop();
    }
  });
});
