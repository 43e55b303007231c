/**
 * The location-driver interface: the only code that speaks to a store implements it. The record
 * engine works in nested record data; a driver maps it onto its storage layout.
 */
import type { Consistency, DatasetConfig, LocationKind } from '../../../model/types.js';
import type { ApiError } from '../engine/errors.js';
import type { TypedFilter } from '../../../model/filter.js';
import type { SortKey } from '../../../model/sort.js';

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

export type OpResult = { ok: true; record: StoredRecord; deleted?: boolean } | { ok: false; error: ApiError };

/** Observability context passed down from the `tags` header and the executor choice. */
export interface StatementContext {
  tags?: Record<string, unknown>;
  executor?: string;
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

export interface LocationDriver {
  readonly kind: LocationKind;
  /** Brings storage up to the dataset's schemas: additive changes only. */
  prepare(dataset: DatasetConfig): Promise<PrepareReport>;
  read(dataset: DatasetConfig, schema: string, id: string, version?: number, ctx?: StatementContext): Promise<StoredRecord | undefined>;
  readMany(dataset: DatasetConfig, schema: string, ids: string[], ctx?: StatementContext): Promise<StoredRecord[]>;
  /**
   * Writes the ops at a consistency level. For ATOMIC_ALL and ATOMIC, either every op commits or
   * none does (the failing op carries its error, the others a TRANSACTION_ABORTED error); for the
   * weaker levels each op commits on its own and reports its own outcome.
   */
  write(dataset: DatasetConfig, ops: WriteOp[], consistency: Exclude<Consistency, 'ASYNC'>, ctx?: StatementContext): Promise<OpResult[]>;
  /**
   * Up to `limit` records matching the filter, in the sort order (model/sort.ts rules, binary
   * order, nulls where the keys say), starting after `after`: keyset pagination, never OFFSET.
   */
  list?(dataset: DatasetConfig, schema: string, query: ListQuery, ctx?: StatementContext): Promise<StoredRecord[]>;
  /** Checks that the dataset's store answers; throws STORE_UNAVAILABLE when it does not. */
  ping?(dataset: DatasetConfig): Promise<void>;
  /** Read-only query on the dataset's read-only connection; undefined when the location has none. */
  rawQuery?(dataset: DatasetConfig, query: RawQuery, options: RawQueryOptions): Promise<Record<string, unknown>[]>;
  /**
   * Drops the dataset's stored data (records and history), for `deletionPolicy: Delete`. Idempotent;
   * returns what it removed.
   */
  purge?(dataset: DatasetConfig): Promise<string[]>;
  close(): Promise<void>;
}
