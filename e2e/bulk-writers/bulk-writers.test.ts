/**
 * Files written by the tools people use, loaded through the transactions API into PostgreSQL:
 * pyarrow (every codec, data pages v1 and v2, dictionary on, off and falling back mid-column,
 * each DELTA encoding, BYTE_STREAM_SPLIT, page index, no statistics, many row groups, tiny pages,
 * INT96, large strings, decimals as integers), fastparquet (its defaults and options) and DuckDB
 * (Parquet, CSV, NDJSON), small files and files of 100,000 rows. make_corpus.py writes them with
 * the records each must load as; every record is read back through the API and compared whole.
 *
 * The writers come from scripts/python-peers/install.sh (pretest): a venv at DAS_PYTHON_PEERS,
 * default ~/.cache/data-access-python. DAS_CORPUS_LARGE sets the rows of the large files.
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

const VENV = process.env.DAS_PYTHON_PEERS ?? join(homedir(), '.cache', 'data-access-python');
const PYTHON = join(VENV, 'bin', 'python');
const LARGE = process.env.DAS_CORPUS_LARGE ?? '100000';

interface Entry {
  file: string;
  format: 'PARQUET' | 'CSV' | 'NDJSON';
  writer: string;
  options: Record<string, unknown>;
  rows: number;
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
  },
};

/** transactionManifests() with one schema like SAMPLE per corpus file (each file loads into its own). */
function corpusManifests(count: number): string {
  const dir = transactionManifests();
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

describe('bulk loads of files written by pyarrow, fastparquet and DuckDB', function () {
  this.timeout(600_000);
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
    execFileSync(PYTHON, [join(import.meta.dirname, 'make_corpus.py'), corpus, '--large', LARGE], { stdio: ['ignore', 'ignore', 'inherit'] });
    entries = JSON.parse(readFileSync(join(corpus, 'corpus.json'), 'utf8'));
    dp = await startTestDataPlane({ manifests: corpusManifests(entries.length), dataDir, env: { DAS_BULK_POLL_MS: '100' } });
    api = adminClient(dp);
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
    for (const [i, id] of created.entries()) outcomes.set(entries[i].file, await waitForTransaction(api, id, undefined, 300_000));
  });
  after(async () => {
    await dp?.stop();
  });

  it('the corpus covers every writer, codec, page version and encoding asked for', () => {
    const names = entries.map((e) => e.file);
    for (const codec of ['none', 'snappy', 'gzip', 'brotli', 'lz4', 'zstd']) for (const v of [1, 2]) expect(names).to.include(`pa-${codec}-v${v}.parquet`);
    for (const encoding of ['delta-binary-packed', 'delta-length-byte-array', 'delta-byte-array', 'byte-stream-split']) expect(names).to.include(`pa-${encoding}-v2.parquet`);
    expect(entries.filter((e) => e.rows >= Number(LARGE)).map((e) => e.writer.split(' ')[0])).to.include.members(['pyarrow', 'duckdb']);
    expect(new Set(entries.map((e) => e.writer.split(' ')[0]))).to.deep.equal(new Set(['pyarrow', 'fastparquet', 'duckdb']));
  });

  it('every file loads SUCCEEDED with every row written and its bytes counted', () => {
    const failures: string[] = [];
    for (const entry of entries) {
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
      if (outcomes.get(entry.file)?.status !== 'SUCCEEDED') continue; // reported above
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
});
