/**
 * Files written by the tools people use, loaded through the transactions API into PostgreSQL and
 * into DynamoDB Local (one file of each writer and format, the same checks):
 * pyarrow (every codec, data pages v1 and v2, dictionary on, off and falling back mid-column,
 * each DELTA encoding, BYTE_STREAM_SPLIT, page index, no statistics, many row groups, tiny pages,
 * INT96, large strings, decimals as integers), fastparquet (its defaults and options) and DuckDB
 * (Parquet, CSV, NDJSON), small files and files of 100,000 rows. make_corpus.py writes them with
 * the records each must load as; every record is read back through the API and compared whole.
 * Files the engine cannot load as given (a list<decimal> column, decimals beyond 15 digits) must
 * FAIL naming the column.
 *
 * The writers come from scripts/python-peers/install.sh (pretest): a venv at DAS_PYTHON_PEERS,
 * default ~/.cache/data-access-python. DAS_CORPUS_LARGE sets the rows of the large files
 * (DAS_CORPUS_LARGE_DYNAMODB on DynamoDB Local, default 2,000).
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parse, stringify } from 'yaml';
import { adminClient, startTestDataPlane, type TestDataPlane } from '../../dataplane/test-support/dataplane.js';
import { transactionManifests, waitForTransaction, type Api } from '../../dataplane/test-support/transactions.js';
import { dynamoDbSecrets, dynamoDbTransactionManifests } from '../../dataplane/test-support/dynamodb.js';

const VENV = process.env.DAS_PYTHON_PEERS ?? join(homedir(), '.cache', 'data-access-python');
const PYTHON = join(VENV, 'bin', 'python');
const LARGE = process.env.DAS_CORPUS_LARGE ?? '100000';

interface Entry {
  file: string;
  format: 'PARQUET' | 'CSV' | 'NDJSON';
  writer: string;
  options: Record<string, unknown>;
  rows: number;
  /** What the FAILED error of a file the engine cannot load as given must say (make_corpus.py's refusals). */
  refused?: string;
}

/** The records of demo.Sample as make_corpus.py writes them: every type a column maps to. */
const SAMPLE = {
  properties: {
    i16: { type: 'integer' },
    i32: { type: 'integer' },
    i64: { type: 'integer' },
    f32: { type: 'number' },
    f64: { type: 'number' },
    dec: { type: 'number' },
    flag: { type: 'boolean' },
    day: { type: 'date' },
    ts_ms: { type: 'timestamp' },
    ts_us: { type: 'timestamp' },
    ts_ns: { type: 'timestamp' },
    ts96: { type: 'timestamp' },
    postcode: { type: 'string' },
    text: { type: 'string' },
    memo: { type: 'string' },
    address: { type: 'object', properties: { postcode: { type: 'string' }, city: { type: 'string' }, street: { type: 'string' } } },
    decs: { type: 'number' },
  },
};

/** The demo dataset's manifests (on PostgreSQL or DynamoDB Local) with one schema like SAMPLE per corpus file (each file loads into its own). */
function corpusManifests(dir: string, count: number): string {
  const file = join(dir, 'dataset-demo.yaml');
  const doc = parse(readFileSync(file, 'utf8'));
  for (let i = 0; i < count; i++) doc.spec.schemas[`demo.Corpus${i}`] = SAMPLE;
  writeFileSync(file, stringify(doc));
  return dir;
}

async function listAll(api: Api, schema: string): Promise<Map<string, unknown>> {
  const records = new Map<string, unknown>();
  let token: string | undefined;
  do {
    const res = await api({ path: `/demo/${schema}?limit=1000${token ? `&nextToken=${encodeURIComponent(token)}` : ''}` });
    expect(res.status, res.text).to.equal(200);
    for (const item of res.json.items) records.set(item.id, item);
    token = res.json.nextToken;
  } while (token);
  return records;
}

/** Where the corpus loads: the manifests' directory and the data plane's settings for it. */
type Location = () => Promise<{ manifests: string; env: Record<string, string> }>;

const postgres: Location = async () => ({ manifests: transactionManifests(), env: {} });
const dynamodb: Location = async () => {
  const secrets = await dynamoDbSecrets();
  return { manifests: await dynamoDbTransactionManifests(secrets.name), env: { DAS_SECRETS_DIR: secrets.dir } };
};

/**
 * DynamoDB Local writes an item at a time (a row is two items, live and history): with
 * DAS_CORPUS_DYNAMODB=1 it loads one file of each writer and format, the refusals and a large file
 * of DAS_CORPUS_LARGE_DYNAMODB rows (2,000); DAS_CORPUS_DYNAMODB=all loads every file.
 */
const DYNAMODB_FILES = /^(pa-defaults(-large)?|pa-zstd-v2|pa-dictionary-fallback-v2|pa-delta-byte-array-v2|pa-byte-stream-split-v1|pa-int96|fp-defaults|fp-gzip-row-groups|duckdb-defaults|duckdb-v2|duckdb|pa-list-decimal|pa-decimal-38|duckdb-list-decimal)\.(parquet|csv|ndjson)$/;

corpusSuite('PostgreSQL', postgres, LARGE);
// Not yet in npm test: on the loaded 2-core machine DynamoDB Local's requests timed out (10 s) and the
// first file did not finish in 10 min; run by hand with DAS_CORPUS_DYNAMODB=1 (or =all).
if (process.env.DAS_CORPUS_DYNAMODB) corpusSuite('DynamoDB Local', dynamodb, process.env.DAS_CORPUS_LARGE_DYNAMODB ?? '2000', process.env.DAS_CORPUS_DYNAMODB === 'all' ? undefined : DYNAMODB_FILES);

function corpusSuite(where: string, location: Location, large: string, only?: RegExp): void {
describe(`bulk loads of files written by pyarrow, fastparquet and DuckDB, into ${where}`, function () {
  this.timeout(900_000);
  let dp: TestDataPlane;
  let api: Api;
  let corpus: string;
  let entries: Entry[];
  const outcomes = new Map<string, any>();

  before(async () => {
    expect(existsSync(PYTHON), `no Python writers at ${VENV}: run scripts/python-peers/install.sh (npm's pretest does)`).to.equal(true);
    // The data plane's import root holds the corpus: written there before it starts.
    const dataDir = mkdtempSync(join(tmpdir(), 'das-writers-'));
    corpus = join(dataDir, 'imports');
    mkdirSync(corpus, { recursive: true });
    execFileSync(PYTHON, [join(import.meta.dirname, 'make_corpus.py'), corpus, '--large', large], { stdio: ['ignore', 'ignore', 'inherit'] });
    entries = (JSON.parse(readFileSync(join(corpus, 'corpus.json'), 'utf8')) as Entry[]).filter((e) => !only || only.test(e.file));
    const { manifests, env } = await location();
    dp = await startTestDataPlane({ manifests: corpusManifests(manifests, entries.length), dataDir, env: { ...env, DAS_BULK_POLL_MS: '100', DAS_BULK_CHUNK_ROWS: '1000' } });
    api = adminClient(dp);
    // The dataset serves once its tables exist (DynamoDB: created at start).
    for (let i = 0; i < 1200 && (await api({ path: '/demo/demo.Corpus0/none' })).status !== 404; i++) await new Promise((r) => setTimeout(r, 100));
    // Every file loads as its own transaction, all created at once and run as the replica claims them.
    const created = [];
    for (const [i, entry] of entries.entries()) {
      const res = await api({
        path: '/demo',
        body: { create: { schema: 'Transaction', data: { actions: [{ locationUri: pathToFileURL(join(corpus, entry.file)).href, operation: 'UPSERT', format: entry.format, schema: `demo.Corpus${i}` }] } } },
      });
      expect(res.status, res.text).to.equal(202);
      created.push(res.json.id);
    }
    for (const [i, id] of created.entries()) outcomes.set(entries[i].file, await waitForTransaction(api, id, undefined, 600_000));
  });
  after(async () => {
    await dp?.stop();
  });

  it(only ? 'the files cover every writer and format' : 'the corpus covers every writer, codec, page version and encoding asked for', () => {
    const names = entries.map((e) => e.file);
    expect(new Set(entries.map((e) => e.writer.split(' ')[0]))).to.deep.equal(new Set(['pyarrow', 'fastparquet', 'duckdb']));
    expect(new Set(entries.map((e) => e.format))).to.deep.equal(new Set(['PARQUET', 'CSV', 'NDJSON']));
    if (only) return;
    for (const codec of ['none', 'snappy', 'gzip', 'brotli', 'lz4', 'zstd']) for (const v of [1, 2]) expect(names).to.include(`pa-${codec}-v${v}.parquet`);
    for (const encoding of ['delta-binary-packed', 'delta-length-byte-array', 'delta-byte-array', 'byte-stream-split']) expect(names).to.include(`pa-${encoding}-v2.parquet`);
    expect(entries.filter((e) => e.rows >= Number(large)).map((e) => e.writer.split(' ')[0])).to.include.members(['pyarrow', 'duckdb']);
    expect(new Set(entries.map((e) => e.writer.split(' ')[0]))).to.deep.equal(new Set(['pyarrow', 'fastparquet', 'duckdb']));
  });

  it('every file loads SUCCEEDED with every row written and its bytes counted', () => {
    const failures: string[] = [];
    for (const entry of entries.filter((e) => !e.refused)) {
      const tx = outcomes.get(entry.file);
      const action = tx.actions[0];
      const line = `${entry.file} (${entry.writer} ${JSON.stringify(entry.options)})`;
      if (tx.status !== 'SUCCEEDED') failures.push(`${line}: ${tx.status} ${tx.error ?? ''}`);
      else if (action.rowsWritten !== entry.rows || action.rowsRejected !== 0 || action.rowsRead !== entry.rows) failures.push(`${line}: read ${action.rowsRead}, wrote ${action.rowsWritten}, refused ${action.rowsRejected}: ${JSON.stringify(action.errors.slice(0, 2))}`);
      else if (action.bytesRead !== statSync(join(corpus, entry.file)).size) failures.push(`${line}: bytesRead ${action.bytesRead}`);
    }
    expect(failures, failures.join('\n')).to.deep.equal([]);
  });

  it('every record reads back as the writer was given it: every row, every value', async () => {
    const failures: string[] = [];
    for (const [i, entry] of entries.entries()) {
      if (entry.refused || outcomes.get(entry.file)?.status !== 'SUCCEEDED') continue; // reported above, or below
      const loaded = await listAll(api, `demo.Corpus${i}`);
      const expected = readFileSync(join(corpus, `${entry.file}.expected.ndjson`), 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l));
      const wrong: string[] = [];
      if (loaded.size !== expected.length) wrong.push(`${loaded.size} records, expected ${expected.length}`);
      for (const record of expected) {
        try {
          expect(loaded.get(record.id)).to.deep.equal(record);
        } catch {
          wrong.push(`${record.id}: ${JSON.stringify(loaded.get(record.id))}, expected ${JSON.stringify(record)}`);
        }
        if (wrong.length >= 3) break;
      }
      if (wrong.length) failures.push(`${entry.file} (${entry.writer} ${JSON.stringify(entry.options)}):\n  ${wrong.join('\n  ')}`);
    }
    expect(failures, failures.join('\n')).to.deep.equal([]);
  });

  it('a list<decimal> column and decimals beyond 15 digits FAIL the load naming the column, never loaded rounded', () => {
    const refused = entries.filter((e) => e.refused);
    expect(refused.map((e) => e.file)).to.include.members(['pa-list-decimal.parquet', 'duckdb-list-decimal.parquet', 'pa-decimal-38.parquet']);
    for (const entry of refused) {
      const tx = outcomes.get(entry.file);
      expect(tx.status, entry.file).to.equal('FAILED');
      expect(tx.error, entry.file).to.contain(`no row was written: all ${entry.rows} rows were refused`).and.contain(entry.refused);
      expect(tx.actions[0].rowsWritten, entry.file).to.equal(0);
    }
  });
});
}
