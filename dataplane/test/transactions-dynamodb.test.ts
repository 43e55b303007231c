/**
 * Transactions (bulk loads) end to end on a DynamoDB dataset: the demo dataset of the PostgreSQL
 * transaction tests (transactions.test.ts, same fixtures) moved to DynamoDB Local, loaded through
 * the REST API — Parquet UPSERT of every property type (versions and history as any write), rows
 * refused by validation with their row, NDJSON INSERT (existing ids refused), CSV DELETE with
 * tombstones, and the transaction's state (status, progress, lists) kept in DynamoDB.
 */
import { expect } from 'chai';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ScanCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createClient } from '../src/drivers/dynamodb/client.js';
import { transactionsTable } from '../src/drivers/dynamodb/bulk-load.js';
import { schemaTables } from '../src/drivers/dynamodb/tables.js';
import { adminClient, startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { dynamoDbSecrets, dynamoDbTransactionManifests } from '../test-support/dynamodb.js';
import { itemsParquet, LOADED_ITEM_I1, parquetFile, waitForTransaction, type Api } from '../test-support/transactions.js';
import { dataPlaneSettings } from '../../model/settings/dataplane.js';

describe('transactions (bulk loads) on DynamoDB', function () {
  this.timeout(120_000);
  let dp: TestDataPlane;
  let api: Api;
  let imports: string;
  let doc: DynamoDBDocumentClient;
  let made = 0;

  const run = async (actions: Record<string, unknown>[]) => {
    const res = await api({ path: '/demo', body: { create: { schema: 'Transaction', data: { actions } } } });
    expect(res.status, res.text).to.equal(202);
    expect(res.json.status).to.equal('PENDING');
    made++;
    return waitForTransaction(api, res.json.id);
  };
  const fileUri = (name: string) => pathToFileURL(join(imports, name)).href;
  const config = () => dp.dataPlane.store.dataset('demo')!.config;
  /** Every item of a table (the test's tables are small). */
  const scan = async (table: string) => (await doc.send(new ScanCommand({ TableName: table, ConsistentRead: true }))).Items ?? [];

  before(async () => {
    const secrets = await dynamoDbSecrets();
    const manifests = await dynamoDbTransactionManifests(secrets.name);
    dp = await startTestDataPlane({ manifests, env: { DAS_SECRETS_DIR: secrets.dir, DAS_BULK_CHUNK_ROWS: '3', DAS_BULK_POLL_MS: '100' } });
    api = adminClient(dp);
    imports = join(dp.dataDir, 'imports');
    mkdirSync(imports, { recursive: true });
    // The dataset serves once its tables exist.
    for (let i = 0; i < 200 && (await api({ path: '/demo/demo.Company/none' })).status !== 404; i++) await new Promise((r) => setTimeout(r, 100));
    expect(config().location.kind).to.equal('dynamodb');
    doc = createClient(config(), dataPlaneSettings({ DAS_SECRETS_DIR: secrets.dir })).doc;
    const acme = await api({ path: '/demo', body: { create: { schema: 'demo.Company', id: 'acme', data: { name: 'Acme' } } } });
    expect(acme.status, acme.text).to.equal(201);
  });
  after(async () => {
    doc?.destroy();
    await dp?.stop();
  });

  it('UPSERTs a Parquet file: struct columns, links, nulls, every property type, gzip row groups; versions and history as any write', async () => {
    writeFileSync(join(imports, 'items.parquet'), itemsParquet());
    const tx = await run([{ locationUri: fileUri('items.parquet'), operation: 'UPSERT', format: 'PARQUET', schema: 'demo.Item' }]);
    expect(tx.status, JSON.stringify(tx)).to.equal('SUCCEEDED');
    expect(tx.actions[0]).to.include({ rowsRead: 5, rowsWritten: 5, rowsRejected: 0 });
    expect(tx.actions[0].bytesRead).to.be.greaterThan(0);
    expect((await api({ path: '/demo/demo.Item/i1' })).json).to.deep.equal(LOADED_ITEM_I1);
    expect((await api({ path: '/demo/demo.Item/i2' })).json).to.deep.equal({ id: 'i2', version: 1, name: 'two', price: 2.25, active: false });
    expect((await api({ path: '/demo/demo.Item/i5' })).json.count).to.equal(9007199254740991);
    // The same file again: every record gets version 2, both versions readable.
    const again = await run([{ locationUri: fileUri('items.parquet'), operation: 'UPSERT', format: 'PARQUET', schema: 'demo.Item' }]);
    expect(again.actions[0]).to.include({ rowsWritten: 5 });
    expect((await api({ path: '/demo/demo.Item/i1' })).json.version).to.equal(2);
    expect((await api({ path: '/demo/demo.Item/i1?version=1' })).json.name).to.equal('one');
    const history = await scan(schemaTables(config(), 'demo.Item').history);
    expect(history.map((h) => `${h.id}@${h.version}`).sort()).to.deep.equal(['i1', 'i2', 'i3', 'i4', 'i5'].flatMap((id) => [`${id}@1`, `${id}@2`]));
    // The transaction's state is a DynamoDB item too.
    const state = await scan(transactionsTable(config()));
    expect(state.map((s) => s.id)).to.include(again.id);
  });

  it('refuses rows that fail validation, naming the row, and loads the others', async () => {
    writeFileSync(
      join(imports, 'mixed.parquet'),
      parquetFile([
        { name: 'id', data: ['m1', 'm2', 'm3', 'm4'], type: 'STRING' },
        { name: 'name', data: ['ok', null, 'ok too', 'bad date'], type: 'STRING' },
        { name: 'born', data: [null, null, null, 'yesterday'], type: 'STRING' },
      ]),
    );
    const tx = await run([{ locationUri: fileUri('mixed.parquet'), operation: 'UPSERT', format: 'PARQUET', schema: 'demo.Item' }]);
    expect(tx.status).to.equal('SUCCEEDED');
    expect(tx.actions[0]).to.include({ rowsRead: 4, rowsWritten: 2, rowsRejected: 2 });
    const errors = tx.actions[0].errors;
    expect(errors.map((e: any) => e.row)).to.deep.equal([2, 4]);
    expect(errors[0].message).to.match(/name/);
    expect(errors[1].path).to.equal('$.born');
    expect((await api({ path: '/demo/demo.Item/m2' })).status).to.equal(404);
    expect((await api({ path: '/demo/demo.Item/m3' })).json).to.deep.equal({ id: 'm3', version: 1, name: 'ok too' });
  });

  it('INSERTs NDJSON (an existing id and a broken line refused with their line), DELETEs from CSV with tombstones', async () => {
    writeFileSync(
      join(imports, 'people.ndjson'),
      [
        JSON.stringify({ id: 'p1', name: 'Ann', age: 30, address: { postcode: 'N1' }, employer: { id: 'acme' } }),
        JSON.stringify({ id: 'p2', name: 'Bob', 'address.street': 'High St', employer_id: 'acme' }),
        '{not json',
        '',
        JSON.stringify({ id: 'p3', name: 'Cy', 'employer.id': 'acme', shoeSize: 44 }),
        JSON.stringify({ id: 'p4', name: 'Di', age: 'old' }),
      ].join('\n'),
    );
    const tx = await run([{ locationUri: fileUri('people.ndjson'), operation: 'INSERT', format: 'NDJSON', schema: 'demo.Person' }]);
    expect(tx.status).to.equal('SUCCEEDED');
    expect(tx.actions[0]).to.include({ rowsRead: 5, rowsWritten: 2, rowsRejected: 3 });
    expect(tx.actions[0].errors.map((e: any) => e.row)).to.deep.equal([3, 5, 6]);
    expect((await api({ path: '/demo/demo.Person/p2' })).json).to.deep.equal({ id: 'p2', version: 1, name: 'Bob', address: { street: 'High St' }, employer: { id: 'acme' } });
    // INSERT again: both ids exist now.
    const twice = await run([{ locationUri: fileUri('people.ndjson'), operation: 'INSERT', format: 'NDJSON', schema: 'demo.Person' }]);
    expect(twice.actions[0]).to.include({ rowsWritten: 0, rowsRejected: 5 });
    // Every row refused: the load wrote nothing, so it FAILs, naming the count and the earliest refusal.
    expect(twice.status).to.equal('FAILED');
    expect(twice.error).to.match(/^no row was written: all 5 rows were refused; the first, row 1: .*"p1"/);
    expect(twice.actions[0].errors.map((e: any) => e.message).join(' ')).to.match(/a record with id "p1" exists/);
    expect((await api({ path: '/demo/demo.Person/p1' })).json.version).to.equal(1);

    writeFileSync(join(imports, 'people.csv'), 'id,name,age,address.postcode,employer_id\np5,"Lee, Jr.",41,"E1",acme\np6,"Quote ""Q""",,,\n');
    const csv = await run([{ locationUri: fileUri('people.csv'), operation: 'UPSERT', format: 'CSV', schema: 'demo.Person' }]);
    expect(csv.actions[0]).to.include({ rowsRead: 2, rowsWritten: 2, rowsRejected: 0 });
    expect((await api({ path: '/demo/demo.Person/p5' })).json).to.deep.equal({ id: 'p5', version: 1, name: 'Lee, Jr.', age: 41, address: { postcode: 'E1' }, employer: { id: 'acme' } });
    // Loaded records are in the sortable properties' indexes like any write.
    const sorted = await api({ path: '/demo', body: { list: { schema: 'demo.Person', sort: 'age:desc', filter: 'age > 35' } } });
    expect(sorted.json.items.map((p: any) => p.id)).to.deep.equal(['p5']);

    writeFileSync(join(imports, 'gone.csv'), 'id\np1\np5\nnobody\n');
    const del = await run([{ locationUri: fileUri('gone.csv'), operation: 'DELETE', format: 'CSV', schema: 'demo.Person' }]);
    expect(del.actions[0]).to.include({ rowsRead: 3, rowsWritten: 2, rowsRejected: 1 });
    expect(del.actions[0].errors[0]).to.include({ row: 3, message: 'no record with id "nobody"' });
    expect((await api({ path: '/demo/demo.Person/p1' })).status).to.equal(404);
    const tomb = await api({ path: '/demo/demo.Person/p1?version=2' });
    expect(tomb.status).to.equal(404);
    expect(tomb.json.error.message).to.match(/deleted at version 2/);
    expect((await api({ path: '/demo/demo.Person/p1?version=1' })).json.name).to.equal('Ann');
    // Loaded again after the delete: the versions continue after the tombstone.
    const back = await run([{ locationUri: fileUri('people.csv'), operation: 'UPSERT', format: 'CSV', schema: 'demo.Person' }]);
    expect(back.actions[0]).to.include({ rowsWritten: 2 });
    expect((await api({ path: '/demo/demo.Person/p5' })).json.version).to.equal(3);
    expect((await api({ path: '/demo/demo.Person/p6' })).json.version).to.equal(2);
  });

  it('fails a transaction whose file is missing, saying why', async () => {
    const missing = await run([{ locationUri: fileUri('absent.parquet'), operation: 'UPSERT', format: 'PARQUET', schema: 'demo.Item' }]);
    expect(missing.status).to.equal('FAILED');
    expect(missing.error).to.match(/no file at/);
  });

  it('lists transactions filtered by status and sorted by createdAt, paged', async () => {
    const all = await api({ path: '/demo/Transaction?sort=createdAt&limit=3' });
    expect(all.status, all.text).to.equal(200);
    expect(all.json.items).to.have.length(3);
    const rest = await api({ path: `/demo/Transaction?sort=createdAt&limit=100&nextToken=${all.json.nextToken}` });
    expect(rest.status, rest.text).to.equal(200);
    const everything = [...all.json.items, ...rest.json.items];
    expect(everything).to.have.length(made);
    const created = everything.map((t: any) => t.createdAt);
    expect(created).to.deep.equal([...created].sort());
    expect(new Set(everything.map((t: any) => t.id)).size).to.equal(everything.length);
    const failed = await api({ path: '/demo', body: { list: { schema: 'Transaction', filter: "status == 'FAILED'", sort: 'createdAt:desc' } } });
    expect(failed.status, failed.text).to.equal(200);
    expect(failed.json.items.map((t: any) => t.status)).to.deep.equal(['FAILED', 'FAILED']); // one: the INSERT that wrote no row
    const succeeded = await api({ path: '/demo', body: { list: { schema: 'Transaction', filter: "status == 'SUCCEEDED'", sort: 'createdAt:desc', limit: 2 } } });
    expect(succeeded.json.items).to.have.length(2);
    expect(succeeded.json.items[0].createdAt > succeeded.json.items[1].createdAt).to.equal(true);
  });

  it('a sortable value too long for its DynamoDB index key (1024 bytes with the id): the row is refused in a load, a REST create is a 400 (was a 500)', async () => {
    const long = 'n'.repeat(1100);
    writeFileSync(join(imports, 'long.ndjson'), `{"id":"ok1","name":"short"}\n{"id":"big","name":"${long}"}\n`);
    const tx = await run([{ locationUri: fileUri('long.ndjson'), operation: 'UPSERT', format: 'NDJSON', schema: 'demo.Person' }]);
    expect(tx.status, JSON.stringify(tx)).to.equal('SUCCEEDED');
    expect(tx.actions[0]).to.include({ rowsWritten: 1, rowsRejected: 1 });
    expect(tx.actions[0].errors[0]).to.include({ row: 2, path: '$.name', message: '$.name is sortable (indexed): its value is 1100 bytes of UTF-8 and the id 3, the store indexes at most 1023 together' });
    const res = await api({ path: '/demo', body: { create: { schema: 'demo.Person', id: 'big2', data: { name: long } } } });
    expect(res.status, res.text).to.equal(400);
    expect(res.json.error).to.deep.include({ code: 'VALUE_TOO_LARGE', details: [{ path: '$.create.data.name', message: 'at most 1019 bytes with this id (indexed property)' }] });
    expect((await api({ path: '/demo/demo.Person/big2' })).status).to.equal(404);
  });
});
