/**
 * Rows out of a file, a bounded chunk at a time: Parquet one row group at a time (that row
 * group's bytes only, read once, after its declared sizes were checked: parquet-bounds.ts),
 * NDJSON and CSV a record at a time from a stream, each record at most DAS_BULK_MAX_ROW_BYTES
 * (a longer one is refused as a row without being held). A load resumes at a row position, so
 * each chunk says where it ends, and what it adds to `bytesRead`: each byte of the file counts
 * once, whoever reads it, and a finished file counts its size.
 */
import { parquetMetadata, parquetReadObjects, type AsyncBuffer, type FileMetaData } from 'hyparquet';
import { textBytes } from './decompression.js';
import { DEFAULT_FILE_LIMITS, type FileLimits } from './limits.js';
import { boundedCompressors, checkPages, columnShapes, footerLength, FormatError, groupSpans, sliceRows } from './parquet-bounds.js';
import { decimalFixer } from './parquet-values.js';
import type { SourceFile } from './sources.js';

export { FormatError };

export type Format = 'PARQUET' | 'NDJSON' | 'CSV';
export const FORMATS: readonly Format[] = ['PARQUET', 'NDJSON', 'CSV'];

/** A row as read: its 1-based number in the file, and its values or why it could not be parsed. */
export interface RawRow {
  row: number;
  value?: Record<string, unknown>;
  problem?: string;
}

export interface RawChunk {
  rows: RawRow[];
  /** Rows of the file consumed once this chunk is written (the resume position). */
  end: number;
  /** Bytes of the file (as stored) this chunk takes the load through. */
  bytes: number;
}

export function readChunks(file: SourceFile, format: Format, start: number, chunkRows: number, limits: FileLimits = DEFAULT_FILE_LIMITS): AsyncGenerator<RawChunk> {
  if (format === 'PARQUET') return parquetChunks(file, start, chunkRows, limits);
  return lineChunks(file, format, start, chunkRows, limits);
}

async function* parquetChunks(file: SourceFile, start: number, chunkRows: number, limits: FileLimits): AsyncGenerator<RawChunk> {
  const size = file.size;
  const at = (err: unknown) => (err instanceof FormatError ? new FormatError(`${file.name} ${err.message}`) : err);
  let metadata: FileMetaData;
  let spans;
  let footer: number;
  try {
    const length = footerLength(size >= 12 ? await file.slice(size - 8, size) : new ArrayBuffer(0), size, limits);
    footer = length + 8;
    try {
      metadata = parquetMetadata(await file.slice(size - footer, size));
    } catch (err) {
      throw new FormatError(`is not a Parquet file (${(err as Error).message})`);
    }
    spans = groupSpans(metadata, size - footer, limits);
  } catch (err) {
    throw at(err);
  }
  const total = spans.reduce((n, s) => n + s.rows, 0);
  // Bytes of the file passed at a row position: the footer and every row group begun; all of it at the end.
  const groupEnds: number[] = [];
  spans.forEach((s, g) => groupEnds.push(Math.max(s.end, groupEnds[g - 1] ?? 0)));
  const passed = (position: number) => {
    if (position <= 0) return 0;
    if (position >= total) return size;
    let rows = 0;
    for (let g = 0; g < spans.length; g++) {
      rows += spans[g].rows;
      if (position <= rows) return Math.min(size, footer + groupEnds[g]);
    }
    return size;
  };
  if (total === 0 && start === 0) {
    yield { rows: [], end: 0, bytes: size };
    return;
  }
  const compressors = boundedCompressors(limits);
  const fixDecimals = decimalFixer(metadata);
  let done = start;
  let groupStart = 0;
  for (const [g, span] of spans.entries()) {
    const groupEnd = groupStart + span.rows;
    if (groupEnd > start && span.rows > 0) {
      let buffer: AsyncBuffer;
      try {
        // One row group's bytes in memory at a time, read once; hyparquet reads only within them.
        const bytes = await file.slice(span.start, span.end);
        if (bytes.byteLength !== span.end - span.start) throw new FormatError(`ended early: row group ${g + 1} needs bytes ${span.start}..${span.end}`);
        checkPages(bytes, span, g, limits, columnShapes(metadata, metadata.row_groups[g]), compressors);
        buffer = groupBuffer(bytes, span, size, g);
      } catch (err) {
        throw at(err);
      }
      // Decoded a slice at a time (at most DAS_BULK_MAX_GROUP_VALUES values; flat columns decode
      // only the pages a slice overlaps), so a large row group is not held decoded all at once.
      const slice = sliceRows(metadata, span, limits);
      for (let from = Math.max(start, groupStart); from < groupEnd; from += slice) {
        const to = Math.min(groupEnd, from + slice);
        let rows: Record<string, unknown>[];
        // A row whose value cannot be read exactly (a DECIMAL over 15 digits) is refused, naming its column.
        let problems: (string | undefined)[] = [];
        try {
          rows = (await parquetReadObjects({ file: buffer, metadata, rowStart: from, rowEnd: to, compressors })) as Record<string, unknown>[];
          if (fixDecimals) problems = rows.map(fixDecimals);
        } catch (err) {
          if (err instanceof FormatError) throw at(err);
          throw new FormatError(`${file.name} is not a valid Parquet file: row group ${g + 1} cannot be decoded (${(err as Error).message})`);
        }
        for (let i = 0; i < rows.length; i += chunkRows) {
          const part = rows.slice(i, i + chunkRows);
          const end = from + i + part.length;
          const raw = (value: Record<string, unknown>, j: number): RawRow => {
            const problem = problems[i + j];
            return problem ? { row: from + i + j + 1, problem } : { row: from + i + j + 1, value };
          };
          const chunk: RawChunk = { rows: part.map(raw), end, bytes: passed(end) - passed(done) };
          done = end;
          yield chunk;
        }
      }
    }
    groupStart = groupEnd;
  }
}

/**
 * A row group's bytes as hyparquet reads them. Each slice of the group asks for the same column
 * chunks again, and hyparquet needs each as an ArrayBuffer of its own: each range is copied out
 * once and kept while the group is read (at most the group's size again), not copied per slice.
 */
function groupBuffer(bytes: ArrayBuffer, span: { start: number; end: number }, size: number, g: number): AsyncBuffer {
  const copies = new Map<string, ArrayBuffer>();
  let kept = 0;
  return {
    byteLength: size,
    slice: (a: number, b = size) => {
      if (a < span.start || b > span.end || b < a) throw new FormatError(`is not a valid Parquet file: row group ${g + 1} reads bytes ${a}..${b} outside its column chunks`);
      const key = `${a}:${b}`;
      const known = copies.get(key);
      if (known) return known;
      const copy = bytes.slice(a - span.start, b - span.start);
      if (kept + copy.byteLength <= bytes.byteLength) {
        copies.set(key, copy);
        kept += copy.byteLength;
      }
      return copy;
    },
  };
}

/** A record of a line-based file: its bytes (without the line end), or only its size when over the budget. */
interface LineRecord {
  bytes?: Buffer;
  /** Bytes of the file it took, line end included. */
  size: number;
}

async function* lineChunks(file: SourceFile, format: 'NDJSON' | 'CSV', start: number, chunkRows: number, limits: FileLimits): AsyncGenerator<RawChunk> {
  const stream = await file.stream();
  const text = textBytes(stream, file.name, limits);
  const tooLong = (size: number) => `the row is ${size} bytes, more than DAS_BULK_MAX_ROW_BYTES (${limits.maxRowBytes})`;
  const tooWide = (what: string, columns: number) => new FormatError(`${file.name}: ${what} has ${columns} columns, more than DAS_BULK_MAX_COLUMNS (${limits.maxColumns})`);
  let rows: RawRow[] = [];
  let position = 0;
  // Bytes of the file as stored that the records so far took: their own sizes in a plain file; in a
  // compressed one, the compressed bytes the decoder had read (all of the file once it ends).
  let recordBytes = 0;
  const consumed = () => (text.compression() ? text.storedBytes() : recordBytes);
  let counted = 0;
  const taken = () => {
    const now = consumed();
    const bytes = now - counted;
    counted = now;
    return bytes;
  };
  // A chunk holds at most chunkRows rows, and (wide or long rows) DAS_BULK_MAX_GROUP_VALUES values or DAS_BULK_MAX_GROUP_BYTES bytes.
  let values = 0;
  let held = 0;
  let header: string[] | undefined;
  try {
    for await (const records of splitRecords(text.chunks, format === 'CSV', limits.maxRowBytes)) {
      for (const record of records) {
        recordBytes += record.size;
        let parsed: Omit<RawRow, 'row'> | undefined;
        if (format === 'CSV' && !header) {
          if (!record.bytes) throw new FormatError(`${file.name}: the CSV header is ${record.size} bytes, more than DAS_BULK_MAX_ROW_BYTES (${limits.maxRowBytes})`);
          const width = csvFieldCount(record.bytes);
          if (width > limits.maxColumns) throw tooWide('the CSV header', width);
          const names = utf8(record.bytes);
          if (names === undefined) throw new FormatError(`${file.name}: the CSV header is not valid UTF-8`);
          header = csvFields(names).map((h) => h.trim());
          continue; // the header is no row
        }
        position += 1;
        if (position <= start) {
          taken(); // resuming: these rows (and their bytes) were committed
          continue;
        }
        let width = 0;
        if (!record.bytes) parsed = { problem: tooLong(record.size) };
        else if (format === 'NDJSON') {
          width = jsonKeyCount(record.bytes);
          if (width > limits.maxColumns) throw tooWide(`row ${position}`, width);
          parsed = ndjsonRow(record.bytes);
        } else {
          width = header!.length;
          parsed = csvRow(record.bytes, header!);
        }
        if (parsed) {
          rows.push({ row: position, ...parsed });
          values += width;
          held += record.size;
        }
        if (rows.length >= chunkRows || values >= limits.maxGroupValues || held >= limits.maxGroupBytes) {
          yield { rows, end: position, bytes: taken() };
          rows = [];
          values = 0;
          held = 0;
        }
      }
    }
    const rest = taken();
    if (position >= start && (rows.length || rest > 0)) yield { rows, end: Math.max(position, start), bytes: rest };
  } finally {
    stream.destroy();
  }
}

const decoder = new TextDecoder('utf-8', { fatal: true });
function utf8(bytes: Buffer): string | undefined {
  try {
    return decoder.decode(bytes);
  } catch {
    return undefined;
  }
}

/**
 * The records of a stream, split on line ends outside CSV quotes, without holding more than
 * `maxBytes` of any one: a longer record is skipped to its end and reported by its size. The
 * split is on bytes (UTF-8 never has a quote, comma or line end inside a character), so sizes are exact.
 * Handed on as the records each piece of the stream ends (one step per piece, not per line: a
 * file of short or blank lines costs its bytes, not a wait per line).
 */
export async function* splitRecords(stream: AsyncIterable<Buffer | string>, csv: boolean, maxBytes: number): AsyncGenerator<LineRecord[]> {
  let batch: LineRecord[] = [];
  let pieces: Buffer[] = [];
  let held = 0;
  let size = 0;
  let over = false;
  let quoted = false;
  let fieldStart = true;
  let afterQuote = false;
  const take = (piece: Buffer) => {
    size += piece.length;
    if (over) return;
    if (held + piece.length > maxBytes) {
      over = true;
      pieces = [];
      held = 0;
      return;
    }
    pieces.push(piece);
    held += piece.length;
  };
  const finish = (): LineRecord => {
    let bytes: Buffer | undefined;
    if (!over) {
      bytes = Buffer.concat(pieces, held);
      if (bytes.length && bytes[bytes.length - 1] === 0x0d) bytes = bytes.subarray(0, bytes.length - 1);
    }
    const record = { size, ...(bytes ? { bytes } : {}) };
    pieces = [];
    held = 0;
    size = 0;
    over = false;
    quoted = false;
    fieldStart = true;
    afterQuote = false;
    return record;
  };
  for await (const chunk of stream) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    let from = 0;
    if (!csv) {
      // NDJSON: every line end ends a record.
      for (let i = buf.indexOf(0x0a); i !== -1; i = buf.indexOf(0x0a, from)) {
        take(buf.subarray(from, i));
        size += 1; // the line end
        from = i + 1;
        batch.push(finish());
      }
      if (from < buf.length) take(Buffer.from(buf.subarray(from)));
      if (batch.length) yield batch;
      batch = [];
      continue;
    }
    // CSV: a line end inside quotes is part of its field.
    for (let i = 0; i < buf.length; i++) {
      const b = buf[i];
      if (quoted) {
        if (b === 0x22) {
          quoted = false;
          afterQuote = true;
        }
        continue;
      }
      if (b === 0x22 && (fieldStart || afterQuote)) {
        quoted = true; // opens a quoted field, or a doubled quote inside one
        fieldStart = afterQuote = false;
        continue;
      }
      fieldStart = b === 0x2c;
      afterQuote = false;
      if (b === 0x0a) {
        take(buf.subarray(from, i));
        size += 1; // the line end
        from = i + 1;
        batch.push(finish());
      }
    }
    if (from < buf.length) take(Buffer.from(buf.subarray(from)));
    if (batch.length) yield batch;
    batch = [];
  }
  if (size > 0) yield [finish()];
}

/** An NDJSON line as a row (a blank line is `undefined`: counted, not loaded). */
function ndjsonRow(bytes: Buffer): Omit<RawRow, 'row'> | undefined {
  const line = utf8(bytes);
  if (line === undefined) return { problem: 'the line is not valid UTF-8' };
  if (!line.trim()) return undefined;
  try {
    const value = JSON.parse(line);
    return value && typeof value === 'object' && !Array.isArray(value) ? { value } : { problem: 'the line is not a JSON object' };
  } catch (err) {
    return { problem: `not JSON: ${(err as Error).message}` };
  }
}

/** A CSV record as a row by the header's names (a blank line is `undefined`). */
function csvRow(bytes: Buffer, header: string[]): Omit<RawRow, 'row'> | undefined {
  if (bytes.length === 0) return undefined;
  // Counted before any field is made: a record wider than its header is refused without being held.
  const count = csvFieldCount(bytes);
  if (count !== header.length) return { problem: `has ${count} fields, the header ${header.length}` };
  const text = utf8(bytes);
  if (text === undefined) return { problem: 'the record is not valid UTF-8' };
  const fields = csvFields(text);
  // Empty fields are absent values: CSV cannot tell an empty string from a null.
  return { value: Object.fromEntries(header.map((h, i) => [h, fields[i] === '' ? null : fields[i]])) };
}

/** One RFC 4180 record's fields (quoted fields may hold commas, doubled quotes and line ends). */
export function csvFields(text: string): string[] {
  const fields: string[] = [];
  let field = '';
  let quoted = false;
  let afterQuote = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i++;
        } else {
          quoted = false;
          afterQuote = true;
        }
      } else field += ch;
    } else if (ch === '"' && field === '' && !afterQuote) quoted = true;
    else if (ch === ',') {
      fields.push(field);
      field = '';
      afterQuote = false;
    } else field += ch;
  }
  fields.push(field);
  return fields;
}

/** The fields of one CSV record, counted on its bytes (commas outside quotes), without making them. */
export function csvFieldCount(bytes: Uint8Array): number {
  let count = 1;
  let quoted = false;
  let fieldStart = true;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (quoted) {
      if (b === 0x22) quoted = bytes[i + 1] === 0x22 ? (i++, true) : false;
      continue;
    }
    if (b === 0x22 && fieldStart) quoted = true;
    else if (b === 0x2c) count += 1;
    fieldStart = b === 0x2c;
  }
  return count;
}

/**
 * The keys of a JSON object line, counted on its bytes before it is parsed: the colons outside
 * strings and arrays (an object's own keys and its nested objects', the columns a row maps;
 * objects inside arrays are values, not columns).
 */
export function jsonKeyCount(bytes: Uint8Array): number {
  let count = 0;
  let inString = false;
  let arrays = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (inString) {
      if (b === 0x5c) i++; // an escape: the next byte is part of it
      else if (b === 0x22) inString = false;
      continue;
    }
    if (b === 0x22) inString = true;
    else if (b === 0x5b) arrays += 1;
    else if (b === 0x5d) arrays -= 1;
    else if (b === 0x3a && arrays === 0) count += 1;
  }
  return count;
}
