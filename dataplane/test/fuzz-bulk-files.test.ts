/**
 * Fuzzed bulk-load files through the real entry point (main.ts as a child process, a file://
 * import root): valid Parquet (hyparquet-writer's, and pyarrow's and DuckDB's from
 * e2e/bulk-writers/make_corpus.py --seeds: dictionaries with nulls, pages v2, DELTA encodings,
 * zstd, tiny pages), NDJSON and CSV files mutated — footer fields (row counts, column
 * chunk offsets and sizes, value counts, codecs, types), bytes flipped in the footer and in the
 * pages, large run lengths written into pages, truncated at any byte, gzip-wrapped text, formats declared wrongly — each loaded as its
 * own transaction. Every load ends SUCCEEDED or FAILED with a storable message, the process never
 * dies, its peak RSS stays within the budget, and every unmutated seed file loads whole.
 *
 * Small by default; by hand: DAS_FUZZ_FILES=2000 (DAS_FUZZ_SEED picks the files) prints the figures.
 * DAS_FUZZ_GROUP_VALUES (e.g. 300) lowers DAS_BULK_MAX_GROUP_VALUES, so that every Parquet row group
 * of plain columns is read in slices; not below 300, the values of the real writers' largest
 * pages (a seed whose page is over the budget FAILs naming it, and the unmutated seeds must load).
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { parquetMetadata, type FileMetaData } from 'hyparquet';
import { parquetHeader } from 'hyparquet/src/column.js';
import { freePort } from '../src/db/embedded.js';
import { client } from '../test-support/http.js';
import { memoryOf, startMain, waitReady, type MainProcess } from '../test-support/main-process.js';
import { freshDatabase } from '../test-support/postgres.js';
import { parquetFile, transactionManifests, waitForTransaction, withFooter } from '../test-support/transactions.js';

const FILES = Number(process.env.DAS_FUZZ_FILES ?? 40);
const SEED = Number(process.env.DAS_FUZZ_SEED ?? 7);
const GROUP_VALUES = process.env.DAS_FUZZ_GROUP_VALUES;
/** The Python writers (scripts/python-peers/install.sh, run by pretest). */
const PYTHON = join(process.env.DAS_PYTHON_PEERS ?? join(homedir(), '.cache', 'data-access-python'), 'bin', 'python');
/** Peak RSS growth allowed over the idle data plane's (MiB): the documented budgets hold well under it. */
const RSS_BUDGET_MIB = 300;

/** mulberry32: a small seeded generator, so a failing file can be made again. */
function random(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Format = 'PARQUET' | 'NDJSON' | 'CSV';

describe('fuzz: mutated bulk-load files through main.ts', function () {
  this.timeout(Math.max(180_000, FILES * 2000));
  let main: MainProcess;

  after(() => main?.child.kill('SIGKILL'));

  it(`${FILES} mutated files: every load SUCCEEDED or FAILED with a message, no process death, peak RSS within ${RSS_BUDGET_MIB} MiB of idle`, async () => {
    const rand = random(SEED);
    const int = (n: number) => Math.floor(rand() * n);
    const pick = <T>(items: readonly T[]): T => items[int(items.length)];
    const databaseUrl = await freshDatabase();
    const dataDir = mkdtempSync(join(tmpdir(), 'das-fuzz-files-'));
    const imports = join(dataDir, 'imports');
    mkdirSync(imports);
    const port = await freePort();
    main = startMain({
      DATABASE_URL: databaseUrl,
      DATA_DIR: dataDir,
      DAS_MANIFESTS: transactionManifests(),
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'error',
      DAS_BULK_POLL_MS: '50',
      DAS_BULK_CONCURRENCY: '4',
      ...(GROUP_VALUES ? { DAS_BULK_MAX_GROUP_VALUES: GROUP_VALUES } : {}),
    });
    const url = `http://127.0.0.1:${port}`;
    await waitReady(url, main);
    const api = client(url, { host: 'iam.localhost', headers: { authorization: 'Proxy demo-admin' } });
    const idle = memoryOf(main.child.pid!).now;

    // Real writers' files (pyarrow, DuckDB) to start from, besides hyparquet-writer's.
    expect(existsSync(PYTHON), `no Python writers at ${PYTHON}: run scripts/python-peers/install.sh (npm's pretest does)`).to.equal(true);
    const seedDir = join(dataDir, 'seeds');
    execFileSync(PYTHON, [join(import.meta.dirname, '../../e2e/bulk-writers/make_corpus.py'), '--seeds', seedDir], { stdio: ['ignore', 'ignore', 'inherit'] });
    const seeds = readdirSync(seedDir).map((name) => ({ name, bytes: readFileSync(join(seedDir, name)) }));
    const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `f${i}`, name: `name ${i} ü€`, age: i % 90 }));
    const parquet = () => (rand() < 0.5 ? Buffer.from(pick(seeds).bytes) : ownParquet());
    const ownParquet = () => {
      const data = rows(20 + int(400));
      return parquetFile(
        [
          { name: 'id', data: data.map((r) => r.id), type: 'STRING' },
          { name: 'name', data: data.map((r) => r.name), type: 'STRING' },
          { name: 'age', data: data.map((r) => r.age), type: 'INT32' },
        ],
        { rowGroupSize: 10 + int(200), codec: pick(['SNAPPY', 'GZIP', 'UNCOMPRESSED'] as const) },
      );
    };
    const ndjson = () => Buffer.from(rows(20 + int(300)).map((r) => JSON.stringify(r)).join('\n'));
    const csv = () => Buffer.from(`id,name,age\n${rows(20 + int(300)).map((r) => `${r.id},"${r.name}",${r.age}`).join('\r\n')}`);
    const big = () => BigInt(pick([0, 1, -1, 2 ** 31, 2 ** 32 + 5, 50_000_000, Number.MAX_SAFE_INTEGER, int(1000)]));
    const footerMutations: ((m: FileMetaData) => void)[] = [
      (m) => (m.row_groups[int(m.row_groups.length)].num_rows = big()),
      (m) => (m.row_groups[int(m.row_groups.length)].columns[int(3)].meta_data!.total_compressed_size = big()),
      (m) => (m.row_groups[int(m.row_groups.length)].columns[int(3)].meta_data!.data_page_offset = big()),
      (m) => (m.row_groups[int(m.row_groups.length)].columns[int(3)].meta_data!.dictionary_page_offset = big()),
      (m) => (m.row_groups[int(m.row_groups.length)].columns[int(3)].meta_data!.num_values = big()),
      (m) => (m.row_groups[int(m.row_groups.length)].columns[int(3)].meta_data!.codec = pick(['GZIP', 'SNAPPY', 'ZSTD', 'BROTLI', 'LZ4', 'LZO'] as const)),
      (m) => (m.row_groups[int(m.row_groups.length)].columns[int(3)].meta_data!.type = pick(['INT64', 'BYTE_ARRAY', 'BOOLEAN', 'DOUBLE', 'FIXED_LEN_BYTE_ARRAY'] as const)),
      (m) => (m.schema[1 + int(3)].type_length = Number(big() % 100000n)),
      (m) => (m.num_rows = big()),
      (m) => m.row_groups.reverse(),
      (m) => m.row_groups[int(m.row_groups.length)].columns.pop(),
      (m) => m.row_groups.push(...m.row_groups),
    ];
    const flip = (file: Buffer, from: number, count: number) => {
      const out = Buffer.from(file);
      for (let i = 0; i < count; i++) out[from + int(Math.max(1, out.length - from))] = int(256);
      return out;
    };
    const footerStart = (file: Buffer) => Math.max(0, file.length - 8 - file.readUInt32LE(file.length - 8));
    const makers: (() => [Buffer, Format, string])[] = [
      () => {
        const mutate = pick(footerMutations);
        let file = parquet();
        try {
          file = withFooter(file, mutate);
        } catch {
          /* a mutation the writer cannot express: the file stays valid */
        }
        return [file, 'PARQUET', 'footer field'];
      },
      () => {
        const file = parquet();
        return [flip(file, footerStart(file), 1 + int(8)), 'PARQUET', 'footer bytes'];
      },
      () => [flip(parquet(), 4, 1 + int(4)), 'PARQUET', 'page bytes'],
      () => {
        // A varint of a large run length written at the start of a page's levels or values.
        const file = parquet();
        const metadata = parquetMetadata(file.buffer.slice(file.byteOffset, file.byteOffset + file.length) as ArrayBuffer);
        const group = pick(metadata.row_groups);
        const meta = pick(group.columns).meta_data!;
        const reader = { view: new DataView(file.buffer, file.byteOffset, file.length), offset: Number(meta.data_page_offset) };
        parquetHeader(reader);
        const run = pick([2 ** 20, 2 ** 27, 2 ** 30, 2 ** 31 - 1, int(5000)]) * 2 + int(2);
        const varint = [];
        for (let v = run; ; v = Math.floor(v / 128)) {
          if (v < 128) {
            varint.push(v);
            break;
          }
          varint.push((v % 128) | 0x80);
        }
        file.set(varint, Math.min(file.length - varint.length, reader.offset + int(6)));
        return [file, 'PARQUET', 'page runs'];
      },
      () => {
        const file = pick([parquet, ndjson, csv])();
        const format: Format = file.subarray(0, 4).toString('latin1') === 'PAR1' ? 'PARQUET' : file[0] === 0x7b ? 'NDJSON' : 'CSV';
        return [file.subarray(0, int(file.length)), format, 'truncated'];
      },
      () => {
        const text = pick([ndjson, csv])();
        const zipped = gzipSync(text);
        return [rand() < 0.5 ? zipped : zipped.subarray(0, int(zipped.length)), text[0] === 0x7b ? 'NDJSON' : 'CSV', 'gzip-wrapped'];
      },
      () => [pick([parquet, ndjson, csv])(), pick(['PARQUET', 'NDJSON', 'CSV'] as const), 'format declared at random'],
    ];

    // Every seed unmutated: each loads whole.
    const unmutated: { id: string; name: string }[] = [];
    for (const seed of seeds) {
      writeFileSync(join(imports, seed.name), seed.bytes);
      const res = await api({
        path: '/demo',
        body: { create: { schema: 'Transaction', data: { actions: [{ locationUri: pathToFileURL(join(imports, seed.name)).href, operation: 'UPSERT', format: 'PARQUET', schema: 'demo.Person' }] } } },
      });
      expect(res.status, res.text).to.equal(202);
      unmutated.push({ id: res.json.id, name: seed.name });
    }

    const kinds = new Map<string, number>();
    const ids: { id: string; name: string; kind: string }[] = [];
    for (let i = 0; i < FILES; i++) {
      const [file, format, kind] = pick(makers)();
      kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
      const name = `fuzz-${i}.${format.toLowerCase()}`;
      writeFileSync(join(imports, name), file);
      const res = await api({
        path: '/demo',
        body: { create: { schema: 'Transaction', data: { actions: [{ locationUri: pathToFileURL(join(imports, name)).href, operation: 'UPSERT', format, schema: 'demo.Person' }] } } },
      });
      expect(res.status, res.text).to.equal(202);
      ids.push({ id: res.json.id, name, kind });
    }

    const outcomes = new Map<string, number>();
    let peak = 0;
    for (const { id, name, kind } of ids) {
      // A load is never stuck: each ends within a minute of the one before it.
      const deadline = Date.now() + 60_000;
      for (;;) {
        expect(main.child.exitCode, `the data plane died: ${main.output().slice(-3000)}`).to.equal(null);
        expect(main.child.signalCode, main.output().slice(-3000)).to.equal(null);
        peak = Math.max(peak, memoryOf(main.child.pid!).peak);
        const res = await api({ path: `/demo/Transaction/${id}` });
        expect(res.status, res.text).to.equal(200);
        const tx = res.json;
        if (tx.status === 'SUCCEEDED' || tx.status === 'FAILED') {
          outcomes.set(tx.status, (outcomes.get(tx.status) ?? 0) + 1);
          if (tx.status === 'FAILED') expect(tx.error, JSON.stringify(tx)).to.be.a('string').and.not.match(/^load failed: /);
          for (const e of tx.actions[0].errors) expect(e.message.length).to.be.at.most(500);
          break;
        }
        expect(Date.now(), `${name} (${kind}) still ${tx.status}: ${JSON.stringify(tx)}`).to.be.lessThan(deadline);
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    for (const { id, name } of unmutated) {
      const tx = await waitForTransaction(api, id);
      expect(tx.status, `${name}: ${JSON.stringify(tx)}`).to.equal('SUCCEEDED');
      expect(tx.actions[0], name).to.include({ rowsRead: 300, rowsWritten: 300, rowsRejected: 0 });
    }
    const growth = peak - idle;
    if (process.env.DAS_FUZZ_FILES) {
      console.log(`      files ${FILES} (seed ${SEED}): ${JSON.stringify(Object.fromEntries(kinds))}; outcomes ${JSON.stringify(Object.fromEntries(outcomes))}; deaths 0; unmutated seeds ${unmutated.length} SUCCEEDED; idle RSS ${idle.toFixed(0)} MiB, peak ${peak.toFixed(0)} MiB`);
    }
    expect(growth, `peak RSS ${peak.toFixed(0)} MiB, idle ${idle.toFixed(0)} MiB`).to.be.lessThan(RSS_BUDGET_MIB);
    expect((await api({ path: '/readyz' })).status).to.equal(200);
  });
});
