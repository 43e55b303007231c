/**
 * A data page's contents checked the way hyparquet (node_modules/hyparquet/src/datapage.js and
 * encoding.js) will decode them, before it does: every page a conforming writer produces passes,
 * and what would make the decoder grow memory or loop past the page's budgets is refused.
 *
 * - Level streams (repetition, definition) hold `num_values` entries; dictionary indices and RLE
 *   booleans hold only the non-null values: `num_values` minus the entries whose definition
 *   level is below the maximum (v1: counted from the levels; v2: the header's `num_nulls`).
 * - The decoder writes an RLE run whole into an array sized for the values left, so a run longer
 *   than that (a page of 4 values and a run of a billion) would grow the array without bound.
 * - A bit-packed run of bit width 0 reads no bytes: its length alone costs time, so it may not
 *   run past the values left (plus the padding to a multiple of 8 every writer leaves).
 * - DELTA_BINARY_PACKED (INT64) allocates its miniblock count per block; DELTA_BYTE_ARRAY builds
 *   each value from the previous one's prefix: a prefix longer than the previous value, or
 *   values adding up to more than DAS_BULK_MAX_PAGE_BYTES, is refused.
 * - A level stream declared BIT_PACKED (the deprecated encoding) would be read as the hybrid one
 *   and give other values: refused, naming the encoding.
 *
 * Pure functions over a page's bytes; a violation is a FormatError naming it.
 */
import type { Compressors } from 'hyparquet';
import type { parquetHeader } from 'hyparquet/src/column.js';
import { deltaBinaryUnpack } from 'hyparquet/src/delta.js';
import { readVarInt } from 'hyparquet/src/thrift.js';
import type { FileLimits } from './limits.js';

export class FormatError extends Error {}

/** What the page checks need of a column: its levels' maxima, its type and codec. */
export interface ColumnShape {
  maxRepetition: number;
  maxDefinition: number;
  type: string;
  codec: string;
}

type PageHeader = ReturnType<typeof parquetHeader>;

/** The value encodings hyparquet decodes (datapage.js); any other fails the load naming it. */
const VALUE_ENCODINGS = new Set(['PLAIN', 'PLAIN_DICTIONARY', 'RLE_DICTIONARY', 'RLE', 'BYTE_STREAM_SPLIT', 'DELTA_BINARY_PACKED', 'DELTA_LENGTH_BYTE_ARRAY', 'DELTA_BYTE_ARRAY']);

const bitWidth = (value: number) => 32 - Math.clz32(value);

/** Checks one data page (v1 or v2) as compressed in the file. */
export function checkDataPage(page: Uint8Array, header: PageHeader, column: ColumnShape, compressors: Compressors, limits: FileLimits): void {
  const v1 = header.data_page_header;
  const v2 = header.data_page_header_v2;
  const encoding = String((v1 ?? v2)!.encoding);
  if (!VALUE_ENCODINGS.has(encoding)) throw new FormatError(`uses the value encoding ${encoding}, which this service does not read`);
  const decompress = (bytes: Uint8Array, size: number) => {
    if (column.codec === 'UNCOMPRESSED') return bytes;
    const codec = compressors[column.codec as keyof Compressors];
    if (!codec) throw new FormatError(`uses the compression codec ${column.codec}, which this service does not read`);
    return codec(bytes, size);
  };
  if (v1) {
    for (const [name, level, max] of [
      ['repetition', v1.repetition_level_encoding, column.maxRepetition],
      ['definition', v1.definition_level_encoding, column.maxDefinition],
    ] as const) {
      if (max && String(level) === 'BIT_PACKED') throw new FormatError(`encodes its ${name} levels as BIT_PACKED (deprecated), which this service does not read`);
    }
    const count = v1.num_values;
    if (!column.maxRepetition && !column.maxDefinition && !valuesNeedCheck(encoding, column)) return;
    const body = decompress(page, header.uncompressed_page_size);
    const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
    let at = 0;
    if (column.maxRepetition) at = hybrid(view, at, bitWidth(column.maxRepetition), count, true).end;
    let present = count;
    if (column.maxDefinition) {
      const levels = hybrid(view, at, bitWidth(column.maxDefinition), count, true, column.maxDefinition);
      at = levels.end;
      present = levels.atMax;
    }
    checkValues(view, at, encoding, column, present, 1, limits);
  } else if (v2) {
    const count = v2.num_values;
    if (!(Number.isSafeInteger(v2.num_nulls) && v2.num_nulls >= 0 && v2.num_nulls <= count)) throw new FormatError(`declares ${v2.num_nulls} nulls of ${count} values`);
    // A length the header lacks would make the decoder read from a NaN offset, forever.
    const within = (n: unknown) => Number.isSafeInteger(n) && (n as number) >= 0 && (n as number) <= page.length;
    const levels = v2.repetition_levels_byte_length + v2.definition_levels_byte_length;
    if (!(within(v2.repetition_levels_byte_length) && within(v2.definition_levels_byte_length) && within(levels))) {
      throw new FormatError(`declares levels of ${v2.repetition_levels_byte_length} and ${v2.definition_levels_byte_length} bytes in a page of ${page.length}`);
    }
    const view = new DataView(page.buffer, page.byteOffset, page.byteLength);
    if (column.maxRepetition) hybrid(view, 0, bitWidth(column.maxRepetition), count, false);
    if (column.maxDefinition) hybrid(view, v2.repetition_levels_byte_length, bitWidth(column.maxDefinition), count, false);
    if (!valuesNeedCheck(encoding, column)) return;
    const rest = page.subarray(levels);
    const body = v2.is_compressed === false ? rest : decompress(rest, header.uncompressed_page_size - levels);
    checkValues(new DataView(body.buffer, body.byteOffset, body.byteLength), 0, encoding, column, count - v2.num_nulls, 2, limits);
  }
}

/** Whether the values section has anything to check (PLAIN and BYTE_STREAM_SPLIT values are read within the page as they are). */
function valuesNeedCheck(encoding: string, column: ColumnShape): boolean {
  if (encoding === 'DELTA_BINARY_PACKED') return column.type === 'INT64';
  return encoding === 'PLAIN_DICTIONARY' || encoding === 'RLE_DICTIONARY' || encoding === 'RLE' || encoding === 'DELTA_BYTE_ARRAY';
}

/** The values section from `at`, holding `present` (non-null) values, as the decoder reads it for data page `version`. */
function checkValues(view: DataView, at: number, encoding: string, column: ColumnShape, present: number, version: 1 | 2, limits: FileLimits): void {
  if (encoding === 'PLAIN_DICTIONARY' || encoding === 'RLE_DICTIONARY' || encoding === 'RLE') {
    if ((version === 1 && column.type === 'BOOLEAN') || (version === 2 && encoding === 'RLE')) {
      hybrid(view, at, 1, present, true); // booleans: a 4-byte length, then runs of width 1
      return;
    }
    const width = view.getUint8(at);
    // v1 reads no indices for width 0 (every value is the dictionary's first); v2 reads the runs still.
    if (width || version === 2) hybrid(view, at + 1, width, present, false);
  } else if (encoding === 'DELTA_BINARY_PACKED') {
    deltaHeader(view, at, present);
  } else if (encoding === 'DELTA_BYTE_ARRAY') {
    deltaByteArray(view, at, present, limits);
  }
}

/** What hyparquet's readRleBitPackedHybrid goes through: where it goes on from, and how many entries equal `max`. */
interface Stream {
  end: number;
  atMax: number;
}

/**
 * One run-length/bit-packed hybrid stream of `count` entries of `width` bits from `at` (after a
 * 4-byte length when `prefixed`), run by run as the decoder reads it; with `max`, the entries
 * equal to it are counted (the definition levels of present values).
 */
export function hybrid(view: DataView, at: number, width: number, count: number, prefixed: boolean, max = -1): Stream {
  const reader = { view, offset: at };
  let length: number | undefined;
  if (prefixed) {
    length = view.getUint32(reader.offset, true);
    reader.offset += 4;
  }
  const start = reader.offset;
  const valueBytes = (width + 7) >> 3;
  let seen = 0;
  let atMax = 0;
  while (seen < count) {
    const header = readVarInt(reader);
    if (header & 1) {
      // Bit-packed: groups of 8 values (the decoder's own int32 arithmetic for their number).
      const values = ((header >> 1) << 3) | 0;
      if (values < 0) throw new FormatError(`has a bit-packed run of ${values} values`);
      const take = Math.min(values, count - seen);
      if (!width && values > count - seen + 7) throw new FormatError(`has a bit-packed run of ${values} values where ${count - seen} are left`);
      // The decoder reads the first byte whenever one is left (and needs it for a width), then every byte of the run.
      const bytes = width ? Math.max(1, (values * width) / 8) : reader.offset < view.byteLength ? 1 : 0;
      if (reader.offset + bytes > view.byteLength) throw new FormatError('has runs past the end of the page');
      if (max >= 0) atMax += countPacked(view, reader.offset, width, take, max);
      reader.offset += bytes;
      seen += take;
    } else {
      const run = header >>> 1;
      if (run > count - seen) throw new FormatError(`has a run of ${run} values where ${count - seen} are left`);
      if (reader.offset + valueBytes > view.byteLength) throw new FormatError('has runs past the end of the page');
      if (max >= 0) {
        let value = 0;
        for (let i = 0; i < valueBytes; i++) value |= view.getUint8(reader.offset + i) << (i << 3);
        if (value === max) atMax += run;
      }
      reader.offset += valueBytes;
      seen += run;
    }
  }
  return { end: length === undefined ? reader.offset : start + length, atMax };
}

/** Of the first `take` values of a bit-packed run at `at`, those equal to `max`. */
function countPacked(view: DataView, at: number, width: number, take: number, max: number): number {
  if (!width) return max === 0 ? take : 0;
  const mask = width >= 32 ? -1 : (1 << width) - 1;
  let found = 0;
  let bits = 0;
  let held = 0;
  let offset = at;
  for (let i = 0; i < take; i++) {
    while (held < width) {
      bits += view.getUint8(offset++) * 2 ** held;
      held += 8;
    }
    const value = bits % 2 ** width & mask;
    if (value === max) found++;
    bits = Math.floor(bits / 2 ** width);
    held -= width;
  }
  return found;
}

/**
 * A DELTA_BINARY_PACKED header (block size, miniblocks per block, value count, first value):
 * the decoder allocates the miniblock count for 64-bit values, so it may not exceed the bytes
 * the page has left (each miniblock's bit width is a byte of the page).
 */
function deltaHeader(view: DataView, at: number, count: number): void {
  const reader = { view, offset: at };
  readVarInt(reader); // block size
  const miniblocks = readVarInt(reader);
  if (count > 1 && (miniblocks < 0 || miniblocks > view.byteLength - reader.offset)) {
    throw new FormatError(`declares ${miniblocks} DELTA_BINARY_PACKED miniblocks per block in a page of ${view.byteLength} bytes`);
  }
}

/**
 * DELTA_BYTE_ARRAY values: prefix lengths, suffix lengths, then the suffixes. Each value is the
 * previous one's first `prefix` bytes and its suffix, so a prefix may not be longer than the
 * previous value, and the values together (what the decoder allocates) stay within
 * DAS_BULK_MAX_PAGE_BYTES.
 */
function deltaByteArray(view: DataView, at: number, count: number, limits: FileLimits): void {
  if (!count) return;
  const reader = { view, offset: at };
  const prefixes = new Int32Array(count);
  const suffixes = new Int32Array(count);
  deltaBinaryUnpack(reader, count, prefixes);
  deltaBinaryUnpack(reader, count, suffixes);
  let previous = 0;
  let total = 0;
  for (let i = 0; i < count; i++) {
    if (prefixes[i] < 0 || prefixes[i] > previous) throw new FormatError(`has a DELTA_BYTE_ARRAY value ${i + 1} sharing ${prefixes[i]} bytes with a previous value of ${previous}`);
    if (suffixes[i] < 0) throw new FormatError(`has a DELTA_BYTE_ARRAY suffix of ${suffixes[i]} bytes`);
    previous = prefixes[i] + suffixes[i];
    total += previous;
  }
  if (total > limits.maxPageBytes) throw new FormatError(`has DELTA_BYTE_ARRAY values of ${total} bytes in all, more than DAS_BULK_MAX_PAGE_BYTES (${limits.maxPageBytes})`);
}
