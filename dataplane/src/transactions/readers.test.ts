/**
 * The readers on real files under an import root (file:// sources): a file that declares more
 * than its bytes hold or than a budget allows fails with a message naming it, before anything is
 * allocated for it; an over-long line or record is refused as a row; `bytes` adds up to the
 * file's size exactly, also when a load resumes mid-file.
 */
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { parquetFile, withFooter, withHugeRun } from '../../test-support/transactions.js';
import { DEFAULT_FILE_LIMITS, storableMessage, type FileLimits } from './limits.js';
import { flatColumns, sliceRows } from './parquet-bounds.js';
import { FormatError, readChunks, type Format, type RawChunk } from './readers.js';
import { openLocation } from './sources.js';

describe('bulk-load readers: declared sizes checked, rows bounded, bytes exact', () => {
  const root = mkdtempSync(join(tmpdir(), 'das-readers-'));
  mkdirSync(root, { recursive: true });
  let n = 0;
  const put = (bytes: Buffer | string, ext = 'bin') => {
    const path = join(root, `f${n++}.${ext}`);
    writeFileSync(path, bytes);
    return path;
  };
  const read = async (path: string, format: Format, options: { start?: number; chunkRows?: number; limits?: Partial<FileLimits> } = {}) => {
    const [file] = await openLocation(pathToFileURL(path).href, { importRoot: root, env: {} });
    const chunks: RawChunk[] = [];
    for await (const c of readChunks(file, format, options.start ?? 0, options.chunkRows ?? 1000, { ...DEFAULT_FILE_LIMITS, ...options.limits })) chunks.push(c);
    return { chunks, rows: chunks.flatMap((c) => c.rows), bytes: chunks.reduce((s, c) => s + c.bytes, 0), size: file.size };
  };
  const fails = async (path: string, format: Format, pattern: RegExp, limits?: Partial<FileLimits>) => {
    const err = await read(path, format, { limits }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err, 'the read fails').to.be.instanceOf(FormatError);
    expect((err as Error).message).to.match(pattern);
  };
  /** The chunks read before the read failed, and its error. */
  const readUntilError = async (path: string) => {
    const [file] = await openLocation(pathToFileURL(path).href, { importRoot: root, env: {} });
    const chunks: RawChunk[] = [];
    try {
      for await (const c of readChunks(file, 'PARQUET', 0, 1000, DEFAULT_FILE_LIMITS)) chunks.push(c);
    } catch (err) {
      return { chunks, err };
    }
    return { chunks, err: undefined };
  };
  const people = (count: number, codec: 'SNAPPY' | 'GZIP' = 'SNAPPY', rowGroupSize = 1000, pageSize?: number) =>
    parquetFile(
      [
        { name: 'id', data: Array.from({ length: count }, (_, i) => `p${i}`), type: 'STRING' },
        { name: 'age', data: Array.from({ length: count }, (_, i) => i % 90), type: 'INT32' },
      ],
      { codec, rowGroupSize, pageSize },
    );

  describe('Parquet: what the footer declares', () => {
    it('a column chunk of 3.9 GB in a 200-byte file is refused before any read of it', async () => {
      const file = withFooter(people(2), (m) => (m.row_groups[0].columns[0].meta_data!.total_compressed_size = 3_900_000_000n));
      await fails(put(file), 'PARQUET', /column 1 of row group 1 declares bytes \d+\.\.3900000\d+, outside the file's data/);
    });
    it('a row group that claims 50 M rows is over DAS_BULK_MAX_GROUP_ROWS', async () => {
      await fails(put(withFooter(people(2), (m) => (m.row_groups[0].num_rows = 50_000_000n))), 'PARQUET', /50000000 rows in row group 1, more than DAS_BULK_MAX_GROUP_ROWS \(1048576\)/);
    });
    it('a row group that claims more rows than its pages hold is refused (within the budget too)', async () => {
      await fails(put(withFooter(people(2), (m) => (m.row_groups[0].num_rows = 1000n))), 'PARQUET', /row group 1 declares 1000 rows, but column 1 of row group 1 holds 2 values/);
    });
    it('a row group of more values than DAS_BULK_MAX_GROUP_VALUES is decoded in slices within it: every row once, in order, bytes exact, a resume inside it too', async () => {
      // 1,000 rows × 2 columns in one row group, in many small pages; 150 values at once: slices of 75 rows.
      const path = put(people(1000, 'SNAPPY', 1000, 256));
      const whole = await read(path, 'PARQUET', { limits: { maxGroupValues: 150 } });
      expect(whole.rows.map((r) => r.value)).to.deep.equal(Array.from({ length: 1000 }, (_, i) => ({ id: `p${i}`, age: i % 90 })));
      expect(whole.rows.map((r) => r.row)).to.deep.equal(Array.from({ length: 1000 }, (_, i) => i + 1));
      expect(whole.chunks.every((c) => c.rows.length <= 75), 'no chunk spans two slices').to.equal(true);
      expect(whole.bytes).to.equal(whole.size);
      const resumed = await read(path, 'PARQUET', { start: 530, limits: { maxGroupValues: 150 } });
      expect(resumed.rows.map((r) => r.row)).to.deep.equal(Array.from({ length: 470 }, (_, i) => i + 531));
      expect(resumed.rows[0].value).to.deep.equal({ id: 'p530', age: 530 % 90 });
    });
    it('nested columns (a struct, a list) are decoded a whole row group at a time, so only they meet DAS_BULK_MAX_GROUP_VALUES as a row-group limit', () => {
      const leaf = (name: string, extra = {}) => ({ name, type: 'INT32' as const, repetition_type: 'OPTIONAL' as const, ...extra });
      const meta = (schema: object[]) => ({ schema, row_groups: [] }) as unknown as Parameters<typeof flatColumns>[0];
      expect(flatColumns(meta([{ name: 'root', num_children: 2 }, leaf('a'), leaf('b')]))).to.equal(true);
      expect(flatColumns(meta([{ name: 'root', num_children: 1 }, { name: 'address', num_children: 1 }, leaf('postcode')])), 'a struct').to.equal(false);
      expect(flatColumns(meta([{ name: 'root', num_children: 1 }, leaf('tags', { repetition_type: 'REPEATED' })])), 'a repeated field').to.equal(false);
      const span = { rows: 1000, start: 4, end: 100, chunks: [[4, 50], [50, 100]] as [number, number][] };
      const limits = { ...DEFAULT_FILE_LIMITS, maxGroupValues: 150 };
      expect(sliceRows(meta([{ name: 'root', num_children: 2 }, leaf('a'), leaf('b')]), span, limits)).to.equal(75);
      expect(sliceRows(meta([{ name: 'root', num_children: 1 }, { name: 'address', num_children: 1 }, leaf('postcode')]), span, limits)).to.equal(1000);
    });
    it('10,000 row groups listing the same 50-row column chunks (500,000 rows claimed) fail at the footer check, before any row is read', async () => {
      // Issue #27's file had 100,000 such row groups; 10,000 keep the test quick (writing the footer is the slow part).
      const file = withFooter(people(50, 'SNAPPY', 50), (m) => {
        m.row_groups = Array.from({ length: 10_000 }, () => m.row_groups[0]);
        m.num_rows = 500_000n;
      });
      const { chunks, err } = await readUntilError(put(file));
      expect(chunks, 'no row read').to.deep.equal([]);
      expect(err).to.be.instanceOf(FormatError);
      expect((err as Error).message).to.match(/column 1 of row group 2 \(bytes \d+\.\.\d+\) overlaps column 1 of row group 1 \(bytes \d+\.\.\d+\); row groups cannot share column chunks/);
    });
    it('column chunks of two row groups that overlap in part, and rows without any column chunk, fail at the footer check', async () => {
      const shifted = withFooter(people(100, 'SNAPPY', 50), (m) => {
        const second = m.row_groups[1].columns[0].meta_data!;
        second.data_page_offset -= 5n; // now starts inside the first row group's last chunk
        if (second.dictionary_page_offset) second.dictionary_page_offset -= 5n;
      });
      await fails(put(shifted), 'PARQUET', /column 1 of row group 2 \(bytes \d+\.\.\d+\) overlaps column 2 of row group 1/);
      const empty = withFooter(people(10), (m) => (m.row_groups[0].columns = []));
      await fails(put(empty), 'PARQUET', /row group 1 declares 10 rows but has no column chunk to hold them/);
    });
    it('a codec this service does not read (LZO) fails, naming it and the column', async () => {
      await fails(put(withFooter(people(10), (m) => (m.row_groups[0].columns[1].meta_data!.codec = 'LZO'))), 'PARQUET', /uses the compression codec LZO in column 2 of row group 1, which this service does not read/);
    });
    it('a schema wider than DAS_BULK_MAX_COLUMNS fails, naming it', async () => {
      await fails(put(people(10)), 'PARQUET', /has 2 columns, more than DAS_BULK_MAX_COLUMNS \(1\)/, { maxColumns: 1 });
    });
    it('a footer length past the file, or over DAS_BULK_MAX_FOOTER_BYTES', async () => {
      const file = people(2);
      const lying = Buffer.from(file);
      lying.writeUInt32LE(0xfffffff0, lying.length - 8);
      await fails(put(lying), 'PARQUET', /footer declares 4294967280 bytes of metadata, the file holds \d+/);
      await fails(put(file), 'PARQUET', /Parquet footer of \d+ bytes, more than DAS_BULK_MAX_FOOTER_BYTES \(16\)/, { maxFooterBytes: 16 });
      await fails(put('PAR1'), 'PARQUET', /is not a Parquet file \(4 bytes, too short\)/);
    });
    it('a page larger than DAS_BULK_MAX_PAGE_BYTES once decompressed, and a row group over DAS_BULK_MAX_GROUP_BYTES', async () => {
      await fails(put(people(500, 'GZIP')), 'PARQUET', /page of \d+ bytes \(decompressed\) in column 1 of row group 1, more than DAS_BULK_MAX_PAGE_BYTES \(64\)/, { maxPageBytes: 64 });
      await fails(put(people(500)), 'PARQUET', /\d+ bytes in row group 1, more than DAS_BULK_MAX_GROUP_BYTES \(100\)/, { maxGroupBytes: 100 });
    });
    it('dictionary-encoded pages with nulls load (their indices hold only the present values): 2,000 postcodes in row groups of 500', async () => {
      // The regression of issue #27: the check read num_values indices where the page holds num_values minus its nulls.
      const postcodes = Array.from({ length: 2000 }, (_, i) => ['AB1 2CD', null, 'EF3 4GH', 'IJ5 6KL'][i % 4]);
      const file = parquetFile(
        [
          { name: 'id', data: postcodes.map((_, i) => `r${i}`), type: 'STRING' },
          { name: 'postcode', data: postcodes, type: 'STRING' },
        ],
        { rowGroupSize: 500 },
      );
      const { rows } = await read(put(file), 'PARQUET');
      expect(rows.map((r) => r.value)).to.deep.equal(postcodes.map((postcode, i) => ({ id: `r${i}`, postcode })));
    });
    it('a page of 4 values with an RLE run of a billion is refused before the decoder writes the run', async () => {
      await fails(put(withHugeRun()), 'PARQUET', /has a run of 1073741823 values where 4 are left in a page of column 1 of row group 1/);
    });
    it('bit-packed runs of no values (found by the fuzz test: the check itself looped) end at the page end', async () => {
      const err = await read(put(withHugeRun([1, 1, 1, 1, 1, 1, 1, 1])), 'PARQUET').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(FormatError);
    });
    it('a truncated file fails with a message, whatever the cut', async () => {
      const file = people(300, 'GZIP', 100);
      for (const cut of [1, 9, 40, Math.floor(file.length / 2), file.length - 9]) {
        const err = await read(put(file.subarray(0, cut)), 'PARQUET').then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err, `cut at ${cut}`).to.be.instanceOf(FormatError);
      }
    });
  });

  describe('NDJSON and CSV: records bounded by DAS_BULK_MAX_ROW_BYTES', () => {
    it('a 5 MiB line is refused as a row (its size named), the rows around it load', async () => {
      const long = `{"id":"x","name":"${'a'.repeat(5 * 1024 * 1024)}"}`;
      const { rows } = await read(put(`{"id":"1"}\n${long}\n{"id":"3"}\n`, 'ndjson'), 'NDJSON');
      expect(rows.map((r) => r.row)).to.deep.equal([1, 2, 3]);
      expect(rows[0].value).to.deep.equal({ id: '1' });
      expect(rows[1]).to.deep.equal({ row: 2, problem: `the row is ${long.length + 1} bytes, more than DAS_BULK_MAX_ROW_BYTES (1048576)` });
      expect(rows[2].value).to.deep.equal({ id: '3' });
    });
    it('a CSV record over the budget (an unclosed quote runs to the end of the file) is refused; an over-long header fails the file', async () => {
      const { rows } = await read(put(`id,name\n1,one\n2,"never closed\n${'x,'.repeat(100)}\n`, 'csv'), 'CSV', { limits: { maxRowBytes: 64 } });
      expect(rows[0].value).to.deep.equal({ id: '1', name: 'one' });
      expect(rows[1].problem).to.match(/^the row is \d+ bytes, more than DAS_BULK_MAX_ROW_BYTES \(64\)$/);
      await fails(put(`${'h'.repeat(100)},b\n1,2\n`, 'csv'), 'CSV', /the CSV header is 103 bytes, more than DAS_BULK_MAX_ROW_BYTES \(64\)/, { maxRowBytes: 64 });
    });
    it('gzip bytes declared as NDJSON: rows refused (not UTF-8 or not JSON), nothing thrown, messages storable', async () => {
      const lines = Array.from({ length: 200 }, (_, i) => JSON.stringify({ id: `g${i}`, name: `name ${i}` })).join('\n');
      const { rows } = await read(put(gzipSync(lines), 'ndjson'), 'NDJSON');
      expect(rows.length).to.be.greaterThan(0);
      for (const r of rows) {
        expect(r.value, `row ${r.row} is no record`).to.equal(undefined);
        expect(r.problem).to.match(/^(the line is not valid UTF-8|not JSON: |the line is not a JSON object)/);
        // eslint-disable-next-line no-control-regex
        expect(storableMessage(r.problem!)).to.not.match(/[\u0000-\u0008]/);
      }
    });
    it('CSV: quoted commas, doubled quotes, line ends in quotes and CRLF parse as before', async () => {
      const { rows } = await read(put('id,name\r\n1,"a, ""b""\r\nc"\r\n2,ü\r\n', 'csv'), 'CSV');
      expect(rows.map((r) => r.value)).to.deep.equal([
        { id: '1', name: 'a, "b"\r\nc' },
        { id: '2', name: 'ü' },
      ]);
    });
  });

  describe('bytes: each byte of the file counted once', () => {
    const cases: [string, () => Buffer, Format, number][] = [
      ['Parquet, snappy, 4 row groups', () => people(4000), 'PARQUET', 4000],
      ['Parquet, gzip (compressed pages), 3 row groups', () => people(2500, 'GZIP'), 'PARQUET', 2500],
      ['NDJSON with multi-byte text and a blank line', () => Buffer.from(Array.from({ length: 900 }, (_, i) => (i === 5 ? '' : JSON.stringify({ id: `n${i}`, name: `naïve ${i} €` }))).join('\n') + '\n'), 'NDJSON', 899], // the blank line is counted, not a row
      ['CSV with CRLF and a quoted line end', () => Buffer.from(`id,name\r\n${Array.from({ length: 700 }, (_, i) => `c${i},"x\r\ny ${i}"`).join('\r\n')}`), 'CSV', 700],
    ];
    for (const [name, make, format, rows] of cases) {
      it(`${name}: the chunks add up to the file's size, also when resumed mid-file`, async () => {
        const path = put(make());
        const all = await read(path, format, { chunkRows: 300 });
        expect(all.rows).to.have.length(rows);
        expect(all.bytes).to.equal(all.size);
        // Resumed at a chunk boundary: what the first part counted plus what the rest counts is the size.
        const resumeAt = all.chunks[1].end;
        const before = all.chunks.filter((c) => c.end <= resumeAt).reduce((s, c) => s + c.bytes, 0);
        const rest = await read(path, format, { start: resumeAt, chunkRows: 300 });
        expect(rest.rows[0].row).to.equal(resumeAt + 1);
        expect(before + rest.bytes).to.equal(all.size);
      });
    }
  });
});
