/**
 * The DynamoDB change feed's cursor (docs/dynamodb.md, "Change feed"): a position per stream shard,
 * since Streams order records per shard (per item), not across shards or tables.
 *
 *   since   when the reader started (ms): a shard without an entry is read from its start,
 *           passing over records older than this (at the stream's time granularity)
 *   time    the newest commit the cursor covers, or `since`: its age decides CURSOR_EXPIRED
 *   shards  `<schema> <shardId>` → the last sequence number had, or DONE (a closed shard read to
 *           its end: its children follow it)
 *
 * Encoded as base64url JSON, opaque to clients. Pure: no I/O.
 */
import type { CursorOrder, RecordChange } from '../../engine/contract.js';

/** A closed shard read to its end. */
export const DONE = 'x';

export interface StreamPosition {
  since: number;
  time: number;
  shards: Record<string, string>;
}

/** The key of a shard in a position: its schema's stream and its id. */
export const shardKey = (schema: string, shardId: string) => `${schema} ${shardId}`;

/** Where a change is in its stream: set by the feed on every change it reads. */
const origins = new WeakMap<RecordChange, { key: string; seq: string }>();
export function markOrigin(change: RecordChange, key: string, seq: string): void {
  origins.set(change, { key, seq });
}

/** Sequence numbers are decimal strings, kept as Streams gave them (DynamoDB Local pads them with zeros). */
const trimSeq = (seq: string) => seq.replace(/^0+(?=\d)/, '');

/** Numeric order of two sequence numbers. */
export function compareSeq(x: string, y: string): number {
  const [a, b] = [trimSeq(x), trimSeq(y)];
  return a.length !== b.length ? a.length - b.length : a < b ? -1 : a > b ? 1 : 0;
}

export function encodePosition(p: StreamPosition): string {
  return Buffer.from(JSON.stringify([1, p.since, p.time, Object.entries(p.shards)])).toString('base64url');
}

const MAX_CURSOR = 64 * 1024;

export function decodePosition(cursor: string): StreamPosition | undefined {
  if (cursor.length > MAX_CURSOR || !/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed) || parsed.length !== 4 || parsed[0] !== 1) return undefined;
  const [, since, time, shards] = parsed as unknown[];
  if (!Number.isSafeInteger(since) || !Number.isSafeInteger(time) || !Array.isArray(shards)) return undefined;
  const out: Record<string, string> = {};
  for (const entry of shards) {
    if (!Array.isArray(entry) || entry.length !== 2) return undefined;
    const [key, value] = entry as unknown[];
    if (typeof key !== 'string' || typeof value !== 'string' || !/^\S+ \S+$/.test(key)) return undefined;
    if (value !== DONE && !/^\d{1,40}$/.test(value)) return undefined;
    out[key] = value;
  }
  return { since: since as number, time: time as number, shards: out };
}

/** Whether a reader at `p` has had the record `seq` of shard `key`. */
function had(p: StreamPosition, key: string, seq: string): boolean {
  const at = p.shards[key];
  return at === DONE || (at !== undefined && compareSeq(seq, at) <= 0);
}

export const streamCursorOrder: CursorOrder<StreamPosition> = {
  parse: decodePosition,
  has(at, change) {
    const origin = origins.get(change);
    return origin ? had(at, origin.key, origin.seq) : false;
  },
  advance(at, change) {
    const origin = origins.get(change);
    if (!origin || had(at, origin.key, origin.seq)) return at;
    return { since: at.since, time: Math.max(at.time, Date.parse(change.committedAt) || 0), shards: { ...at.shards, [origin.key]: origin.seq } };
  },
  covers(a, b) {
    if (a.since < b.since) return false;
    for (const [key, value] of Object.entries(b.shards)) {
      if (value === DONE ? a.shards[key] !== DONE : !had(a, key, value)) return false;
    }
    // A shard only `a` has a position in: `a` read it from a later `since` than `b` would.
    return true;
  },
};
