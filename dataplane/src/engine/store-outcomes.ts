/**
 * What a store can answer besides data, in the store's terms: the driver contract's failures. A
 * driver reports these (returned per write action, or thrown as a StoreError); the engine alone
 * turns them into API errors (`apiErrorOf`), so no driver decides an HTTP status.
 */
import { ApiError, badRequest, type ErrorDetail } from './errors.js';

export type StoreFailure =
  /** A create found the id taken. */
  | { kind: 'exists'; schema: string; id: string }
  /** An update or delete found no record. */
  | { kind: 'not-found'; schema: string; id: string }
  /** Not written: another action of the same atomic request failed. */
  | { kind: 'aborted' }
  /** A value the store cannot hold as given (out of range, malformed, text it cannot store). */
  | { kind: 'invalid-value'; reason: 'range' | 'datetime' | 'form' | 'text'; schema: string; detail?: string }
  /** A filter or page position the store cannot compare (a literal out of the column's range). */
  | { kind: 'invalid-query'; detail: string }
  /** The dataset's storage is missing (its config was refused, or it is still being prepared). */
  | { kind: 'not-prepared'; schema: string }
  /** The store cannot be reached right now: retry. */
  | { kind: 'unavailable'; detail: string }
  /** A record (one of its stored versions) is over the store's item size limit (DynamoDB: 400 KB). */
  | { kind: 'too-large'; schema: string; id: string; detail: string }
  /** A sort that no index serves, over more matching records than the store sorts in memory. */
  | { kind: 'sort-too-large'; schema: string; bound: number; detail: string }
  /**
   * A read-only query the store refused (raw SQL): what kind of problem, a stable code, the store's
   * own message and details (JSON path, position, SQLSTATE).
   */
  | { kind: 'query-refused'; problem: 'invalid' | 'forbidden' | 'conflict' | 'busy'; code: string; message: string; details: ErrorDetail[] };

/** A failure a driver throws (reads, atomic writes, raw queries, preparation). */
export class StoreError extends Error {
  constructor(readonly failure: StoreFailure) {
    super(describe(failure));
    this.name = 'StoreError';
  }
}

export const isUnavailable = (err: unknown): boolean =>
  (err instanceof StoreError && err.failure.kind === 'unavailable') || (err instanceof ApiError && err.code === 'STORE_UNAVAILABLE');

function describe(failure: StoreFailure): string {
  switch (failure.kind) {
    case 'exists':
      return `a ${failure.schema} record with id "${failure.id}" already exists`;
    case 'not-found':
      return `no ${failure.schema} record with id "${failure.id}"`;
    case 'aborted':
      return 'not written: another action of this atomic request failed';
    case 'invalid-value': {
      const what = { range: 'is out of range for its type', datetime: 'is not a valid date or timestamp', form: 'has the wrong form', text: 'is text the store cannot hold (valid UTF-8 without NUL)' }[failure.reason];
      return `a value of the ${failure.schema} record ${what}${failure.detail ? ` (${failure.detail})` : ''}`;
    }
    case 'invalid-query':
      return failure.detail;
    case 'not-prepared':
      return `storage for ${failure.schema} is not prepared; the dataset config may have been refused`;
    case 'unavailable':
      return `the dataset's store cannot be reached right now (${failure.detail}); retry shortly`;
    case 'too-large':
      return `the ${failure.schema} record with id "${failure.id}" is too large for the store: ${failure.detail}`;
    case 'sort-too-large':
      return `this sort of ${failure.schema} is served by no index and matches more than ${failure.bound} records, more than the store sorts at once: ${failure.detail}`;
    case 'query-refused':
      return failure.message;
  }
}

const INVALID_VALUE_CODES = { range: 'VALUE_OUT_OF_RANGE', datetime: 'INVALID_DATETIME', form: 'INVALID_VALUE', text: 'INVALID_TEXT' } as const;
const QUERY_STATUS = { invalid: 400, forbidden: 403, conflict: 409, busy: 503 } as const;

/** The API error for a store failure: the one place statuses are chosen for what stores say. */
export function apiErrorOf(failure: StoreFailure): ApiError {
  const message = describe(failure);
  switch (failure.kind) {
    case 'exists':
      return new ApiError(409, 'RECORD_EXISTS', message);
    case 'not-found':
      return new ApiError(404, 'RECORD_NOT_FOUND', message);
    case 'aborted':
      return new ApiError(409, 'TRANSACTION_ABORTED', message);
    case 'invalid-value':
      return badRequest(INVALID_VALUE_CODES[failure.reason], message);
    case 'invalid-query':
      return badRequest('INVALID_FILTER', message);
    case 'not-prepared':
      return new ApiError(503, 'STORAGE_NOT_READY', message, [], 5);
    case 'unavailable':
      return new ApiError(503, 'STORE_UNAVAILABLE', message, [], 1);
    case 'too-large':
      return badRequest('RECORD_TOO_LARGE', message);
    case 'sort-too-large':
      return badRequest('SORT_TOO_LARGE', message);
    case 'query-refused':
      return new ApiError(QUERY_STATUS[failure.problem], failure.code, message, failure.details, failure.problem === 'busy' ? 1 : undefined);
  }
}

/** Any error from a driver call as the API sees it: store failures mapped, the rest unchanged. */
export function fromStore(err: unknown): unknown {
  return err instanceof StoreError ? apiErrorOf(err.failure) : err;
}
