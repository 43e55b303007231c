/** Helpers for bulk-load tests: manifests with a schema of every property type, Parquet fixtures, waiting for a transaction. */
import { expect } from 'chai';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { parse, stringify } from 'yaml';
import { parquetMetadata, type FileMetaData } from 'hyparquet';
import { ByteWriter, parquetWriteBuffer } from 'hyparquet-writer';
import { writeMetadata } from 'hyparquet-writer/src/metadata.js';
import { parquetHeader } from 'hyparquet/src/column.js';
import { adminClient, EXAMPLES_DIR } from './dataplane.js';

/** The example manifests plus demo.Item, which has a property of every type. */
export function transactionManifests(): string {
  const dir = mkdtempSync(join(tmpdir(), 'das-tx-'));
  cpSync(EXAMPLES_DIR, dir, { recursive: true });
  const file = join(dir, 'dataset-demo.yaml');
  const doc = parse(readFileSync(file, 'utf8'));
  doc.spec.schemas['demo.Item'] = {
    required: ['name'],
    properties: {
      name: { type: 'string' },
      count: { type: 'integer' },
      price: { type: 'number' },
      active: { type: 'boolean' },
      born: { type: 'date' },
      seen: { type: 'timestamp' },
      dims: { type: 'object', properties: { width: { type: 'integer' }, label: { type: 'string' } } },
      maker: { type: 'link', schema: 'demo.Company' },
    },
  };
  writeFileSync(file, stringify(doc));
  return dir;
}

/**
 * transactionManifests() with the demo dataset on another location (`spec.location` as given):
 * its SQL named query and the raw SQL endpoint left out (not every location has them).
 */
export function demoManifestsAt(location: Record<string, unknown>): string {
  const dir = transactionManifests();
  const file = join(dir, 'dataset-demo.yaml');
  const doc = parse(readFileSync(file, 'utf8'));
  doc.spec.location = location;
  delete doc.spec.queries['demo.HeadcountByEmployer'];
  delete doc.spec.auth.iam.rawSqlEndpointEnabled;
  writeFileSync(file, stringify(doc));
  return dir;
}

export function parquetFile(columns: { name: string; data: unknown[]; type?: string }[], options: { rowGroupSize?: number; pageSize?: number; codec?: 'GZIP' | 'SNAPPY' | 'UNCOMPRESSED' } = {}): Buffer {
  const buffer = parquetWriteBuffer({
    columnData: columns,
    rowGroupSize: options.rowGroupSize ?? 1000,
    ...(options.pageSize ? { pageSize: options.pageSize } : {}),
    codec: options.codec ?? 'SNAPPY',
    compressors: { GZIP: (b: Uint8Array) => new Uint8Array(gzipSync(b)) },
  } as Parameters<typeof parquetWriteBuffer>[0]);
  return Buffer.from(buffer);
}

/**
 * A Parquet file of `count` people for bulk-load tests, written to `dir/imports/<file>`: ids
 * `<prefix>0…`, names `person <id>`, and ages `i % 100` when asked for.
 */
export function writePeopleParquet(dir: string, file: string, count: number, options: { prefix?: string; age?: boolean; rowGroupSize?: number } = {}): void {
  const ids = Array.from({ length: count }, (_, i) => `${options.prefix ?? 'r'}${i}`);
  const columns = [
    { name: 'id', data: ids, type: 'STRING' },
    { name: 'name', data: ids.map((id) => `person ${id}`), type: 'STRING' },
    ...(options.age ? [{ name: 'age', data: ids.map((_, i) => i % 100), type: 'INT32' }] : []),
  ];
  mkdirSync(join(dir, 'imports'), { recursive: true });
  writeFileSync(join(dir, 'imports', file), parquetFile(columns, { rowGroupSize: options.rowGroupSize ?? 5000 }));
}

/**
 * The items file of the bulk-load tests on every location: 5 rows of every property type, a struct
 * column (`dims`), a link (`maker`), nulls, in gzip row groups of 2.
 */
export function itemsParquet(): Buffer {
  return parquetFile(
    [
      { name: 'id', data: ['i1', 'i2', 'i3', 'i4', 'i5'], type: 'STRING' },
      { name: 'name', data: ['one', 'two', 'three', 'four', 'five'], type: 'STRING' },
      { name: 'count', data: [1n, null, 3n, 4n, 9007199254740991n], type: 'INT64' },
      { name: 'price', data: [1.5, 2.25, null, 0, -3], type: 'DOUBLE' },
      { name: 'active', data: [true, false, null, true, false], type: 'BOOLEAN' },
      { name: 'born', data: ['2020-01-02', null, '1999-12-31', '2000-02-29', '1970-01-01'], type: 'STRING' },
      { name: 'seen', data: [new Date('2024-05-06T07:08:09.123Z'), null, new Date(0), new Date(1e12), new Date(2e12)], type: 'TIMESTAMP' },
      { name: 'dims', data: [{ width: 10, label: 'a' }, null, { width: null, label: 'c' }, { width: 4, label: null }, null] },
      { name: 'maker', data: [{ id: 'acme' }, null, { id: 'acme' }, null, null] },
    ],
    { rowGroupSize: 2, codec: 'GZIP' },
  );
}

/** itemsParquet's first row as the API answers it after the load. */
export const LOADED_ITEM_I1 = {
  id: 'i1',
  version: 1,
  name: 'one',
  count: 1,
  price: 1.5,
  active: true,
  born: '2020-01-02',
  seen: '2024-05-06T07:08:09.123Z',
  dims: { width: 10, label: 'a' },
  maker: { id: 'acme' },
};

export type Api = ReturnType<typeof adminClient>;

export async function waitForTransaction(api: Api, id: string, done = (tx: any) => tx.status === 'SUCCEEDED' || tx.status === 'FAILED', timeoutMs = 30_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await api({ path: `/demo/Transaction/${id}` });
    // 503 while a dataset is paused or being prepared again: keep waiting.
    if (res.status !== 503) {
      expect(res.status, res.text).to.equal(200);
      if (done(res.json)) return res.json;
    }
    if (Date.now() > deadline) throw new Error(`transaction ${id} still ${res.json?.status ?? res.status}: ${res.text}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}


/**
 * A Parquet file with its footer (file metadata) changed by `mutate` and written again: what a
 * file that declares sizes or counts its bytes do not hold looks like (hostile-input and fuzz tests).
 */
export function withFooter(file: Buffer, mutate: (metadata: FileMetaData) => void): Buffer {
  const length = file.readUInt32LE(file.length - 8);
  const metadata = parquetMetadata(file.buffer.slice(file.byteOffset, file.byteOffset + file.length) as ArrayBuffer);
  mutate(metadata);
  const writer = new ByteWriter();
  writeMetadata(writer, metadata);
  const footer = Buffer.from(writer.getBuffer());
  const tail = Buffer.alloc(8);
  tail.writeUInt32LE(footer.length, 0);
  tail.write('PAR1', 4, 'latin1');
  return Buffer.concat([file.subarray(0, file.length - 8 - length), footer, tail]);
}

/**
 * An uncompressed Parquet file whose first data page (a DATA_PAGE_V2 of an optional column, as
 * hyparquet-writer writes it) has its definition levels replaced by one RLE run of about a
 * billion values: a page of 4 values whose decoder would write the run whole.
 */
export function withHugeRun(runs: number[] = [0xfe, 0xff, 0xff, 0xff, 0x07, 1]): Buffer {
  const file = parquetFile([{ name: 'id', data: ['a', 'b', null, 'd'], type: 'STRING' }], { codec: 'UNCOMPRESSED' });
  const meta = parquetMetadata(file.buffer.slice(file.byteOffset, file.byteOffset + file.length) as ArrayBuffer).row_groups[0].columns[0].meta_data!;
  const reader = { view: new DataView(file.buffer, file.byteOffset, file.length), offset: Number(meta.data_page_offset) };
  parquetHeader(reader);
  file.set(runs, reader.offset); // by default varint 0x7ffffffe: an RLE run of 1,073,741,823
  return file;
}

/**
 * withHugeRun's file with its first DATA_PAGE_V2 header's `num_rows` field re-typed from i32 to
 * i64 (the same varint bytes), so a reader decodes it as a BigInt: what a flipped byte in a page
 * header gave the fuzz test (seed 43), which the page check then added to a number.
 */
export function withPageRowsAsInt64(): Buffer {
  const file = withHugeRun([]);
  const meta = parquetMetadata(file.buffer.slice(file.byteOffset, file.byteOffset + file.length) as ArrayBuffer).row_groups[0].columns[0].meta_data!;
  // Compact protocol: field 8 of PageHeader (data_page_header_v2, a struct: 0x5c after field 3),
  // then its fields 1 and 2 (num_values, num_nulls: 0x15 and a varint each), then field 3.
  let at = file.indexOf(0x5c, Number(meta.data_page_offset)) + 1;
  for (let field = 0; field < 2; field++) {
    if (file[at] !== 0x15) throw new Error(`unexpected page header byte ${file[at]} at ${at}`);
    at++;
    while (file[at] & 0x80) at++;
    at++;
  }
  if (file[at] !== 0x15) throw new Error(`num_rows is not where expected (byte ${file[at]} at ${at})`);
  file[at] = 0x16;
  return file;
}
