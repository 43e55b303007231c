/**
 * Bulk loads of compressed CSV and NDJSON into PostgreSQL: files compressed by the gzip and zstd
 * command-line tools and by Python's gzip module, named or misnamed, from file:// and s3://
 * (s3rver on 127.0.0.1), each row's values checked in the database; a truncated stream and a
 * bomb FAIL naming the file or the budget. Also: a load whose every row was refused FAILs, an
 * empty file or a header alone SUCCEEDs with 0 rows, and a CSV wider than DAS_BULK_MAX_COLUMNS FAILs.
 */
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { parse, stringify } from 'yaml';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { adminClient, startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { compress, type Compressor } from '../test-support/compressed.js';
import { transactionManifests, waitForTransaction, type Api } from '../test-support/transactions.js';

/** Row i of the fixtures: demo.Item with a value of every type (CSV spells them as text). */
const item = (prefix: string, i: number) => ({
  id: `${prefix}${i}`,
  name: `name, ${i} "q" ü€`,
  count: i * 1_000_003,
  price: i / 4,
  active: i % 2 === 0,
  born: `20${String(i % 100).padStart(2, '0')}-0${(i % 9) + 1}-1${i % 10}`,
  seen: new Date(Date.UTC(2024, 0, 1) + i * 61_000).toISOString(),
  dims: { width: i % 50, label: `w${i % 7}` },
});
const csvOf = (prefix: string, from: number, to: number) =>
  'id,name,count,price,active,born,seen,dims.width,dims.label\r\n' +
  Array.from({ length: to - from }, (_, k) => {
    const r = item(prefix, from + k);
    return `${r.id},"${r.name.replace(/"/g, '""')}",${r.count},${r.price},${r.active},${r.born},${r.seen},${r.dims.width},${r.dims.label}\r\n`;
  }).join('');
const ndjsonOf = (prefix: string, from: number, to: number) => Array.from({ length: to - from }, (_, k) => `${JSON.stringify(item(prefix, from + k))}\n`).join('');

describe('transactions: compressed CSV and NDJSON, loads that write nothing, wide files (PostgreSQL)', function () {
  this.timeout(240_000);
  let dp: TestDataPlane;
  let api: Api;
  let imports: string;
  let db: pg.Client;
  let s3rver: { close(): Promise<void> } | undefined;

  const fileUri = (name: string) => pathToFileURL(join(imports, name)).href;
  const run = async (locationUri: string, format: string, schema = 'demo.Item') => {
    const res = await api({ path: '/demo', body: { create: { schema: 'Transaction', data: { actions: [{ locationUri, operation: 'UPSERT', format, schema }] } } } });
    expect(res.status, res.text).to.equal(202);
    return waitForTransaction(api, res.json.id, undefined, 120_000);
  };
  /** Every record whose id starts with the prefix, as PostgreSQL holds it, against the fixture's rows. */
  const expectStored = async (prefix: string, count: number) => {
    const { rows } = await db.query(`SELECT to_jsonb(t) AS r FROM demo.demo_item t WHERE id LIKE $1 || '%' ORDER BY length(id), id`, [prefix]);
    expect(rows.map(({ r }) => r.id)).to.deep.equal(Array.from({ length: count }, (_, i) => `${prefix}${i}`));
    rows.forEach(({ r }, i) => {
      const stored = { id: r.id, version: r.version, name: r.name, count: r.count, price: r.price, active: r.active, born: r.born, seen: new Date(r.seen).toISOString(), dims: { width: r.dims_width, label: r.dims_label } };
      expect(stored, r.id).to.deep.equal({ version: 1, ...item(prefix, i) });
    });
  };

  before(async () => {
    // s3rver on 127.0.0.1: the Environment's spec.bulkLoad.s3 points there.
    const { default: S3rver } = (await import('s3rver' as string)) as { default: new (o: object) => { run(): Promise<{ port: number }>; close(): Promise<void> } };
    const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: mkdtempSync(join(tmpdir(), 'das-s3-')) });
    const { port } = await server.run();
    s3rver = server;
    const endpoint = `http://127.0.0.1:${port}`;
    const client = new S3Client({ region: 'us-east-1', endpoint, forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
    await client.send(new CreateBucketCommand({ Bucket: 'exports' }));
    await client.send(new PutObjectCommand({ Bucket: 'exports', Key: 'items/part-1.csv.gz', Body: compress(csvOf('s', 0, 1500), 'gzip') }));
    await client.send(new PutObjectCommand({ Bucket: 'exports', Key: 'items/part-2.csv', Body: compress(csvOf('s', 1500, 3000), 'zstd') }));
    client.destroy();
    const manifests = transactionManifests();
    const envFile = join(manifests, 'environment.yaml');
    const environment = parse(readFileSync(envFile, 'utf8'));
    environment.spec.bulkLoad = { s3: { endpoint, region: 'us-east-1', forcePathStyle: true } };
    writeFileSync(envFile, stringify(environment));
    dp = await startTestDataPlane({ manifests, env: { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', DAS_BULK_CHUNK_ROWS: '400', DAS_BULK_POLL_MS: '100' } });
    api = adminClient(dp);
    imports = join(dp.dataDir, 'imports');
    mkdirSync(imports, { recursive: true });
    db = new pg.Client({ connectionString: dp.databaseUrl });
    await db.connect();
  });
  after(async () => {
    await db?.end();
    await dp?.stop();
    await s3rver?.close();
  });

  const cases: { prefix: string; format: 'CSV' | 'NDJSON'; tool: Compressor; name: string }[] = [
    { prefix: 'gc', format: 'CSV', tool: 'gzip', name: 'items.csv.gz' },
    { prefix: 'zc', format: 'CSV', tool: 'zstd', name: 'items-zstd.csv' }, // no extension says so: the bytes do
    { prefix: 'pn', format: 'NDJSON', tool: 'python-gzip', name: 'items.ndjson.gz' },
    { prefix: 'zn', format: 'NDJSON', tool: 'zstd -19', name: 'items.ndjson.zst' },
  ];
  for (const { prefix, format, tool, name } of cases) {
    it(`${format} compressed by ${tool} (${name}) loads every row from file://, values exact`, async () => {
      const text = format === 'CSV' ? csvOf(prefix, 0, 2000) : ndjsonOf(prefix, 0, 2000);
      writeFileSync(join(imports, name), compress(text, tool));
      const tx = await run(fileUri(name), format);
      expect(tx.status, JSON.stringify(tx)).to.equal('SUCCEEDED');
      expect(tx.actions[0]).to.include({ rowsRead: 2000, rowsWritten: 2000, rowsRejected: 0, bytesRead: statSync(join(imports, name)).size });
      await expectStored(prefix, 2000);
    });
  }

  it('a .gz name holding plain text loads as plain text; gzip members concatenated (cat a.gz b.gz) load to the end', async () => {
    writeFileSync(join(imports, 'plain.csv.gz'), csvOf('pl', 0, 300));
    const plain = await run(fileUri('plain.csv.gz'), 'CSV');
    expect(plain.status, JSON.stringify(plain)).to.equal('SUCCEEDED');
    await expectStored('pl', 300);
    writeFileSync(join(imports, 'two-members.ndjson.gz'), Buffer.concat([compress(ndjsonOf('cm', 0, 700), 'gzip'), compress(ndjsonOf('cm', 700, 1500), 'gzip')]));
    const members = await run(fileUri('two-members.ndjson.gz'), 'NDJSON');
    expect(members.actions[0]).to.include({ rowsRead: 1500, rowsWritten: 1500 });
    await expectStored('cm', 1500);
  });

  it('from s3:// (s3rver): a gzip and a zstd object under one prefix load every row', async () => {
    const tx = await run('s3://exports/items/', 'CSV');
    expect(tx.status, JSON.stringify(tx)).to.equal('SUCCEEDED');
    expect(tx.actions[0]).to.include({ rowsRead: 3000, rowsWritten: 3000, rowsRejected: 0 });
    await expectStored('s', 3000);
  });

  it('a truncated gzip file FAILs naming the file; a bomb FAILs naming DAS_BULK_MAX_COMPRESSION_RATIO', async () => {
    const whole = compress(ndjsonOf('tr', 0, 5000), 'gzip');
    writeFileSync(join(imports, 'cut.ndjson.gz'), whole.subarray(0, whole.length - 100));
    const cut = await run(fileUri('cut.ndjson.gz'), 'NDJSON');
    expect(cut.status).to.equal('FAILED');
    expect(cut.error).to.equal(`${join(imports, 'cut.ndjson.gz')}: the gzip stream is not valid (it ends in the middle of the stream: the file is truncated)`);
    writeFileSync(join(imports, 'bomb.csv.zst'), compress(Buffer.alloc(32 * 1024 * 1024, 0x61), 'zstd'));
    const bomb = await run(fileUri('bomb.csv.zst'), 'CSV');
    expect(bomb.status).to.equal('FAILED');
    expect(bomb.error).to.match(/bomb\.csv\.zst decompresses \(zstd\) to more than DAS_BULK_MAX_COMPRESSION_RATIO \(200\) times its size: \d+ bytes from the first \d+; the load stops$/);
  });

  it('a load whose every row was refused FAILs naming the count and the first refusal', async () => {
    writeFileSync(join(imports, 'wrong-columns.csv'), `id,colour\n${Array.from({ length: 12 }, (_, i) => `w${i},red\n`).join('')}`);
    const tx = await run(fileUri('wrong-columns.csv'), 'CSV');
    expect(tx.status).to.equal('FAILED');
    expect(tx.error).to.equal(`no row was written: all 12 rows were refused; the first, row 1 of ${join(imports, 'wrong-columns.csv')}: column "colour" matches no property of demo.Item`);
    expect(tx.actions[0]).to.include({ rowsRead: 12, rowsWritten: 0, rowsRejected: 12 });
    // One row written is a load that did something: it SUCCEEDs, its refusals listed.
    writeFileSync(join(imports, 'one-good.ndjson'), `{"id":"og1","name":"fine"}\n{"id":"og2","colour":"red"}\n`);
    const some = await run(fileUri('one-good.ndjson'), 'NDJSON');
    expect(some.status).to.equal('SUCCEEDED');
    expect(some.actions[0]).to.include({ rowsWritten: 1, rowsRejected: 1 });
  });

  it('an empty file, and a CSV header alone, SUCCEED with 0 rows (nothing was asked, nothing refused)', async () => {
    writeFileSync(join(imports, 'empty.ndjson'), '');
    writeFileSync(join(imports, 'header-only.csv.gz'), compress('id,name\n', 'gzip'));
    for (const [name, format] of [
      ['empty.ndjson', 'NDJSON'],
      ['header-only.csv.gz', 'CSV'],
    ]) {
      const tx = await run(fileUri(name), format);
      expect(tx.status, name).to.equal('SUCCEEDED');
      expect(tx.actions[0], name).to.include({ rowsRead: 0, rowsWritten: 0, rowsRejected: 0 });
    }
  });

  it('a CSV of 100,000 columns FAILs at its header naming DAS_BULK_MAX_COLUMNS; nothing is written', async () => {
    const header = Array.from({ length: 100_000 }, (_, i) => (i === 0 ? 'id' : `c${i}`)).join(',');
    const row = (r: number) => [`wide${r}`, ...Array.from({ length: 99_999 }, () => '1')].join(',');
    writeFileSync(join(imports, 'wide.csv'), `${header}\n${Array.from({ length: 50 }, (_, r) => row(r)).join('\n')}\n`);
    const tx = await run(fileUri('wide.csv'), 'CSV');
    expect(tx.status).to.equal('FAILED');
    expect(tx.error).to.equal(`${join(imports, 'wide.csv')}: the CSV header has 100000 columns, more than DAS_BULK_MAX_COLUMNS (1024)`);
    expect((await db.query(`SELECT count(*)::int AS n FROM demo.demo_item WHERE id LIKE 'wide%'`)).rows[0].n).to.equal(0);
  });
});
