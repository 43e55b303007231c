/**
 * A bulk-load chunk as the CSV both SQL locations stage it from (PostgreSQL's COPY, the
 * warehouse's COPY INTO): per record its row number, its id, then the given fields in order. Null
 * is an empty unquoted field and every other value is quoted with its quotes doubled, so both
 * read an empty string as '' and a missing value as NULL; objects are JSON text.
 */
import type { LoadChunk } from '../../engine/contract.js';
import { valueAt, type Field } from '../../engine/layout.js';

/** The lines in pieces of about `pieceBytes` characters, built as they are taken. */
export function* stageCsv(records: LoadChunk['records'], fields: readonly Field[], pieceBytes = 64 * 1024): Generator<string> {
  let piece = '';
  for (const r of records) {
    piece += String(r.row) + ',' + csvField(r.id);
    for (const f of fields) piece += ',' + csvField(valueAt(r.data, f));
    piece += '\n';
    if (piece.length > pieceBytes) {
      yield piece;
      piece = '';
    }
  }
  if (piece) yield piece;
}

function csvField(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);
  return `"${text.replace(/"/g, '""')}"`;
}
