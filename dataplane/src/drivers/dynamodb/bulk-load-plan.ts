/**
 * The pure part of a bulk-load chunk on DynamoDB (bulk-load.ts): which version each row gets and
 * whether it is written or refused, from what was read of its record before the chunk.
 *
 * BatchWriteItem is not transactional and cannot be conditional, so a chunk re-run after a crash
 * must rewrite exactly what the first run wrote. Every item a chunk writes carries the chunk's
 * mark (`lc`: the transaction id and the cursor the chunk starts at). A row's version is the
 * record's latest version plus one — unless that latest version carries this chunk's mark, in which
 * case the first run wrote it and the re-run writes it again, the same version under the same key.
 */
import type { LoadChunk, LoadCursor, LoadOperation } from '../../engine/contract.js';

/** The attribute holding the mark of the chunk that wrote an item. */
export const MARK = 'lc';

/** A chunk's identity: the same for every run of it, different for every other chunk. */
export const chunkMark = (transaction: string, from: LoadCursor): string => `${transaction}@${cursorText(from)}`;

/** A cursor as stored on the transaction item (a string, so `cursor = :from` is one comparison). */
export const cursorText = (c: LoadCursor): string => `${c.action}:${c.file}:${c.row}`;

export function parseCursor(text: string): LoadCursor {
  const [action, file, row] = text.split(':').map(Number);
  return { action, file, row };
}

/** What was read of a record before the chunk. */
export interface Known {
  /** Its live item, when it has one. */
  live?: { version: number; createdAt: string; mark?: string };
  /** Its latest history item (a tombstone, or an orphan of a crashed run), when it has no live item. */
  latest?: { version: number; createdAt: string; mark?: string; deleted: boolean };
}

export type RowPlan = { write: true; version: number; createdAt?: string } | { write: false; message: string };

/**
 * The plan of one row. `createdAt` absent: the record starts now. A re-run reuses the version its
 * first run gave (the latest version has this chunk's mark); every other row continues the
 * record's versions, tombstones included, as any write does.
 */
export function planRow(operation: LoadOperation, id: string, known: Known, mark: string): RowPlan {
  const { live, latest } = known;
  if (live) {
    const ours = live.mark === mark;
    if (operation === 'INSERT' && !ours) return { write: false, message: `a record with id "${id}" exists` };
    // A live item is never ours for a DELETE (a delete removes it), so a delete continues its versions.
    if (operation === 'DELETE') return { write: true, version: live.version + 1, createdAt: live.createdAt };
    return { write: true, version: ours ? live.version : live.version + 1, createdAt: live.createdAt };
  }
  const ours = latest?.mark === mark;
  if (operation === 'DELETE') {
    // No live record: refused, unless this chunk's first run deleted it (its tombstone is the latest).
    if (ours && latest!.deleted) return { write: true, version: latest!.version, createdAt: latest!.createdAt };
    return { write: false, message: `no record with id "${id}"` };
  }
  if (!latest) return { write: true, version: 1 };
  // This chunk's first run wrote the history item but crashed before the live one: the same version again.
  if (ours && !latest.deleted) return { write: true, version: latest.version, createdAt: latest.createdAt };
  return { write: true, version: latest.version + 1 };
}

/** One row per id: the last wins for UPSERT and DELETE; INSERT keeps the first and refuses the rest. */
export function dedupe(records: LoadChunk['records'], operation: LoadOperation): { records: LoadChunk['records']; duplicates: LoadChunk['records'] } {
  const byId = new Map<string, LoadChunk['records'][number]>();
  const duplicates: LoadChunk['records'] = [];
  for (const r of records) {
    if (byId.has(r.id) && operation === 'INSERT') duplicates.push(r);
    else {
      byId.delete(r.id); // re-inserted at the end: row order kept
      byId.set(r.id, r);
    }
  }
  return { records: [...byId.values()], duplicates };
}
