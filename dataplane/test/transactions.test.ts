/**
 * Transactions (bulk loads) on a real data plane and PostgreSQL: Parquet fixtures written here
 * with hyparquet-writer (nested struct columns, links, nulls, every property type, gzip and snappy
 * row groups), NDJSON and CSV; UPSERT, INSERT and DELETE; rows refused by validation with their
 * row; sources missing, forbidden (outside the import root, private https addresses) or not
 * Parquet; a load from s3rver on 127.0.0.1; reads, lists and versions of what was loaded.
 */
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { parse, stringify } from 'yaml';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import pino from 'pino';
import { startFunctionGateway } from '../src/function-gateway/server.js';
import { adminClient, startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { itemsParquet, LOADED_ITEM_I1, parquetFile, transactionManifests, waitForTransaction, type Api } from '../test-support/transactions.js';
import { call } from '../test-support/http.js';

describe('transactions (bulk loads) on PostgreSQL', function () {
  this.timeout(120_000);
  let dp: TestDataPlane;
  let api: Api;
  let imports: string;
  let db: pg.Client;

  const load = (actions: Record<string, unknown>[], extra: Record<string, unknown> = {}) => api({ path: '/demo', body: { create: { schema: 'Transaction', data: { actions, ...extra } } } });
  const run = async (actions: Record<string, unknown>[]) => {
    const res = await load(actions);
    expect(res.status, res.text).to.equal(202);
    expect(res.json.status).to.equal('PENDING');
    return waitForTransaction(api, res.json.id);
  };
  const fileUri = (name: string) => pathToFileURL(join(imports, name)).href;

  before(async () => {
    dp = await startTestDataPlane({ manifests: transactionManifests(), env: { DAS_BULK_CHUNK_ROWS: '3', DAS_BULK_POLL_MS: '100' } });
    api = adminClient(dp);
    imports = join(dp.dataDir, 'imports');
    mkdirSync(imports, { recursive: true });
    db = new pg.Client({ connectionString: dp.databaseUrl });
    await db.connect();
    await api({ path: '/demo', body: { create: { schema: 'demo.Company', id: 'acme', data: { name: 'Acme' } } } });
  });
  after(async () => {
    await db?.end();
    await dp?.stop();
  });

  it('UPSERTs a Parquet file: struct columns, links, nulls, every property type, gzip row groups; versions and history as any write', async () => {
    writeFileSync(join(imports, 'items.parquet'), itemsParquet());
    const tx = await run([{ locationUri: fileUri('items.parquet'), operation: 'UPSERT', format: 'PARQUET', schema: 'demo.Item' }]);
    expect(tx.status, JSON.stringify(tx)).to.equal('SUCCEEDED');
    expect(tx.actions[0]).to.include({ rowsRead: 5, rowsWritten: 5, rowsRejected: 0 });
    // Each byte of the file once (footer, compressed row groups): what `ls -l` shows.
    expect(tx.actions[0].bytesRead).to.equal(statSync(join(imports, 'items.parquet')).size);
    const one = (await api({ path: '/demo/demo.Item/i1' })).json;
    expect(one).to.deep.equal(LOADED_ITEM_I1);
    expect((await api({ path: '/demo/demo.Item/i2' })).json).to.deep.equal({ id: 'i2', version: 1, name: 'two', price: 2.25, active: false });
    expect((await api({ path: '/demo/demo.Item/i5' })).json.count).to.equal(9007199254740991);
    // The same file again: every record gets version 2, both versions readable.
    const again = await run([{ locationUri: fileUri('items.parquet'), operation: 'UPSERT', format: 'PARQUET', schema: 'demo.Item' }]);
    expect(again.actions[0]).to.include({ rowsWritten: 5 });
    expect((await api({ path: '/demo/demo.Item/i1' })).json.version).to.equal(2);
    expect((await api({ path: '/demo/demo.Item/i1?version=1' })).json.name).to.equal('one');
    const history = await db.query('SELECT count(*)::int AS n FROM demo.demo_item_history');
    expect(history.rows[0].n).to.equal(10);
    // Subscriptions see loaded records like any write: one change per version, in the change log.
    const changes = await db.query(`SELECT op, count(*)::int AS n, max(version) AS v FROM demo."das$changes" WHERE schema_name = 'demo.Item' GROUP BY op ORDER BY op`);
    expect(changes.rows).to.deep.equal([
      { op: 'CREATE', n: 5, v: 1 },
      { op: 'UPDATE', n: 5, v: 2 },
    ]);
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
    expect(tx.actions[0]).to.include({ rowsRead: 5, rowsWritten: 2, rowsRejected: 3, bytesRead: statSync(join(imports, 'people.ndjson')).size });
    expect(tx.actions[0].errors.map((e: any) => e.row)).to.deep.equal([3, 5, 6]);
    expect(tx.actions[0].errors[1].message).to.match(/shoeSize/);
    expect((await api({ path: '/demo/demo.Person/p2' })).json).to.deep.equal({ id: 'p2', version: 1, name: 'Bob', address: { street: 'High St' }, employer: { id: 'acme' } });
    // INSERT again: both ids exist now.
    const twice = await run([{ locationUri: fileUri('people.ndjson'), operation: 'INSERT', format: 'NDJSON', schema: 'demo.Person' }]);
    expect(twice.actions[0]).to.include({ rowsWritten: 0, rowsRejected: 5 });
    // Every row refused: the load wrote nothing, so it FAILs, naming the count and the earliest refusal.
    expect(twice.status).to.equal('FAILED');
    expect(twice.error).to.match(/^no row was written: all 5 rows were refused; the first, row 1: .*"p1"/);
    expect(twice.actions[0].errors.map((e: any) => e.message).join(' ')).to.match(/a record with id "p1" exists/);

    writeFileSync(join(imports, 'people.csv'), 'id,name,age,address.postcode,employer_id\np5,"Lee, Jr.",41,"E1",acme\np6,"Quote ""Q""",,,\n');
    const csv = await run([{ locationUri: fileUri('people.csv'), operation: 'UPSERT', format: 'CSV', schema: 'demo.Person' }]);
    expect(csv.actions[0]).to.include({ rowsRead: 2, rowsWritten: 2, rowsRejected: 0 });
    expect((await api({ path: '/demo/demo.Person/p5' })).json).to.deep.equal({ id: 'p5', version: 1, name: 'Lee, Jr.', age: 41, address: { postcode: 'E1' }, employer: { id: 'acme' } });
    expect((await api({ path: '/demo/demo.Person/p6' })).json.name).to.equal('Quote "Q"');

    writeFileSync(join(imports, 'gone.csv'), 'id\np1\np5\nnobody\n');
    const del = await run([{ locationUri: fileUri('gone.csv'), operation: 'DELETE', format: 'CSV', schema: 'demo.Person' }]);
    expect(del.actions[0]).to.include({ rowsRead: 3, rowsWritten: 2, rowsRejected: 1 });
    expect((await api({ path: '/demo/demo.Person/p1' })).status).to.equal(404);
    const tomb = await api({ path: '/demo/demo.Person/p1?version=2' });
    expect(tomb.status).to.equal(404);
    expect(tomb.json.error.message).to.match(/deleted at version 2/);
    expect((await api({ path: '/demo/demo.Person/p1?version=1' })).json.name).to.equal('Ann');
    const deletes = await db.query(`SELECT record_id, version FROM demo."das$changes" WHERE op = 'DELETE' AND schema_name = 'demo.Person' ORDER BY record_id`);
    expect(deletes.rows).to.deep.equal([
      { record_id: 'p1', version: 2 },
      { record_id: 'p5', version: 2 },
    ]);
  });

  it('refuses locations outside the import root and https to private, loopback, link-local and metadata addresses (400, nothing fetched)', async () => {
    const outside = mkdtempSync(join(tmpdir(), 'das-outside-'));
    writeFileSync(join(outside, 'secret.csv'), 'id\nx\n');
    symlinkSync(join(outside, 'secret.csv'), join(imports, 'link.csv'));
    const cases: [string, string][] = [
      [pathToFileURL(join(outside, 'secret.csv')).href, 'LOCATION_FORBIDDEN'],
      [`file://${imports}/../../${outside.split('/').pop()}/secret.csv`, 'LOCATION_FORBIDDEN'],
      [fileUri('link.csv'), 'LOCATION_FORBIDDEN'],
      ['https://127.0.0.1/data.csv', 'LOCATION_FORBIDDEN'],
      ['https://localhost/data.csv', 'LOCATION_FORBIDDEN'],
      ['https://10.1.2.3/x.parquet', 'LOCATION_FORBIDDEN'],
      ['https://[::1]/x.parquet', 'LOCATION_FORBIDDEN'],
      ['https://[::ffff:192.168.0.1]/x', 'LOCATION_FORBIDDEN'],
      ['ftp://example/x.csv', 'INVALID_LOCATION'],
      ['not a uri', 'INVALID_LOCATION'],
    ];
    for (const [locationUri, code] of cases) {
      const res = await load([{ locationUri, operation: 'UPSERT', format: 'CSV', schema: 'demo.Person' }]);
      expect(res.status, `${locationUri}: ${res.text}`).to.equal(400);
      expect(res.json.error.code, locationUri).to.equal(code);
      expect(res.json.error.details[0].path).to.equal('$.create.data.actions[0].locationUri');
    }
    // Link-local and metadata addresses are blocked by the API firewall's managed rules even before (403);
    // locations.test.ts checks that the location check refuses them too.
    const metadata = await load([{ locationUri: 'https://169.254.169.254/latest/meta-data', operation: 'UPSERT', format: 'CSV', schema: 'demo.Person' }]);
    expect(metadata.status).to.be.oneOf([400, 403]);
    expect(metadata.json.error.code).to.be.oneOf(['LOCATION_FORBIDDEN', 'FIREWALL_BLOCKED']);
  });

  it('names the field of a malformed transaction (400) and answers 404 for an unknown one', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ actions: [] }, '$.create.data.actions'],
      [{ actions: [{ locationUri: fileUri('x.csv'), operation: 'MERGE', format: 'CSV', schema: 'demo.Person' }] }, '$.create.data.actions[0].operation'],
      [{ actions: [{ locationUri: fileUri('x.csv'), operation: 'UPSERT', format: 'XLSX', schema: 'demo.Person' }] }, '$.create.data.actions[0].format'],
      [{ actions: [{ locationUri: fileUri('x.csv'), operation: 'UPSERT', format: 'CSV', schema: 'demo.Nope' }] }, '$.create.data.actions[0].schema'],
      [{ actions: [{ locationUri: fileUri('x.csv'), operation: 'UPSERT', format: 'CSV', schema: 'demo.Person', extra: 1 }] }, '$.create.data.actions[0].extra'],
      [{ dataset: { id: 'other' }, actions: [{ locationUri: fileUri('x.csv'), operation: 'UPSERT', format: 'CSV', schema: 'demo.Person' }] }, '$.create.data.dataset'],
    ];
    for (const [data, path] of cases) {
      const res = await api({ path: '/demo', body: { create: { schema: 'Transaction', data } } });
      expect(res.status, res.text).to.equal(400);
      expect(res.json.error.details[0].path).to.equal(path);
    }
    expect((await api({ path: '/demo/Transaction/nope' })).status).to.equal(404);
  });

  it('fails a transaction whose file is missing or not Parquet, saying why', async () => {
    const missing = await run([{ locationUri: fileUri('absent.parquet'), operation: 'UPSERT', format: 'PARQUET', schema: 'demo.Item' }]);
    expect(missing.status).to.equal('FAILED');
    expect(missing.error).to.match(/no file at/);
    writeFileSync(join(imports, 'fake.parquet'), 'id,name\n1,x\n');
    const fake = await run([{ locationUri: fileUri('fake.parquet'), operation: 'UPSERT', format: 'PARQUET', schema: 'demo.Item' }]);
    expect(fake.status).to.equal('FAILED');
    expect(fake.error).to.match(/not a Parquet file/);
  });

  it('lists transactions filtered by status and sorted by createdAt, paged', async () => {
    const all = await api({ path: '/demo/Transaction?sort=createdAt&limit=3' });
    expect(all.status, all.text).to.equal(200);
    expect(all.json.items).to.have.length(3);
    expect(all.json.nextToken).to.be.a('string');
    const rest = await api({ path: `/demo/Transaction?sort=createdAt&limit=100&nextToken=${all.json.nextToken}` });
    const everything = [...all.json.items, ...rest.json.items];
    const created = everything.map((t: any) => t.createdAt);
    expect(created).to.deep.equal([...created].sort());
    expect(new Set(everything.map((t: any) => t.id)).size).to.equal(everything.length);
    const failed = await api({ path: '/demo', body: { list: { schema: 'Transaction', filter: "status == 'FAILED'", sort: 'createdAt:desc' } } });
    expect(failed.status, failed.text).to.equal(200);
    expect(failed.json.items.map((t: any) => t.status)).to.deep.equal(['FAILED', 'FAILED', 'FAILED']); // one: the INSERT that wrote no row
    expect(failed.json.items[0].createdAt > failed.json.items[1].createdAt).to.equal(true);
    const bad = await api({ path: '/demo/Transaction?filter=age%20%3E%201' });
    expect(bad.status).to.equal(400);
    expect(bad.json.error.details[0].path).to.equal('query:filter');
  });

  it('through the function gateway: the transaction operation and create/get/list with schema Transaction', async () => {
    const gateway = await startFunctionGateway({ upstreamUrl: dp.url, principal: 'service-local-function-service-gateway', logger: pino({ level: 'silent' }), port: 0, host: '127.0.0.1' });
    try {
      const invoke = async (payload: Record<string, unknown>) => (await call(gateway.url, { path: '/', body: { dataset: { id: 'demo' }, ...payload } })).json;
      writeFileSync(join(imports, 'companies.ndjson'), `${JSON.stringify({ id: 'fg1', name: 'One' })}\n${JSON.stringify({ id: 'fg2', name: 'Two' })}\n`);
      const action = { locationUri: fileUri('companies.ndjson'), operation: 'UPSERT', format: 'NDJSON', schema: 'demo.Company' };
      const started = await invoke({ operation: 'transaction', executor: { id: 'default' }, data: { actions: [action], context: { job: 7 } } });
      expect(started.status.code, JSON.stringify(started)).to.equal(202);
      expect(started.data).to.include({ status: 'PENDING' });
      const done = await waitForTransaction(api, started.data.id);
      expect(done.actions[0]).to.include({ rowsWritten: 2 });
      const viaCreate = await invoke({ operation: 'create', schema: 'Transaction', data: { actions: [action] } });
      expect(viaCreate.status.code).to.equal(202);
      await waitForTransaction(api, viaCreate.data.id);
      const got = await invoke({ operation: 'get', schema: 'Transaction', id: started.data.id });
      expect(got.data).to.include({ id: started.data.id, status: 'SUCCEEDED' });
      expect(got.data.context).to.deep.equal({ job: 7 });
      // The executor is injected into the transaction and shown in its record; a create without one has none.
      expect(got.data.executor).to.deep.equal({ id: 'default' });
      expect(started.data.executor).to.deep.equal({ id: 'default' });
      expect((await invoke({ operation: 'get', schema: 'Transaction', id: viaCreate.data.id })).data).to.not.have.property('executor');
      const listed = await invoke({ operation: 'list', schema: 'Transaction', filter: "status == 'SUCCEEDED'", sort: 'createdAt:desc', limit: 1 });
      expect(listed.data.items[0].id).to.equal(viaCreate.data.id);
      const bad = await invoke({ operation: 'transaction', data: { actions: [{ ...action, format: 'XML' }] } });
      expect(bad.status.code).to.equal(400);
      expect(bad.data.details[0].path).to.equal('$.data.actions[0].format');
    } finally {
      await gateway.stop();
    }
  });

  describe('from an S3-compatible server (s3rver on 127.0.0.1)', () => {
    let s3rver: { close(): Promise<void> };
    let s3: TestDataPlane;
    let s3api: Api;
    let objectBytes = 0;
    before(async () => {
      const { default: S3rver } = (await import('s3rver' as string)) as { default: new (o: object) => { run(): Promise<{ port: number }>; close(): Promise<void> } };
      const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: mkdtempSync(join(tmpdir(), 'das-s3-')) });
      const { port } = await server.run();
      s3rver = server;
      const endpoint = `http://127.0.0.1:${port}`;
      const client = new S3Client({ region: 'us-east-1', endpoint, forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
      await client.send(new CreateBucketCommand({ Bucket: 'loads' }));
      const ids = Array.from({ length: 2500 }, (_, i) => `s${i}`);
      const part1 = parquetFile(
        [
          { name: 'id', data: ids, type: 'STRING' },
          { name: 'name', data: ids.map((id) => `name ${id}`), type: 'STRING' },
          { name: 'age', data: ids.map((_, i) => i % 90), type: 'INT32' },
        ],
        { rowGroupSize: 1000 },
      );
      const part2 = parquetFile([{ name: 'id', data: ['t1'], type: 'STRING' }, { name: 'name', data: ['tee'], type: 'STRING' }]);
      objectBytes = part1.length + part2.length;
      await client.send(new PutObjectCommand({ Bucket: 'loads', Key: 'people/part-1.parquet', Body: part1 }));
      await client.send(new PutObjectCommand({ Bucket: 'loads', Key: 'people/part-2.parquet', Body: part2 }));
      client.destroy();
      // The endpoint from the Environment's spec.bulkLoad.s3 (DAS_S3_ENDPOINT would do too: sources.test.ts).
      const manifests = transactionManifests();
      const envFile = join(manifests, 'environment.yaml');
      const environment = parse(readFileSync(envFile, 'utf8'));
      environment.spec.bulkLoad = { s3: { endpoint, region: 'us-east-1', forcePathStyle: true } };
      writeFileSync(envFile, stringify(environment));
      s3 = await startTestDataPlane({
        manifests,
        env: { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', DAS_BULK_CHUNK_ROWS: '500', DAS_BULK_POLL_MS: '100' },
      });
      s3api = adminClient(s3);
    });
    after(async () => {
      await s3?.stop();
      await s3rver?.close();
    });

    it('loads every object under a prefix, row group by row group', async () => {
      const res = await s3api({ path: '/demo', body: { create: { schema: 'Transaction', data: { dataset: { id: 'demo' }, actions: [{ locationUri: 's3://loads/people/', operation: 'UPSERT', format: 'PARQUET', schema: 'demo.Person' }], context: { by: 'test' } } } } });
      expect(res.status, res.text).to.equal(202);
      const tx = await waitForTransaction(s3api, res.json.id);
      expect(tx.status, JSON.stringify(tx)).to.equal('SUCCEEDED');
      expect(tx.context).to.deep.equal({ by: 'test' });
      expect(tx.actions[0]).to.include({ rowsRead: 2501, rowsWritten: 2501, rowsRejected: 0, bytesRead: objectBytes });
      expect((await s3api({ path: '/demo/demo.Person/s2499' })).json).to.deep.equal({ id: 's2499', version: 1, name: 'name s2499', age: 2499 % 90 });
      expect((await s3api({ path: '/demo/demo.Person/t1' })).json.name).to.equal('tee');
    });

    it('fails on a missing object', async () => {
      const res = await s3api({ path: '/demo', body: { create: { schema: 'Transaction', data: { actions: [{ locationUri: 's3://loads/nothing-here.parquet', operation: 'UPSERT', format: 'PARQUET', schema: 'demo.Person' }] } } } });
      const tx = await waitForTransaction(s3api, res.json.id);
      expect(tx.status).to.equal('FAILED');
      expect(tx.error).to.match(/no object/);
    });
  });
});
