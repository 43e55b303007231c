/**
 * The driver contract (the engine's port): the only code that speaks to a store implements it.
 * The engine owns it; drivers import it, the engine never imports a driver (model/layering.test.ts).
 * The engine works in nested record data; a driver maps it onto its storage layout, reports what
 * the store answered in the store's terms (store-outcomes.ts: never an HTTP status), and declares
 * what it can do as capabilities instead of the engine testing kind names.
 */
import type { Consistency, DatasetConfig, LocationKind } from '../../../model/types.js';
import type { TypedFilter } from '../../../model/filter.js';
import type { SortKey } from '../../../model/sort.js';
import type { StoreFailure } from './store-outcomes.js';
import type { RawSqlDialect } from './sql/raw-rewrite.js';

export type { StoreFailure } from './store-outcomes.js';
export { StoreError } from './store-outcomes.js';
export type { ErrorDetail } from './errors.js';

/** Synchronous levels a driver writes at (ASYNC is the engine's: it writes those at QUORUM later). */
export type WriteLevel = Exclude<Consistency, 'ASYNC'>;

export interface DriverCapabilities {
  /** Levels a write may ask for; others are a 400 before anything is written. */
  consistency: readonly WriteLevel[];
  /** Most actions one atomic (ATOMIC_ALL, ATOMIC) write may hold (DynamoDB: 100); absent: no limit. */
  maxAtomicActions?: number;
  /** `list` and `link`: filtered, sorted keyset pages. */
  list: boolean;
  /** Which properties a page may be sorted by: any, or only those the schema marks sortable. */
  sortable: 'any' | 'declared';
  /** Pages come back in id order when no sort is given. */
  orderedWithoutSort: boolean;
  /** `rawQuery`: SQL on a read-only connection. */
  rawSql: boolean;
  /** A change feed for subscriptions. */
  changeFeed: boolean;
  /** Bulk loads (transactions). */
  bulkLoad: boolean;
  /**
   * Most UTF-8 bytes of an indexed (sortable) property's text value and the record's id together
   * that the store's index keeps (a PostgreSQL btree row, a DynamoDB index sort key); more is a
   * 400 (or a refused row), checked before the write.
   */
  indexedKeyBytes?: number;
}

export interface StoredRecord {
  id: string;
  version: number;
  /** Nested property values; links as `{id}`; unset (null) values are left out. */
  data: Record<string, unknown>;
  createdAt?: string;
  updatedAt?: string;
  /**
   * Set only by `read` with a version, when that version is the tombstone a delete wrote (no data;
   * `updatedAt` is the deletion time). A delete keeps the earlier versions readable.
   */
  deleted?: boolean;
}

export type WriteOp =
  | { op: 'create'; schema: string; id: string; data: Record<string, unknown> }
  | { op: 'update'; schema: string; id: string; data: Record<string, unknown>; merge: boolean }
  | { op: 'delete'; schema: string; id: string };

export type OpResult = { ok: true; record: StoredRecord; deleted?: boolean } | { ok: false; failure: StoreFailure };

/** Observability context passed down from the `tags` header and the executor choice. */
export interface StatementContext {
  tags?: Record<string, unknown>;
  executor?: string;
  /** The warehouse the chosen executor names (warehouse locations); absent: the dataset's own. */
  warehouse?: string;
  /**
   * Set on the background write of an ASYNC request (already acknowledged 202): a store with
   * asynchronous statement submission (the warehouse) may submit it that way instead of holding a
   * session while it runs. The write still reports its outcome.
   */
  background?: boolean;
}

export interface PrepareReport {
  /** DDL statements applied, in order. */
  applied: string[];
  /** Changes that would destroy or rewrite data: refused, and the dataset keeps its old layout. */
  refused: string[];
}

export interface RawQuery {
  text: string;
  values: unknown[];
}

export interface RawQueryOptions extends StatementContext {
  rowLimit: number;
  timeoutMs: number;
  /** Budget for the result's (approximate) JSON size in bytes; the executor's default when absent. */
  maxBytes?: number;
}

/** A list page's query: typed filter, sort keys (the id last), rows to fetch, keyset position. */
export interface ListQuery {
  filter?: TypedFilter;
  sort: SortKey[];
  limit: number;
  /** The previous page's last row: its value of each sort key, in order (null for a null). */
  after?: readonly unknown[];
}

/** Which record to read: the current version, or a past one. */
export interface RecordKey {
  schema: string;
  id: string;
  version?: number;
  /**
   * The read's consistency (the request's, else the dataset's default): QUORUM and stronger must
   * see the latest commit; EVENTUAL and ASYNC allow a read that may lag it (DynamoDB: without
   * ConsistentRead). A store whose every read is the latest (PostgreSQL's primary) ignores it.
   */
  consistency?: Consistency;
}

export type ChangeOp = 'CREATE' | 'UPDATE' | 'DELETE';

/** One committed record write, as a change feed reports it. */
export interface RecordChange {
  /**
   * Position in the dataset's feed: reading after it gives the changes that follow; opaque to
   * clients. A decimal integer that increases in commit order (PostgreSQL, the warehouse), unless
   * the feed declares its own `cursorOrder` (DynamoDB: a position per shard).
   */
  cursor: string;
  schema: string;
  id: string;
  version: number;
  op: ChangeOp;
  committedAt: string;
  /** The trace context of the write that made the change, where the feed keeps it (PostgreSQL, with tracing on). */
  writeTrace?: { traceparent: string };
  /**
   * The record as written (a delete: only id and version, `deleted`); absent when the store no
   * longer has that version or the schema left the config.
   */
  record?: StoredRecord;
  /** For a delete: the last version before it (what a filter is evaluated on). */
  previous?: StoredRecord;
}

export interface ChangeBatch {
  /** In commit order; changes of one atomic write are consecutive, in action order. */
  changes: RecordChange[];
  /** `after` is older than the retention: changes after it were pruned (CURSOR_EXPIRED). */
  expired: boolean;
  /**
   * Where the read got to, when it is past the last change's cursor (records it passed over,
   * shards it finished: DynamoDB); absent: the last change's cursor (or `after` when none).
   */
  position?: string;
}

/**
 * A dataset's change feed (capabilities.changeFeed): every committed write, in commit order, from
 * any replica; kept for a retention, then pruned.
 */
export interface ChangeFeed {
  /** Up to `limit` changes after the cursor (exclusive). A malformed cursor: StoreError `invalid-query`. */
  readChanges(dataset: DatasetConfig, after: string, limit: number): Promise<ChangeBatch>;
  /** The cursor of the newest change (a new subscription starts after it). */
  head(dataset: DatasetConfig): Promise<string>;
  /**
   * Calls `onWake` whenever changes may have been added (a hint: the reader reads the feed, and
   * polls as well). Resolves with a function that stops it.
   */
  subscribeWakeups(dataset: DatasetConfig, onWake: () => void): Promise<() => Promise<void>>;
  /** Drops changes older than the retention; returns how many. */
  prune(dataset: DatasetConfig, retentionMs: number): Promise<number>;
  /**
   * How this feed's cursors are ordered, when they are not decimal positions increasing in commit
   * order (DynamoDB Streams: a position per shard, ordered per item only). Absent: decimal.
   */
  readonly cursorOrder?: CursorOrder;
  /**
   * How often a reader reads besides the wake-ups (in case one was lost); absent: the dispatcher's
   * interval. A feed whose wake-ups are a timer (DynamoDB, the warehouse) sets it long, so that the
   * store is not read twice as often as its timer says.
   */
  readonly fallbackPollMs?: number;
}

/**
 * A feed's cursor order as the dispatcher uses it: a subscription holds a position `P` and is given
 * each change it does not hold yet, once.
 */
export interface CursorOrder<P = unknown> {
  /** The position a cursor names; undefined when it is not a cursor of this feed. */
  parse(cursor: string): P | undefined;
  /** Whether a reader at `at` has had `change` (it is at or before `at`). */
  has(at: P, change: RecordChange): boolean;
  /** `at` moved past `change`. */
  advance(at: P, change: RecordChange): P;
  /** Whether a reader at `a` has had everything one at `b` has; false when it cannot tell. */
  covers(a: P, b: P): boolean;
}

/**
 * Who owns a storage area (a capability): a small marker kept in the storage itself, naming the
 * dataset whose data it holds. It outlives a dataset deleted with `deletionPolicy: Retain`, so a
 * later dataset on the same storage is refused unless it adopts that data (`spec.adopt`).
 */
export interface StorageOwnership {
  /** The dataset recorded as the owner of `dataset`'s storage; undefined when none is (new or pre-marker storage). */
  ownerOf(dataset: DatasetConfig): Promise<string | undefined>;
  /** Records `dataset` as the owner of its storage (after its storage is prepared). */
  claim(dataset: DatasetConfig): Promise<void>;
}

export interface LocationDriver {
  readonly kind: LocationKind;
  readonly capabilities: DriverCapabilities;
  /** The ownership marker of a storage area; absent: the kind keeps none (no retained-data check). */
  readonly ownership?: StorageOwnership;
  /** The change feed, when capabilities.changeFeed. */
  readonly changes?: ChangeFeed;
  /** Brings storage up to the dataset's schemas: additive changes only. */
  prepare(dataset: DatasetConfig): Promise<PrepareReport>;
  read(dataset: DatasetConfig, key: RecordKey, ctx?: StatementContext): Promise<StoredRecord | undefined>;
  readMany(dataset: DatasetConfig, schema: string, ids: string[], ctx?: StatementContext): Promise<StoredRecord[]>;
  /**
   * Writes the ops at a consistency level. For ATOMIC_ALL and ATOMIC, either every op commits or
   * none does (the failing op carries its failure, the others `aborted`); for the weaker levels
   * each op commits on its own and reports its own outcome. A store that cannot be reached throws
   * a StoreError (`unavailable`) for an atomic write and reports it per op otherwise.
   */
  write(dataset: DatasetConfig, ops: WriteOp[], consistency: WriteLevel, ctx?: StatementContext): Promise<OpResult[]>;
  /**
   * Up to `limit` records matching the filter, in the sort order (model/sort.ts rules, binary
   * order, nulls where the keys say), starting after `after`: keyset pagination, never OFFSET.
   */
  list?(dataset: DatasetConfig, schema: string, query: ListQuery, ctx?: StatementContext): Promise<StoredRecord[]>;
  /** Checks that the dataset's store answers; throws a StoreError (`unavailable`) when it does not. */
  ping?(dataset: DatasetConfig): Promise<void>;
  /** How raw SQL is rewritten for this store (tokens, binds, lexical rules); SQL locations only. */
  readonly rawSqlDialect?: RawSqlDialect;
  /** Read-only query on the dataset's read-only connection; undefined when the location has none. */
  rawQuery?(dataset: DatasetConfig, query: RawQuery, options: RawQueryOptions): Promise<Record<string, unknown>[]>;
  /**
   * Drops the dataset's stored data (records and history), for `deletionPolicy: Delete`. Idempotent;
   * returns what it removed.
   */
  purge?(dataset: DatasetConfig): Promise<string[]>;
  /** Bulk loads (transactions): their state and the chunked writes; present when `capabilities.bulkLoad`. */
  bulkLoad?: BulkLoadStore;
  close(): Promise<void>;
}

/** What a bulk-load action does with each row. */
export type LoadOperation = 'UPSERT' | 'INSERT' | 'DELETE';

/** One action's progress, kept with the transaction and updated with every committed chunk. */
export interface ActionProgress {
  rowsRead: number;
  rowsWritten: number;
  rowsRejected: number;
  bytesRead: number;
  /** The first problems (bounded), each with the row (1-based line or row number) it came from. */
  errors: { row: number; source?: string; message: string; path?: string }[];
}

/** Where an action's load has got to: the file (in listing order) and the rows of it consumed. */
export interface LoadCursor {
  action: number;
  file: number;
  row: number;
}

/** A transaction as the store keeps it; the engine presents it as a `Transaction` record. */
export interface StoredTransaction {
  id: string;
  status: 'PENDING' | 'RUNNING' | 'SUCCEEDED' | 'FAILED';
  spec: {
    actions: { locationUri: string; operation: LoadOperation; format: string; schema: string }[];
    context: Record<string, unknown>;
    /** The executor named at creation (`executor-name`, the function gateway's `executor.id`): the load runs on its warehouse. */
    executor?: string;
  };
  progress: ActionProgress[];
  cursor: LoadCursor;
  error?: string;
  createdAt: string;
  updatedAt: string;
  startedAt?: string;
  finishedAt?: string;
  leaseOwner?: string;
  leaseExpiresAt?: string;
  /** Claims that took it over from a replica whose lease ran out (it stopped mid-load): the crash-loop guard counts these. */
  lostLeases?: number;
}

/** A chunk of validated rows to commit together with the transaction's new progress and cursor. */
export interface LoadChunk {
  transaction: string;
  owner: string;
  leaseMs: number;
  schema: string;
  operation: LoadOperation;
  /** Records in row order; a later one with the same id wins within a chunk. */
  records: { id: string; data: Record<string, unknown>; row: number }[];
  /** The cursor this chunk starts at: if the stored one differs, the chunk was committed already. */
  from: LoadCursor;
  to: LoadCursor;
  /** The action's progress before this chunk's writes (the store adds what it wrote or refused). */
  progress: ActionProgress;
  maxErrors: number;
  /** The transaction's executor (and its warehouse, on the warehouse kinds) the chunk's statements run on. */
  ctx?: StatementContext;
}

export type ChunkOutcome = { kind: 'committed'; progress: ActionProgress } | { kind: 'already-committed' } | { kind: 'lease-lost' };

/**
 * A store's side of bulk loads: transactions live in the dataset's own store, so any replica can
 * claim one whose lease ran out and finish it; a chunk commits with the cursor that says it did.
 */
export interface BulkLoadStore {
  create(dataset: DatasetConfig, tx: Pick<StoredTransaction, 'id' | 'spec'>): Promise<StoredTransaction>;
  get(dataset: DatasetConfig, id: string): Promise<StoredTransaction | undefined>;
  /** Newest or oldest first by creation; `after` is the previous page's last (createdAt, id). */
  list(dataset: DatasetConfig, query: { status?: string; descending: boolean; limit: number; after?: [string, string] }): Promise<StoredTransaction[]>;
  /** Takes the oldest PENDING transaction, or a RUNNING one whose lease expired, for `owner`. */
  claim(dataset: DatasetConfig, owner: string, leaseMs: number): Promise<StoredTransaction | undefined>;
  /** Extends the lease; false when another owner has it now. */
  renew(dataset: DatasetConfig, id: string, owner: string, leaseMs: number): Promise<boolean>;
  loadChunk(dataset: DatasetConfig, chunk: LoadChunk): Promise<ChunkOutcome>;
  /** Moves to the next action or file (progress kept), under the lease. */
  advance(dataset: DatasetConfig, id: string, owner: string, cursor: LoadCursor, progress: ActionProgress[]): Promise<boolean>;
  /** SUCCEEDED or FAILED (with the reason); `undefined` gives the transaction back (PENDING) without finishing it. */
  finish(dataset: DatasetConfig, id: string, owner: string, outcome: { status: 'SUCCEEDED' | 'FAILED'; error?: string; progress: ActionProgress[] } | undefined): Promise<void>;
}
