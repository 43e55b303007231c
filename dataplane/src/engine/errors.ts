/** The one error type every layer throws for a client-visible failure. */
export interface ErrorDetail {
  /** JSON path of the offending input, e.g. `$.create.data.age`. */
  path?: string;
  message: string;
  [key: string]: unknown;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: ErrorDetail[] = [],
    /** Seconds a client should wait before retrying (sent as Retry-After; every 503 has one). */
    readonly retryAfter?: number,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  toBody(requestId: string) {
    return { error: { code: this.code, message: this.message, details: this.details }, requestId };
  }
}

export const badRequest = (code: string, message: string, details: ErrorDetail[] = []) => new ApiError(400, code, message, details);
export const notFound = (code: string, message: string) => new ApiError(404, code, message);

/**
 * The store could not be reached (refused, reset, shutting down): the request may be retried.
 * Drivers report it for every operation a store outage breaks; the data plane answers 503 with
 * Retry-After, ASYNC writes retry it, and /readyz reports the store.
 */
export const storeUnavailable = (what: string) =>
  new ApiError(503, 'STORE_UNAVAILABLE', `the dataset's store cannot be reached right now (${what}); retry shortly`, [], 1);

export const isStoreUnavailable = (err: unknown): boolean => err instanceof ApiError && err.code === 'STORE_UNAVAILABLE';
