/** Error responses: `{error: {code, message, details}, requestId}`; never a stack trace. */
import type { NextFunction, Request, Response } from 'express';
import { AuthError } from '../auth/errors.js';
import { ApiError } from '../engine/errors.js';

/** Maps body-parser failures and ApiErrors to 4xx; anything else is logged and answered 500. */
export function toApiError(err: unknown): ApiError | undefined {
  if (err instanceof ApiError) return err;
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

export function sendError(req: Request, res: Response, error: ApiError): void {
  if (res.headersSent) return;
  res.status(error.status).json(error.toBody(req.id));
}

export function errorHandler() {
  return (err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const apiError = toApiError(err);
    if (err instanceof AuthError && err.challenge) res.setHeader('www-authenticate', err.challenge);
    if (apiError) {
      if (apiError.status >= 500) req.log.error({ code: apiError.code }, apiError.message);
      return sendError(req, res, apiError);
    }
    req.log.error({ err: err instanceof Error ? { message: err.message, stack: err.stack } : String(err) }, 'unhandled error');
    sendError(req, res, new ApiError(500, 'INTERNAL', `internal error; quote request id ${req.id} when reporting it`));
  };
}
