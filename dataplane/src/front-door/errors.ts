/** Error responses: `{error: {code, message, details}, requestId}`; never a stack trace. */
import type { Logger } from 'pino';
import { AuthError } from '../auth/errors.js';
import { ApiError, MethodNotAllowed } from '../engine/errors.js';
import { apiErrorOf, StoreError } from '../engine/store-outcomes.js';
import { sendJson, type Exchange } from './exchange.js';

/** Maps body-parser failures and ApiErrors to 4xx; anything else is logged and answered 500. */
export function toApiError(err: unknown): ApiError | undefined {
  if (err instanceof ApiError) return err;
  // What a store answered (a thrown StoreError), as the engine maps it.
  if (err instanceof StoreError) return apiErrorOf(err.failure);
  if (err instanceof AuthError) return new ApiError(err.status, err.code, err.message);
  const e = err as { type?: string; status?: number; limit?: number; charset?: string; message?: string };
  switch (e?.type) {
    case 'entity.parse.failed':
      return new ApiError(400, 'MALFORMED_JSON', `the body is not valid JSON: ${e.message?.replace(/^Unexpected/, 'unexpected') ?? ''}`.trim(), [{ path: '$', message: 'malformed JSON' }]);
    case 'entity.too.large':
      return new ApiError(413, 'BODY_TOO_LARGE', `the body is larger than ${e.limit} bytes`);
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new ApiError(415, 'UNSUPPORTED_ENCODING', `unsupported body encoding or charset${e.charset ? ` "${e.charset}"` : ''}`);
    case 'request.aborted':
      return new ApiError(400, 'REQUEST_ABORTED', 'the request body was not completely received');
    case 'request.size.invalid':
      return new ApiError(400, 'INVALID_CONTENT_LENGTH', 'the body does not match its Content-Length');
  }
  if (e?.status && e.status >= 400 && e.status < 500) return new ApiError(e.status, 'BAD_REQUEST', 'the request could not be read');
  return undefined;
}

/**
 * How loud a 5xx answer is logged: a paused dataset is a state an operator chose (info); a 503 the
 * client is told to retry (a store outage, a full queue) is expected and recovers (warn); any
 * other 5xx is an error.
 */
export function serverErrorLevel(e: ApiError): 'info' | 'warn' | 'error' {
  if (e.code === 'DATASET_PAUSED') return 'info';
  return e.status === 503 ? 'warn' : 'error';
}

/** Answers an error: 4xx for what the caller can fix, 500 (logged with its stack, never sent) otherwise. */
export function respondWithError(x: Exchange, err: unknown, logger: Logger): void {
  const apiError = toApiError(err);
  if (x.res.headersSent) {
    logger.error({ reqId: x.id, err: (err as Error)?.message }, 'error after the response started');
    if (!x.res.writableEnded) x.res.destroy();
    return;
  }
  if (err instanceof AuthError && err.challenge) x.res.setHeader('www-authenticate', err.challenge);
  if (err instanceof MethodNotAllowed) x.res.setHeader('allow', err.allow);
  if (apiError) {
    if (apiError.status === 503 || apiError.status === 429) x.res.setHeader('retry-after', String(apiError.retryAfter ?? 1));
    // The rest of an unread body is not worth draining: close the connection after this answer.
    if (!x.req.complete && x.req.method !== 'GET' && x.req.method !== 'HEAD') x.res.setHeader('connection', 'close');
    if (apiError.status >= 500) logger[serverErrorLevel(apiError)]({ reqId: x.id, code: apiError.code }, apiError.message);
    return sendJson(x.res, apiError.status, apiError.toBody(x.id));
  }
  logger.error({ reqId: x.id, err: err instanceof Error ? { message: err.message, stack: err.stack } : String(err) }, 'unhandled error');
  sendJson(x.res, 500, new ApiError(500, 'INTERNAL', `internal error; quote request id ${x.id} when reporting it`).toBody(x.id));
}
