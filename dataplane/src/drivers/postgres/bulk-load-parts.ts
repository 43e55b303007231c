/**
 * How a PostgreSQL bulk-load chunk is written on several connections at once (bulk-load.ts): its
 * records are split into parts by a hash of their id, so one id always falls in the same part and
 * its versions stay in order, and each part is its own database transaction with its own cursor.
 * Pure functions only: the split, the cursor order, and what a part's writes add to the progress.
 *
 * A part's cursor says up to where that part has written; a part re-run after a crash writes only
 * its records at or after it, whatever the chunk's bounds are this time (another replica may use
 * another chunk size). What a part wrote is kept with its cursor (`pending`) until the chunk's own
 * commit adds it to the transaction's progress, so the counts are exact across crashes too.
 */
import type { ActionProgress, LoadChunk, LoadCursor } from '../../engine/contract.js';

/** What a part wrote and refused since the transaction's progress last took it in. */
export interface PartPending {
  /** The action the counts belong to (a chunk is in one action). */
  action: number;
  written: number;
  /** Refused by the store (INSERT: the id exists; DELETE: no such record), samples included. */
  rejected: number;
  /** The first refused rows, at most maxErrors, in row order. */
  samples: { row: number; id: string }[];
}

export const nothingPending = (action: number): PartPending => ({ action, written: 0, rejected: 0, samples: [] });

/**
 * The part of an id among `parts`: FNV-1a (32 bits) of its UTF-16 code units. Fixed for good: a
 * transaction keeps its number of parts, and a part re-run must find the ids it wrote.
 */
export function partOf(id: string, parts: number): number {
  if (parts <= 1) return 0;
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    hash ^= id.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % parts;
}

/** The records of each part, each in row order. */
export function splitIntoParts<R extends { id: string }>(records: readonly R[], parts: number): R[][] {
  const out: R[][] = Array.from({ length: parts }, () => []);
  for (const r of records) out[partOf(r.id, parts)].push(r);
  return out;
}

/** Negative, zero or positive as a is before, at or after b. */
export function compareCursors(a: LoadCursor, b: LoadCursor): number {
  return a.action - b.action || a.file - b.file || a.row - b.row;
}

export const laterCursor = (a: LoadCursor, b: LoadCursor): LoadCursor => (compareCursors(a, b) >= 0 ? a : b);

/**
 * The records a part still has to write: those after its cursor. Rows are numbered from 1 and a
 * cursor (action, file, row) says every row of that file up to and including `row` is written; the
 * part's cursor is where its last write ended.
 */
export function unwritten<R extends { row: number }>(records: readonly R[], chunk: Pick<LoadChunk, 'from'>, partCursor: LoadCursor): R[] {
  return records.filter((r) => compareCursors({ action: chunk.from.action, file: chunk.from.file, row: r.row }, partCursor) > 0);
}

/** A part's pending counts with one more write of it added (samples kept to the first maxErrors by row). */
export function addToPending(pending: PartPending, wrote: Omit<PartPending, 'action'>, maxErrors: number): PartPending {
  return {
    action: pending.action,
    written: pending.written + wrote.written,
    rejected: pending.rejected + wrote.rejected,
    samples: [...pending.samples, ...wrote.samples].sort((a, b) => a.row - b.row).slice(0, maxErrors),
  };
}

/**
 * The action's progress with every part's pending counts added: rows written, rows refused, and
 * the refused rows as errors in row order (only while fewer than maxErrors are kept).
 */
export function foldPending(progress: ActionProgress, pending: readonly PartPending[], refusal: (id: string) => string, maxErrors: number): ActionProgress {
  const out = structuredClone(progress);
  const samples = pending.flatMap((p) => p.samples).sort((a, b) => a.row - b.row);
  for (const p of pending) {
    out.rowsWritten += p.written;
    out.rowsRejected += p.rejected;
  }
  for (const s of samples) if (out.errors.length < maxErrors) out.errors.push({ row: s.row, message: refusal(s.id) });
  return out;
}
