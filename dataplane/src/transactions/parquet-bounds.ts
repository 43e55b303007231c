/**
 * What a Parquet file declares, checked before the reader allocates for it: the footer's length
 * against the file and DAS_BULK_MAX_FOOTER_BYTES; each row group's rows, column chunk offsets and
 * sizes against the file and the budgets; each page header's sizes and value counts against the
 * column chunk's bytes and the budgets, and a group's rows against the values its pages hold;
 * and each data page's contents as the decoder will read them (parquet-pages.ts).
 * Pure functions over bytes already read; a violation is a FormatError naming it.
 */
import type { Compressors, FileMetaData, RowGroup } from 'hyparquet';
import { gunzipSync, brotliDecompressSync } from 'node:zlib';
import { parquetHeader } from 'hyparquet/src/column.js';
import { getMaxDefinitionLevel, getMaxRepetitionLevel, getSchemaPath } from 'hyparquet/src/schema.js';
import { compressors } from 'hyparquet-compressors';
import type { FileLimits } from './limits.js';
import { checkDataPage, FormatError, type ColumnShape } from './parquet-pages.js';

export { FormatError, type ColumnShape };

const MAGIC = 0x31524150; // "PAR1"

/** The footer's length from the file's last 8 bytes, checked against the file and the budget. */
export function footerLength(tail: ArrayBuffer, size: number, limits: FileLimits): number {
  if (size < 12 || tail.byteLength !== 8) throw new FormatError(`is not a Parquet file (${size} bytes, too short)`);
  const view = new DataView(tail);
  if (view.getUint32(4, true) !== MAGIC) throw new FormatError('is not a Parquet file (no PAR1 at its end)');
  const length = view.getUint32(0, true);
  if (length > size - 12) throw new FormatError(`is not a valid Parquet file: its footer declares ${length} bytes of metadata, the file holds ${size - 12}`);
  if (length > limits.maxFooterBytes) throw new FormatError(`has a Parquet footer of ${length} bytes, more than DAS_BULK_MAX_FOOTER_BYTES (${limits.maxFooterBytes})`);
  return length;
}

/** A row group's byte range in the file: from its first column chunk's start to its last one's end. */
export interface GroupSpan {
  rows: number;
  start: number;
  end: number;
  /** Each column chunk's [start, end) in the file. */
  chunks: [number, number][];
}

const whole = (v: bigint | number | undefined) => (v === undefined ? NaN : Number(v));

/**
 * Whether every column is a plain top-level one (no struct, no list): hyparquet then decodes only
 * the pages a row range overlaps, so a row group can be read in slices. Nested columns are decoded
 * a whole column chunk at a time.
 */
export function flatColumns(metadata: FileMetaData): boolean {
  const [root, ...elements] = metadata.schema;
  return root?.num_children === elements.length && elements.every((e) => !e.num_children && e.repetition_type !== 'REPEATED');
}

/**
 * Values of flat columns decoded at once, whatever the budget allows: a slice skips the pages
 * before it without decompressing them and decodes its dictionaries and at most one partial page
 * per column again, so slices this size cost little more than one pass, while a writer's
 * 1,048,576-row groups (pyarrow's default) are never held decoded whole.
 */
export const SLICE_VALUES = 1 << 19;

/** Rows decoded at once from a row group: within SLICE_VALUES and DAS_BULK_MAX_GROUP_VALUES when its columns are flat, else the whole group. */
export function sliceRows(metadata: FileMetaData, group: GroupSpan, limits: FileLimits): number {
  if (!flatColumns(metadata)) return group.rows;
  const values = Math.min(limits.maxGroupValues, SLICE_VALUES);
  return Math.max(1, Math.min(group.rows, Math.floor(values / Math.max(1, group.chunks.length))));
}

/**
 * Every row group's rows and byte ranges, checked against the file's data area [4, dataEnd) and
 * the budgets: at most DAS_BULK_MAX_COLUMNS columns, and no two column chunks sharing bytes (a
 * footer that lists the same chunks under many row groups would claim rows its bytes do not hold).
 */
export function groupSpans(metadata: FileMetaData, dataEnd: number, limits: FileLimits): GroupSpan[] {
  checkSchemaTree(metadata.schema);
  const columns = metadata.schema.filter((e) => !e.num_children).length;
  if (columns > limits.maxColumns) throw new FormatError(`has ${columns} columns, more than DAS_BULK_MAX_COLUMNS (${limits.maxColumns})`);
  const spans = checkedSpans(metadata, dataEnd, limits);
  disjointChunks(spans);
  return spans;
}

/**
 * The schema's elements form one tree, each group's `num_children` followed by that many
 * elements: hyparquet builds the tree trusting the counts (one past the list's end fails inside
 * it). Walked without recursion, so a deep chain of groups cannot overflow the stack.
 */
export function checkSchemaTree(schema: FileMetaData['schema']): void {
  if (!schema.length) throw new FormatError('is not a valid Parquet file: its schema is empty');
  const open: number[] = []; // children still to come, per group on the path from the root
  for (let i = 0; i < schema.length; i++) {
    if (i > 0) {
      if (!open.length) throw new FormatError(`is not a valid Parquet file: its schema lists ${schema.length} elements, but its root's tree holds ${i}`);
      open[open.length - 1]--;
    }
    const children = schema[i].num_children ?? 0;
    if (!Number.isSafeInteger(children) || children < 0) throw new FormatError(`is not a valid Parquet file: schema element ${i + 1} declares ${String(children)} children`);
    if (children > 0) open.push(children);
    while (open.length && open[open.length - 1] === 0) open.pop();
  }
  if (open.length) throw new FormatError(`is not a valid Parquet file: its schema's groups declare more children than the ${schema.length} elements it lists`);
}

/** No two column chunks of the file overlap (each row group's rows must be its own bytes). */
function disjointChunks(spans: GroupSpan[]): void {
  const chunks = spans.flatMap((s, g) => s.chunks.map(([start, end], c) => ({ start, end, at: `column ${c + 1} of row group ${g + 1}` })));
  chunks.sort((a, b) => a.start - b.start || a.end - b.end);
  for (let i = 1; i < chunks.length; i++) {
    const [before, chunk] = [chunks[i - 1], chunks[i]];
    if (chunk.start < before.end) {
      throw new FormatError(`is not a valid Parquet file: ${chunk.at} (bytes ${chunk.start}..${chunk.end}) overlaps ${before.at} (bytes ${before.start}..${before.end}); row groups cannot share column chunks`);
    }
  }
}

function checkedSpans(metadata: FileMetaData, dataEnd: number, limits: FileLimits): GroupSpan[] {
  const flat = flatColumns(metadata);
  return metadata.row_groups.map((group: RowGroup, g: number) => {
    const at = `row group ${g + 1}`;
    const rows = whole(group.num_rows);
    if (!Number.isSafeInteger(rows) || rows < 0) throw new FormatError(`is not a valid Parquet file: ${at} declares ${String(group.num_rows)} rows`);
    if (rows > 0 && !group.columns.length) throw new FormatError(`is not a valid Parquet file: ${at} declares ${rows} rows but has no column chunk to hold them`);
    if (rows > limits.maxGroupRows) throw new FormatError(`has ${rows} rows in ${at}, more than DAS_BULK_MAX_GROUP_ROWS (${limits.maxGroupRows}); write the file with smaller row groups`);
    // Flat columns are read in slices within the budget (sliceRows); nested ones a whole group at once.
    if (!flat && rows * group.columns.length > limits.maxGroupValues) {
      throw new FormatError(
        `has ${rows} rows × ${group.columns.length} columns in ${at}, more values than DAS_BULK_MAX_GROUP_VALUES (${limits.maxGroupValues}) for nested columns (read a whole row group at a time); write the file with smaller row groups`,
      );
    }
    const chunks: [number, number][] = group.columns.map((column, c) => {
      const meta = column.meta_data;
      if (!meta || column.file_path) throw new FormatError(`is not a Parquet file this service reads: column ${c + 1} of ${at} has no metadata or is in another file`);
      const start = whole(meta.dictionary_page_offset || meta.data_page_offset);
      const end = start + whole(meta.total_compressed_size);
      if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 4 || end < start || end > dataEnd) {
        throw new FormatError(`is not a valid Parquet file: column ${c + 1} of ${at} declares bytes ${start}..${end}, outside the file's data (4..${dataEnd})`);
      }
      return [start, end];
    });
    const start = chunks.length ? Math.min(...chunks.map((c) => c[0])) : 4;
    const end = chunks.length ? Math.max(...chunks.map((c) => c[1])) : 4;
    if (end - start > limits.maxGroupBytes) throw new FormatError(`has ${end - start} bytes in ${at}, more than DAS_BULK_MAX_GROUP_BYTES (${limits.maxGroupBytes})`);
    return { rows, start, end, chunks };
  });
}

/**
 * The page headers of a row group's column chunks (its bytes, read from `span.start`): each page
 * lies within its chunk, decompresses to at most DAS_BULK_MAX_PAGE_BYTES, holds at most as many
 * values as the budget, and each chunk's pages hold at least the group's rows (every row has an
 * entry in every column), so a group cannot claim rows its bytes do not hold.
 */
export function checkPages(bytes: ArrayBuffer, span: GroupSpan, g: number, limits: FileLimits, columns: ColumnShape[], compressors: Compressors): void {
  const view = new DataView(bytes);
  span.chunks.forEach(([from, to], c) => {
    const at = `column ${c + 1} of row group ${g + 1}`;
    try {
      checkChunkPages(view, bytes, span, g, from, to, at, limits, columns[c], compressors);
    } catch (err) {
      // Whatever a hostile header makes a check trip over is the file's fault: named, never a crash of the load.
      if (err instanceof FormatError) throw err;
      throw new FormatError(`is not a valid Parquet file: the pages of ${at} cannot be read (${(err as Error).message})`);
    }
  });
}

/** One column chunk's pages (checkPages). */
function checkChunkPages(view: DataView, bytes: ArrayBuffer, span: GroupSpan, g: number, from: number, to: number, at: string, limits: FileLimits, column: ColumnShape, compressors: Compressors): void {
  const codec = column.codec;
  if (codec !== 'UNCOMPRESSED' && !compressors[codec as keyof Compressors]) throw new FormatError(`uses the compression codec ${codec} in ${at}, which this service does not read`);
  const reader = { view, offset: from - span.start };
  const end = to - span.start;
  let values = 0;
  while (reader.offset < end) {
    let header;
    try {
      header = parquetHeader(reader);
    } catch (err) {
      throw new FormatError(`is not a valid Parquet file: a page header of ${at} is unreadable (${(err as Error).message})`);
    }
    const compressed = header.compressed_page_size;
    const uncompressed = header.uncompressed_page_size;
    if (!Number.isSafeInteger(compressed) || compressed < 0 || reader.offset + compressed > end) {
      throw new FormatError(`is not a valid Parquet file: a page of ${at} declares ${compressed} bytes, past the end of its column chunk`);
    }
    if (!Number.isSafeInteger(uncompressed) || uncompressed < 0 || uncompressed > limits.maxPageBytes) {
      throw new FormatError(`has a page of ${uncompressed} bytes (decompressed) in ${at}, more than DAS_BULK_MAX_PAGE_BYTES (${limits.maxPageBytes})`);
    }
    const count = header.data_page_header?.num_values ?? header.data_page_header_v2?.num_values ?? header.dictionary_page_header?.num_values ?? 0;
    if (!Number.isSafeInteger(count) || count < 0) throw new FormatError(`is not a valid Parquet file: a page of ${at} declares ${String(count)} values`);
    if (count > limits.maxGroupValues) throw new FormatError(`has a page of ${count} values in ${at}, more than DAS_BULK_MAX_GROUP_VALUES (${limits.maxGroupValues})`);
    if (header.data_page_header || header.data_page_header_v2) {
      // A v2 page's row count is the header's own field: any type a mutated header gives it (the
      // fuzz test found a BigInt), so checked like the value count before it is added up.
      const rows = header.data_page_header_v2 ? header.data_page_header_v2.num_rows : count;
      if (!Number.isSafeInteger(rows) || rows < 0 || rows > count) {
        throw new FormatError(`is not a valid Parquet file: a page of ${at} declares ${String(rows)} rows of ${count} values`);
      }
      values += rows;
      const page = new Uint8Array(bytes, reader.offset, compressed);
      try {
        checkDataPage(page, header, column, compressors, limits);
      } catch (err) {
        if (err instanceof FormatError) throw new FormatError(`${err.message} in a page of ${at}`);
        throw new FormatError(`is not a valid Parquet file: a page of ${at} cannot be read (${(err as Error).message})`);
      }
    }
    reader.offset += compressed;
  }
  if (values < span.rows) throw new FormatError(`is not a valid Parquet file: row group ${g + 1} declares ${span.rows} rows, but ${at} holds ${values} values`);
}

/**
 * The decompressors, each bounded by the page's declared size (itself within the page budget):
 * gzip and brotli by zlib's maxOutputLength, snappy, lz4 and brotli into a buffer of that size,
 * zstd only when its frame declares a content size within it.
 */
export function boundedCompressors(limits: FileLimits): Compressors {
  const all: Compressors = {
    ...compressors,
    GZIP: (input, length) => asBytes(gunzipSync(input, { maxOutputLength: Math.max(1, length) })),
    BROTLI: (input, length) => asBytes(brotliDecompressSync(input, { maxOutputLength: Math.max(1, length) })),
    ZSTD: (input, length) => {
      const declared = zstdContentSize(input);
      if (declared === undefined || declared > length) throw new FormatError(`has a ZSTD page whose frame declares ${declared ?? 'no'} content size, not within its page's ${length} bytes`);
      return compressors.ZSTD!(input, length);
    },
  };
  return Object.fromEntries(
    Object.entries(all).map(([codec, decompress]) => [
      codec,
      (input: Uint8Array, length: number) => {
        if (!Number.isSafeInteger(length) || length < 0 || length > limits.maxPageBytes) {
          throw new FormatError(`has a ${codec} page of ${length} bytes (decompressed), more than DAS_BULK_MAX_PAGE_BYTES (${limits.maxPageBytes})`);
        }
        // An empty page (the dictionary of an all-null column): LZ4_RAW's decoder reads past a one-byte block.
        if (length === 0) return new Uint8Array(0);
        return decompress!(input, length);
      },
    ]),
  ) as Compressors;
}

const asBytes = (b: Buffer) => new Uint8Array(b.buffer, b.byteOffset, b.byteLength);

/** A zstd frame's Frame_Content_Size (RFC 8878 3.1.1.1), when its header carries one. */
export function zstdContentSize(input: Uint8Array): number | undefined {
  if (input.length < 6 || input[0] !== 0x28 || input[1] !== 0xb5 || input[2] !== 0x2f || input[3] !== 0xfd) return undefined;
  const descriptor = input[4];
  const fcsFlag = descriptor >> 6;
  const singleSegment = (descriptor >> 5) & 1;
  const dictBytes = [0, 1, 2, 4][descriptor & 3];
  const fcsBytes = [singleSegment ? 1 : 0, 2, 4, 8][fcsFlag];
  if (!fcsBytes) return undefined;
  let at = 5 + (singleSegment ? 0 : 1) + dictBytes;
  if (at + fcsBytes > input.length) return undefined;
  let value = 0;
  for (let i = 0; i < fcsBytes; i++) value += input[at++] * 2 ** (8 * i);
  return fcsBytes === 2 ? value + 256 : value;
}

/** Each column chunk's shape in a row group, from the schema (a column the schema lacks fails the file). */
export function columnShapes(metadata: FileMetaData, group: RowGroup): ColumnShape[] {
  return group.columns.map((column, c) => {
    const meta = column.meta_data!;
    let path;
    try {
      path = getSchemaPath(metadata.schema, meta.path_in_schema);
    } catch (err) {
      throw new FormatError(`is not a valid Parquet file: column ${c + 1} is not in its schema (${(err as Error).message})`);
    }
    return { maxRepetition: getMaxRepetitionLevel(path), maxDefinition: getMaxDefinitionLevel(path), type: String(meta.type), codec: String(meta.codec) };
  });
}
