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

/** 405: the path exists with other methods, which the Allow header lists. */
export class MethodNotAllowed extends ApiError {
  constructor(
    method: string,
    /** Comma-separated, as the Allow header lists them. */
    readonly allow: string,
  ) {
    super(405, 'METHOD_NOT_ALLOWED', `${method.slice(0, 20)} is not allowed here; use ${allow}`);
  }
}

export const badRequest = (code: string, message: string, details: ErrorDetail[] = []) => new ApiError(400, code, message, details);
export const notFound = (code: string, message: string) => new ApiError(404, code, message);
