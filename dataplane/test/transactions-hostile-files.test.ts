/**
 * Hostile bulk-load files through the real entry point (main.ts as a child process, a file://
 * import root): each file gets the documented outcome — a FAILED load with a message naming the
 * problem, or the offending row refused — the process stays up, its peak RSS stays within the
 * budget, the Transaction record stays small and storable, and nothing else is written.
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, createWriteStream, mkdirSync, mkdtempSync, openSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { once } from 'node:events';
import { pipeline } from 'node:stream/promises';
import { createGzip, gzipSync } from 'node:zlib';
import { freePort } from '../src/db/embedded.js';
import { client } from '../test-support/http.js';
import { memoryOf, startMain, waitReady, type MainProcess } from '../test-support/main-process.js';
import { freshDatabase } from '../test-support/postgres.js';
import { parquetFile, transactionManifests, waitForTransaction, withFooter, withHugeRun } from '../test-support/transactions.js';

describe('transactions: hostile files through main.ts', function () {
  this.timeout(180_000);
  let main: MainProcess;
  let api: ReturnType<typeof client>;
  let imports: string;
  let baseline: number;
  const people = (n: number) =>
    parquetFile([
      { name: 'id', data: Array.from({ length: n }, (_, i) => `h${i}`), type: 'STRING' },
      { name: 'name', data: Array.from({ length: n }, (_, i) => `name ${i}`), type: 'STRING' },
    ]);
  const load = async (name: string, format: string) => {
    const created = await api({
      path: '/demo',
      body: { create: { schema: 'Transaction', data: { actions: [{ locationUri: pathToFileURL(join(imports, name)).href, operation: 'UPSERT', format, schema: 'demo.Person' }] } } },
    });
    expect(created.status, created.text).to.equal(202);
    const tx = await waitForTransaction(api, created.json.id, undefined, 60_000);
    // Whatever the file held, the record is readable and small.
    const read = await api({ path: `/demo/Transaction/${tx.id}` });
    expect(read.status).to.equal(200);
    expect(read.text.length, 'the Transaction record stays small').to.be.lessThan(16 * 1024);
    return tx;
  };
  const alive = async () => {
    expect(main.child.exitCode, main.output().slice(-2000)).to.equal(null);
    expect(main.child.signalCode).to.equal(null);
    expect((await api({ path: '/readyz' })).status).to.equal(200);
  };

  before(async () => {
    const databaseUrl = await freshDatabase();
    const dataDir = mkdtempSync(join(tmpdir(), 'das-hostile-'));
    imports = join(dataDir, 'imports');
    mkdirSync(imports);
    const port = await freePort();
    main = startMain({ DATABASE_URL: databaseUrl, DATA_DIR: dataDir, DAS_MANIFESTS: transactionManifests(), PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', DAS_BULK_POLL_MS: '100' });
    const url = `http://127.0.0.1:${port}`;
    await waitReady(url, main);
    api = client(url, { host: 'iam.localhost', headers: { authorization: 'Proxy demo-admin' } });
    baseline = memoryOf(main.child.pid!).now;
  });
  after(() => main?.child.kill('SIGKILL'));

  it('a footer that claims a 3.9 GB column chunk FAILs the load at once (no read of it, no abort)', async () => {
    writeFileSync(join(imports, 'huge-chunk.parquet'), withFooter(people(3), (m) => (m.row_groups[0].columns[0].meta_data!.total_compressed_size = 3_900_000_000n)));
    const tx = await load('huge-chunk.parquet', 'PARQUET');
    expect(tx.status).to.equal('FAILED');
    expect(tx.error).to.match(/huge-chunk\.parquet is not a valid Parquet file: column 1 of row group 1 declares bytes \d+\.\.\d+, outside the file's data/);
    await alive();
  });

  it('a 250-byte file whose row group claims 50 M rows FAILs naming DAS_BULK_MAX_GROUP_ROWS, memory untouched', async () => {
    writeFileSync(join(imports, 'fifty-million.parquet'), withFooter(people(2), (m) => (m.row_groups[0].num_rows = 50_000_000n)));
    expect(statSync(join(imports, 'fifty-million.parquet')).size).to.be.lessThan(300);
    const tx = await load('fifty-million.parquet', 'PARQUET');
    expect(tx.status).to.equal('FAILED');
    expect(tx.error).to.match(/has 50000000 rows in row group 1, more than DAS_BULK_MAX_GROUP_ROWS \(1048576\)/);
    await alive();
  });

  it('a 100-byte Parquet file whose page holds an RLE run of a billion values FAILs; the process does not run out of memory', async () => {
    writeFileSync(join(imports, 'huge-run.parquet'), withHugeRun());
    const tx = await load('huge-run.parquet', 'PARQUET');
    expect(tx.status).to.equal('FAILED');
    expect(tx.error).to.match(/huge-run\.parquet has a run of 1073741823 values where 4 are left in a page of column 1 of row group 1/);
    await alive();
  });

  it('a 100 MiB single-line CSV: the row is refused (DAS_BULK_MAX_ROW_BYTES), the load SUCCEEDS, the line is never held', async () => {
    const path = join(imports, 'one-line.csv');
    const fd = openSync(path, 'w');
    writeSync(fd, 'id,name\nok1,fine\nbig,');
    const block = Buffer.alloc(1024 * 1024, 'x');
    for (let i = 0; i < 100; i++) writeSync(fd, block);
    writeSync(fd, '\nok2,fine too\n');
    closeSync(fd);
    const tx = await load('one-line.csv', 'CSV');
    expect(tx.status, JSON.stringify(tx)).to.equal('SUCCEEDED');
    expect(tx.actions[0]).to.include({ rowsRead: 3, rowsWritten: 2, rowsRejected: 1, bytesRead: statSync(path).size });
    expect(tx.actions[0].errors[0]).to.include({ row: 2, message: `the row is ${100 * 1024 * 1024 + 5} bytes, more than DAS_BULK_MAX_ROW_BYTES (1048576)` });
    await alive();
  });

  it('a parse error holding NUL: rows refused, messages stored sanitized, the load SUCCEEDS; gzip bytes declared as NDJSON load every row', async () => {
    writeFileSync(join(imports, 'nul.ndjson'), `{"id":"n1","name":"one"}\n\u0000{"id":"n2"}\n{"id":"n3","na\u0000me":1}\n`);
    const nul = await load('nul.ndjson', 'NDJSON');
    expect(nul.status, JSON.stringify(nul)).to.equal('SUCCEEDED');
    expect(nul.actions[0]).to.include({ rowsRead: 3, rowsWritten: 1, rowsRejected: 2 });
    for (const e of nul.actions[0].errors) expect(e.message).to.not.include('\u0000');
    expect(nul.actions[0].errors[0].message).to.match(/^not JSON: .*\\u0000/);
    const lines = Array.from({ length: 3000 }, (_, i) => JSON.stringify({ id: `z${i}`, name: `zipped ${i}` })).join('\n');
    writeFileSync(join(imports, 'zipped.ndjson'), gzipSync(lines));
    const zipped = await load('zipped.ndjson', 'NDJSON');
    expect(zipped.status, JSON.stringify(zipped)).to.equal('SUCCEEDED');
    expect(zipped.actions[0]).to.include({ rowsRead: 3000, rowsWritten: 3000, rowsRejected: 0 });
    expect((await api({ path: '/demo/demo.Person/z2999' })).json).to.deep.equal({ id: 'z2999', version: 1, name: 'zipped 2999' });
    await alive();
  });

  it('12 rows with a ~1 MB unknown column name: every row refused, the load FAILs; messages truncated, the record and the list of transactions stay small', async () => {
    const column = 'c'.repeat(1_000_000); // the row stays within DAS_BULK_MAX_ROW_BYTES (1 MiB)
    writeFileSync(join(imports, 'wide-name.ndjson'), Array.from({ length: 12 }, (_, i) => `{"id":"w${i}","${column}":1}`).join('\n'));
    const tx = await load('wide-name.ndjson', 'NDJSON');
    expect(tx.status).to.equal('FAILED');
    expect(tx.error).to.match(/^no row was written: all 12 rows were refused; the first, row 1 of .*wide-name\.ndjson: column "c{200}… \(1000000 characters\)" matches no property of demo\.Person$/);
    expect(tx.actions[0]).to.include({ rowsRead: 12, rowsRejected: 12 });
    expect(tx.actions[0].errors).to.have.length(10);
    for (const e of tx.actions[0].errors) expect(e.message.length).to.be.at.most(500);
    expect(tx.actions[0].errors[0].message).to.match(/^column "c{200}… \(1000000 characters\)" matches no property of demo\.Person$/);
    const list = await api({ path: '/demo/Transaction' });
    expect(list.status).to.equal(200);
    expect(list.text.length).to.be.lessThan(64 * 1024);
    await alive();
  });

  it('a 10.7 MB CSV of 100,000 columns × 50 rows FAILs at its header naming DAS_BULK_MAX_COLUMNS; the RSS it adds is not kept', async () => {
    const header = Array.from({ length: 100_000 }, (_, i) => (i === 0 ? 'id' : `c${i}`)).join(',');
    const row = (r: number) => [`wide${r}`, ...Array.from({ length: 99_999 }, (_, i) => String(i % 10))].join(',');
    writeFileSync(join(imports, 'wide.csv'), `${header}\n${Array.from({ length: 50 }, (_, r) => row(r)).join('\n')}\n`);
    expect(statSync(join(imports, 'wide.csv')).size).to.be.greaterThan(10_000_000);
    const before = memoryOf(main.child.pid!).now;
    const tx = await load('wide.csv', 'CSV');
    expect(tx.status).to.equal('FAILED');
    expect(tx.error).to.equal(`${join(imports, 'wide.csv')}: the CSV header has 100000 columns, more than DAS_BULK_MAX_COLUMNS (1024)`);
    const after = memoryOf(main.child.pid!).now;
    expect(after - before, `RSS ${before.toFixed(0)} → ${after.toFixed(0)} MiB`).to.be.lessThan(48);
    await alive();
  });

  it('a gzip bomb and a zstd frame that declares a 2 GiB window FAIL naming their budgets, memory flat', async () => {
    // 1 GiB of one byte in 1 MB of gzip (written as a stream: the test holds no GiB either).
    const bomb = join(imports, 'bomb.ndjson.gz');
    const gzip = createGzip({ level: 9 });
    const written = pipeline(gzip, createWriteStream(bomb));
    const block = Buffer.alloc(1024 * 1024, 0x61);
    for (let i = 0; i < 1024; i++) if (!gzip.write(block)) await once(gzip, 'drain');
    gzip.end();
    await written;
    const exploded = await load('bomb.ndjson.gz', 'NDJSON');
    expect(exploded.status).to.equal('FAILED');
    expect(exploded.error).to.match(/bomb\.ndjson\.gz decompresses \(gzip\) to more than DAS_BULK_MAX_COMPRESSION_RATIO \(200\) times its size/);
    writeFileSync(join(imports, 'window.csv'), Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0xa8, 0x01, 0x00, 0x00]));
    const window = await load('window.csv', 'CSV');
    expect(window.status).to.equal('FAILED');
    expect(window.error).to.equal(`${join(imports, 'window.csv')}: a zstd frame needs a window of 2147483648 bytes, more than DAS_BULK_MAX_ZSTD_WINDOW_BYTES (134217728)`);
    await alive();
  });

  it('a FIFO under the import root FAILs at once (never opened for reading); a directory loads its regular files only', async () => {
    execFileSync('mkfifo', [join(imports, 'pipe.ndjson')]);
    const tx = await load('pipe.ndjson', 'NDJSON');
    expect(tx.status).to.equal('FAILED');
    expect(tx.error).to.match(/pipe\.ndjson is not a regular file/);
    mkdirSync(join(imports, 'mixed'));
    execFileSync('mkfifo', [join(imports, 'mixed', 'b.ndjson')]);
    writeFileSync(join(imports, 'mixed', 'a.ndjson'), '{"id":"m1","name":"mixed"}\n');
    const dir = await load('mixed', 'NDJSON');
    expect(dir.status, JSON.stringify(dir)).to.equal('SUCCEEDED');
    expect(dir.actions[0]).to.include({ rowsWritten: 1 });
    await alive();
  });

  it('a 240,000-character value of an indexed (sortable) property: the row is refused in a load, a REST create is a 400 naming it', async () => {
    const long = 'L'.repeat(240_000);
    writeFileSync(join(imports, 'long-name.ndjson'), `{"id":"k1","name":"short"}\n{"id":"k2","name":"${long}"}\n`);
    const tx = await load('long-name.ndjson', 'NDJSON');
    expect(tx.status, JSON.stringify(tx)).to.equal('SUCCEEDED');
    expect(tx.actions[0]).to.include({ rowsWritten: 1, rowsRejected: 1 });
    expect(tx.actions[0].errors[0]).to.include({ row: 2, path: '$.name' });
    expect(tx.actions[0].errors[0].message).to.equal('$.name is sortable (indexed): its value is 240000 bytes of UTF-8 and the id 2, the store indexes at most 2600 together');
    const res = await api({ path: '/demo', body: { create: { schema: 'demo.Person', id: 'k3', data: { name: long } } } });
    expect(res.status, res.text).to.equal(400);
    expect(res.json.error.code).to.equal('VALUE_TOO_LARGE');
    expect(res.json.error.details[0]).to.deep.equal({ path: '$.create.data.name', message: 'at most 2598 bytes with this id (indexed property)' });
    expect((await api({ path: '/demo/demo.Person/k3' })).status).to.equal(404);
    await alive();
  });

  it('a value that fits alone but not with its long multi-byte id is a 400 naming the limit, never a 500', async () => {
    // 2000 bytes of text that does not compress, with a 512-character id of 3-byte characters: over the btree row limit together.
    const name = randomBytes(1500).toString('base64');
    const id = [...randomBytes(1024).subarray(0, 512)].map((b, i) => String.fromCharCode(0x4e00 + b * 16 + (i % 16))).join('');
    const res = await api({ path: '/demo', body: { create: { schema: 'demo.Person', id, data: { name } } } });
    expect(res.status, res.text).to.equal(400);
    expect(res.json.error.code).to.equal('VALUE_TOO_LARGE');
    expect(res.json.error.message).to.equal('$.create.data.name is sortable (indexed): its value is 2000 bytes of UTF-8 and the id 1536, the store indexes at most 2600 together');
    await alive();
  });

  it('a file:// location outside the root is a 400 that does not print the import root', async () => {
    const res = await api({ path: '/demo', body: { create: { schema: 'Transaction', data: { actions: [{ locationUri: 'file:///etc/passwd', operation: 'UPSERT', format: 'CSV', schema: 'demo.Person' }] } } } });
    expect(res.status).to.equal(400);
    expect(res.json.error.code).to.equal('LOCATION_FORBIDDEN');
    expect(res.text).to.not.include(imports);
  });

  it('after all of them: the process is up and its peak RSS grew by less than 200 MiB', async () => {
    await alive();
    const { peak } = memoryOf(main.child.pid!);
    expect(peak - baseline, `peak ${peak.toFixed(0)} MiB, baseline ${baseline.toFixed(0)} MiB`).to.be.lessThan(200);
  });
});
