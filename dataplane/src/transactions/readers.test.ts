/**
 * The readers on real files under an import root (file:// sources): a file that declares more
 * than its bytes hold or than a budget allows fails with a message naming it, before anything is
 * allocated for it; an over-long line or record is refused as a row; `bytes` adds up to the
 * file's size exactly, also when a load resumes mid-file.
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { COMPRESSORS, compress } from '../../test-support/compressed.js';
import { parquetFile, withFooter, withHugeRun, withPageRowsAsInt64 } from '../../test-support/transactions.js';
import { DEFAULT_FILE_LIMITS, storableMessage, type FileLimits } from './limits.js';
import { flatColumns, sliceRows } from './parquet-bounds.js';
import { FormatError, readChunks, type Format, type RawChunk } from './readers.js';
import { openLocation } from './sources.js';
import { dataPlaneSettings } from '../../../model/settings/dataplane.js';

describe('bulk-load readers: declared sizes checked, rows bounded, bytes exact', () => {
  const ndjson = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `${JSON.stringify({ id: `n${from + i}`, name: `name ${from + i}` })}\n`).join('');
  const root = mkdtempSync(join(tmpdir(), 'das-readers-'));
  mkdirSync(root, { recursive: true });
  let n = 0;
  const put = (bytes: Buffer | string, ext = 'bin') => {
    const path = join(root, `f${n++}.${ext}`);
    writeFileSync(path, bytes);
    return path;
  };
  const read = async (path: string, format: Format, options: { start?: number; chunkRows?: number; limits?: Partial<FileLimits> } = {}) => {
    const [file] = await openLocation(pathToFileURL(path).href, { importRoot: root, settings: dataPlaneSettings({}) });
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
    const [file] = await openLocation(pathToFileURL(path).href, { importRoot: root, settings: dataPlaneSettings({}) });
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
    it('a page header whose row count decodes as a 64-bit integer (found by the fuzz test: a TypeError ended the load as an internal failure) fails naming the page', async () => {
      await fails(put(withPageRowsAsInt64()), 'PARQUET', /is not a valid Parquet file: a page of column 1 of row group 1 declares 4 rows of 4 values/);
    });
    it('a schema whose groups declare more children than it lists, or fewer, fails at the footer check (found by the fuzz test: hyparquet read past the list)', async () => {
      // The root's num_children rewritten in the footer's bytes (no writer writes such a schema):
      // compact Thrift, after the root's name (field 4), field 5 as 0x15 and a zigzag varint.
      const withRootChildren = (count: number) => {
        const file = people(10);
        const footerAt = file.length - 8 - file.readUInt32LE(file.length - 8);
        const name = Buffer.from('root');
        const at = file.indexOf(Buffer.concat([name, Buffer.from([0x15, 2 * 2])]), footerAt);
        expect(at, 'the root element in the footer').to.be.greaterThan(0);
        file[at + name.length + 1] = 2 * count;
        return file;
      };
      await fails(put(withRootChildren(3)), 'PARQUET', /its schema's groups declare more children than the 3 elements it lists/);
      await fails(put(withRootChildren(1)), 'PARQUET', /its schema lists 3 elements, but its root's tree holds 2/);
    });
    it('a page of more values than DAS_BULK_MAX_GROUP_VALUES fails naming the budget', async () => {
      await fails(put(people(300)), 'PARQUET', /has a page of 300 values in column 1 of row group 1, more than DAS_BULK_MAX_GROUP_VALUES \(64\)/, { maxGroupValues: 64 });
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
    it('gzip bytes declared as NDJSON are decompressed: every row read (the name says nothing)', async () => {
      const lines = Array.from({ length: 200 }, (_, i) => JSON.stringify({ id: `g${i}`, name: `name ${i}` })).join('\n');
      const { rows, bytes, size } = await read(put(gzipSync(lines), 'ndjson'), 'NDJSON');
      expect(rows.map((r) => r.value)).to.deep.equal(Array.from({ length: 200 }, (_, i) => ({ id: `g${i}`, name: `name ${i}` })));
      expect(bytes, 'the compressed bytes, each once').to.equal(size);
    });
    it('CSV: quoted commas, doubled quotes, line ends in quotes and CRLF parse as before', async () => {
      const { rows } = await read(put('id,name\r\n1,"a, ""b""\r\nc"\r\n2,ü\r\n', 'csv'), 'CSV');
      expect(rows.map((r) => r.value)).to.deep.equal([
        { id: '1', name: 'a, "b"\r\nc' },
        { id: '2', name: 'ü' },
      ]);
    });
  });

  describe('width: DAS_BULK_MAX_COLUMNS, and chunks bounded by values', () => {
    it('a CSV header wider than DAS_BULK_MAX_COLUMNS fails the file before any field is made', async () => {
      const header = Array.from({ length: 100_000 }, (_, i) => `c${i}`).join(',');
      await fails(put(`${header}\n${'1,'.repeat(99_999)}1\n`, 'csv'), 'CSV', /: the CSV header has 100000 columns, more than DAS_BULK_MAX_COLUMNS \(1024\)$/);
      await fails(put('a,"b,c",d\n1,2,3\n', 'csv'), 'CSV', /the CSV header has 3 columns, more than DAS_BULK_MAX_COLUMNS \(2\)/, { maxColumns: 2 });
    });
    it('an NDJSON object with more keys than DAS_BULK_MAX_COLUMNS (nested ones count, keys inside arrays and strings do not) fails the file', async () => {
      const within = { id: 'w1', a: { b: 1, c: 2 }, list: [{ x: 1 }, { y: 2 }], text: 'k:v, "q": 1' }; // id, a, a.b, a.c, list, text: 6
      const wide = { id: 'w2', a: { b: 1, c: 2, d: 3 }, list: [], text: '' }; // 7
      const path = put(`${JSON.stringify(within)}\n${JSON.stringify(wide)}\n`, 'ndjson');
      await fails(path, 'NDJSON', /: row 2 has 7 columns, more than DAS_BULK_MAX_COLUMNS \(6\)$/, { maxColumns: 6 });
      const { rows } = await read(path, 'NDJSON', { limits: { maxColumns: 7 } });
      expect(rows.map((r) => r.value)).to.deep.equal([within, wide]);
    });
    it('a CSV record wider than its header is refused by its count, the rows around it load', async () => {
      const { rows } = await read(put(`id,name\n1,one\n2,${'x,'.repeat(50_000)}x\n3,three\n`, 'csv'), 'CSV');
      expect(rows).to.deep.equal([
        { row: 1, value: { id: '1', name: 'one' } },
        { row: 2, problem: 'has 50002 fields, the header 2' },
        { row: 3, value: { id: '3', name: 'three' } },
      ]);
    });
    it('a chunk of a text file holds at most DAS_BULK_MAX_GROUP_VALUES values: wide rows make short chunks', async () => {
      const header = Array.from({ length: 100 }, (_, i) => `c${i}`).join(',');
      const row = (n: number) => Array.from({ length: 100 }, (_, i) => `${n}-${i}`).join(',');
      const { chunks, rows } = await read(put(`${header}\n${Array.from({ length: 50 }, (_, n) => row(n)).join('\n')}\n`, 'csv'), 'CSV', { limits: { maxGroupValues: 1000 } });
      expect(rows).to.have.length(50);
      expect(chunks.map((c) => c.rows.length)).to.deep.equal([10, 10, 10, 10, 10]);
      expect(rows[49].value!.c99).to.equal('49-99');
    });
  });

  describe('compressed CSV and NDJSON: detected by their first bytes, streamed, bounded', () => {
    const csv = (n: number) => `id,name,age\n${Array.from({ length: n }, (_, i) => `p${i},"name, ${i} ""q""",${i % 90}`).join('\n')}\n`;
    const expected = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `p${i}`, name: `name, ${i} "q"`, age: String(i % 90) }));
    for (const tool of COMPRESSORS) {
      it(`a CSV compressed by ${tool} reads every row, whatever its name`, async () => {
        const { rows, bytes, size } = await read(put(compress(csv(5000), tool), 'csv'), 'CSV', { chunkRows: 700 });
        expect(rows.map((r) => r.value)).to.deep.equal(expected(5000));
        expect(bytes).to.equal(size);
      });
    }
    it('a .gz name holding plain text is read as plain text', async () => {
      const { rows } = await read(put(csv(10), 'csv.gz'), 'CSV');
      expect(rows.map((r) => r.value)).to.deep.equal(expected(10));
    });
    it('concatenated members (cat a.gz b.gz) and frames (cat a.zst b.zst) are read to the end', async () => {
      for (const tool of ['gzip', 'zstd'] as const) {
        const { rows } = await read(put(Buffer.concat([compress(ndjson(0, 1500), tool), compress(ndjson(1500, 3000), tool)]), 'ndjson'), 'NDJSON');
        expect(rows.map((r) => r.value!.id), tool).to.deep.equal(Array.from({ length: 3000 }, (_, i) => `n${i}`));
      }
    });
    it('a truncated or corrupt stream fails naming the file and the compression', async () => {
      for (const tool of ['gzip', 'zstd'] as const) {
        const whole = compress(ndjson(0, 20_000), tool);
        await fails(put(whole.subarray(0, Math.floor(whole.length / 2)), 'ndjson'), 'NDJSON', new RegExp(`f\\d+\\.ndjson: the ${tool} stream is not valid \\(.*truncated\\)`));
        const corrupt = Buffer.from(whole);
        for (let i = 200; i < 400; i++) corrupt[i] ^= 0x5a;
        await fails(put(corrupt, 'ndjson'), 'NDJSON', new RegExp(`f\\d+\\.ndjson: the ${tool} stream is not valid \\(`));
      }
    });
    it('a bomb fails naming DAS_BULK_MAX_COMPRESSION_RATIO; a file over DAS_BULK_MAX_DECOMPRESSED_BYTES fails naming it', async () => {
      const bomb = Buffer.alloc(16 * 1024 * 1024, 0x61); // 16 MiB of one byte: ~1000:1 by gzip, far more by zstd
      for (const tool of ['gzip', 'zstd'] as const) {
        await fails(put(compress(bomb, tool), 'csv'), 'CSV', new RegExp(`decompresses \\(${tool}\\) to more than DAS_BULK_MAX_COMPRESSION_RATIO \\(200\\) times its size`));
        await fails(put(compress(csv(5000), tool), 'csv'), 'CSV', new RegExp(`decompresses \\(${tool}\\) to more than DAS_BULK_MAX_DECOMPRESSED_BYTES \\(100000 bytes\\)`), { maxDecompressedBytes: 100_000 });
      }
    });
    it('a zstd frame that declares a window over DAS_BULK_MAX_ZSTD_WINDOW_BYTES fails before a decoder allocates it', async () => {
      // A frame header whose window descriptor says 2 GiB, then an empty last block.
      const frame = Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0xa8, 0x01, 0x00, 0x00]);
      await fails(put(frame, 'ndjson'), 'NDJSON', /a zstd frame needs a window of 2147483648 bytes, more than DAS_BULK_MAX_ZSTD_WINDOW_BYTES \(134217728\)/);
      // zstd --long=27 declares a 128 MiB window: within the default, refused under a lower setting.
      const long = execFileSync('zstd', ['-q', '-c', '--long=27'], { input: ndjson(0, 100) });
      expect((await read(put(long, 'ndjson'), 'NDJSON')).rows).to.have.length(100);
      await fails(put(long, 'ndjson'), 'NDJSON', /more than DAS_BULK_MAX_ZSTD_WINDOW_BYTES \(1048576\)/, { maxZstdWindowBytes: 1024 * 1024 });
    });
  });

  describe('bytes: each byte of the file counted once', () => {
    const csvWithLineEnds = `id,name\r\n${Array.from({ length: 700 }, (_, i) => `c${i},"x\r\ny ${i}"`).join('\r\n')}`;
    const ndjsonLines = (n: number) => Array.from({ length: n }, (_, i) => JSON.stringify({ id: `z${i}`, name: `zed ${i}` })).join('\n');
    const cases: [string, () => Buffer, Format, number][] = [
      ['Parquet, snappy, 4 row groups', () => people(4000), 'PARQUET', 4000],
      ['Parquet, gzip (compressed pages), 3 row groups', () => people(2500, 'GZIP'), 'PARQUET', 2500],
      ['NDJSON with multi-byte text and a blank line', () => Buffer.from(Array.from({ length: 900 }, (_, i) => (i === 5 ? '' : JSON.stringify({ id: `n${i}`, name: `naïve ${i} €` }))).join('\n') + '\n'), 'NDJSON', 899], // the blank line is counted, not a row
      ['CSV with CRLF and a quoted line end', () => Buffer.from(csvWithLineEnds), 'CSV', 700],
      ['CSV gzip-compressed (gzip -c)', () => compress(csvWithLineEnds, 'gzip'), 'CSV', 700],
      ['NDJSON zstd-compressed (zstd -c)', () => compress(ndjsonLines(900), 'zstd'), 'NDJSON', 900],
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
