/**
 * Rows out of a file, a bounded chunk at a time: Parquet one row group at a time (range reads of
 * that row group's bytes only), NDJSON and CSV by lines from a stream. A load resumes at a row
 * position, so each chunk says where it ends.
 */
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { parquetMetadataAsync, parquetReadObjects, type AsyncBuffer } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import type { SourceFile } from './sources.js';

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
  /** Bytes read from the source for this chunk. */
  bytes: number;
}

export class FormatError extends Error {}

export function readChunks(file: SourceFile, format: Format, start: number, chunkRows: number): AsyncGenerator<RawChunk> {
  if (format === 'PARQUET') return parquetChunks(file, start, chunkRows);
  return lineChunks(file, format, start, chunkRows);
}

async function* parquetChunks(file: SourceFile, start: number, chunkRows: number): AsyncGenerator<RawChunk> {
  let bytes = 0;
  const buffer: AsyncBuffer = {
    byteLength: file.size,
    slice: (from: number, to?: number) => {
      const end = to ?? file.size;
      bytes += end - from;
      return file.slice(from, end);
    },
  };
  let metadata;
  try {
    metadata = await parquetMetadataAsync(buffer);
  } catch (err) {
    throw new FormatError(`${file.name} is not a Parquet file (${(err as Error).message})`);
  }
  let groupStart = 0;
  for (const group of metadata.row_groups) {
    const groupEnd = groupStart + Number(group.num_rows);
    if (groupEnd > start) {
      const from = Math.max(start, groupStart);
      // One row group in memory at a time: hyparquet reads only its column chunks' byte ranges.
      const rows = (await parquetReadObjects({ file: buffer, metadata, rowStart: from, rowEnd: groupEnd, compressors })) as Record<string, unknown>[];
      for (let i = 0; i < rows.length; i += chunkRows) {
        const part = rows.slice(i, i + chunkRows);
        const chunk: RawChunk = { rows: part.map((value, j) => ({ row: from + i + j + 1, value })), end: from + i + part.length, bytes };
        bytes = 0;
        yield chunk;
      }
    }
    groupStart = groupEnd;
  }
}

async function* lineChunks(file: SourceFile, format: 'NDJSON' | 'CSV', start: number, chunkRows: number): AsyncGenerator<RawChunk> {
  const stream = await file.stream();
  let bytes = 0;
  stream.on('data', (c: Buffer) => (bytes += c.length));
  const records = format === 'NDJSON' ? ndjsonRecords(stream) : csvRecords(stream);
  let rows: RawRow[] = [];
  let position = 0;
  try {
    for await (const record of records) {
      position += 1;
      if (position <= start) continue; // resuming: these rows were committed
      if (record) rows.push({ row: position, ...record });
      if (rows.length >= chunkRows) {
        yield { rows, end: position, bytes };
        rows = [];
        bytes = 0;
      }
    }
    if (rows.length || position > start) yield { rows, end: Math.max(position, start), bytes };
  } finally {
    stream.destroy();
  }
}

/** One entry per line (a blank line is `undefined`: counted, not loaded). */
async function* ndjsonRecords(stream: Readable): AsyncGenerator<Omit<RawRow, 'row'> | undefined> {
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.trim()) {
      yield undefined;
      continue;
    }
    try {
      const value = JSON.parse(line);
      yield value && typeof value === 'object' && !Array.isArray(value) ? { value } : { problem: 'the line is not a JSON object' };
    } catch (err) {
      yield { problem: `not JSON: ${(err as Error).message}` };
    }
  }
}

/** RFC 4180 CSV with a header row: one entry per record (quoted fields may hold commas, quotes and newlines). */
async function* csvRecords(stream: Readable): AsyncGenerator<Omit<RawRow, 'row'> | undefined> {
  stream.setEncoding('utf8');
  let header: string[] | undefined;
  let field = '';
  let fields: string[] = [];
  let quoted = false;
  let afterQuote = false;
  let pending = false;
  const finish = (): Omit<RawRow, 'row'> | undefined | null => {
    fields.push(field);
    const done = fields;
    fields = [];
    field = '';
    pending = false;
    if (!header) {
      header = done.map((h) => h.trim());
      return null; // the header is no row
    }
    if (done.length === 1 && done[0] === '') return undefined;
    if (done.length !== header.length) return { problem: `has ${done.length} fields, the header ${header.length}` };
    // Empty fields are absent values: CSV cannot tell an empty string from a null.
    return { value: Object.fromEntries(header.map((h, i) => [h, done[i] === '' ? null : done[i]])) };
  };
  let carry = '';
  for await (const piece of stream as AsyncIterable<string>) {
    const text = carry + piece;
    carry = '';
    for (let i = 0; i < text.length; i++) {
      const ch = text[i];
      pending = true;
      if (quoted) {
        if (ch === '"' && i === text.length - 1) {
          carry = '"'; // a doubled quote may continue in the next piece
          break;
        }
        if (ch === '"') {
          if (text[i + 1] === '"') {
            field += '"';
            i++;
          } else {
            quoted = false;
            afterQuote = true;
          }
        } else field += ch;
        continue;
      }
      if (ch === '"' && field === '' && !afterQuote) quoted = true;
      else if (ch === ',') {
        fields.push(field);
        field = '';
        afterQuote = false;
      } else if (ch === '\n') {
        if (field.endsWith('\r')) field = field.slice(0, -1);
        afterQuote = false;
        const record = finish();
        if (record !== null) yield record;
      } else field += ch;
    }
  }
  if (carry) quoted = false; // the file ended on the closing quote
  if (pending && (field !== '' || fields.length)) {
    const record = finish();
    if (record !== null) yield record;
  }
}
