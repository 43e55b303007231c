/**
 * Answers for requests node's HTTP parser refuses before any handler runs (control characters in
 * a header, Content-Length together with Transfer-Encoding, headers over the size limit, a request
 * that does not arrive in time). Node's own answer is a bare `400 Bad Request` without a body or a
 * request id; this one is a complete JSON response with `x-request-id`, in the server's own error
 * shape (`render`), and one warn line that names the parser's code — never the raw bytes.
 */
import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';

export type ClientErrorCode = 'BAD_REQUEST' | 'HEADERS_TOO_LARGE' | 'REQUEST_TIMEOUT' | 'MISSING_HOST';

export interface ClientErrorAnswer {
  status: number;
  code: ClientErrorCode;
  message: string;
  requestId: string;
}

/** Builds the JSON body of the answer; each server has its own error shape. */
export type ClientErrorRenderer = (answer: ClientErrorAnswer) => unknown;

/** The data plane's REST error shape. */
export const renderRestError: ClientErrorRenderer = ({ code, message, requestId }) => ({ error: { code, message, details: [] }, requestId });

/** The parser's error as a status, a code and a message made of fixed strings only. */
export function classifyClientError(err: NodeJS.ErrnoException & { reason?: unknown }): Omit<ClientErrorAnswer, 'requestId'> {
  const parserCode = typeof err.code === 'string' ? err.code : 'UNKNOWN';
  if (parserCode === 'HPE_HEADER_OVERFLOW') {
    return { status: 431, code: 'HEADERS_TOO_LARGE', message: 'the request line and headers are larger than the server accepts' };
  }
  if (parserCode === 'ERR_HTTP_REQUEST_TIMEOUT' || parserCode === 'HPE_TIMEOUT' || parserCode === 'ETIMEDOUT') {
    return { status: 408, code: 'REQUEST_TIMEOUT', message: 'the request did not arrive in time' };
  }
  // llhttp's reason is one of its fixed messages ("Invalid header value char"), never input bytes.
  const reason = typeof err.reason === 'string' && /^[\w ,.'-]{1,100}$/.test(err.reason) ? `: ${err.reason}` : '';
  return { status: 400, code: 'BAD_REQUEST', message: `the request is not valid HTTP/1.1 (${parserCode}${reason})` };
}

/** The complete HTTP/1.1 response, written by hand: there is no ServerResponse for such requests. */
export function clientErrorResponse(answer: ClientErrorAnswer, render: ClientErrorRenderer): string {
  const body = JSON.stringify(render(answer));
  return [
    `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? 'Error'}`,
    'content-type: application/json; charset=utf-8',
    `content-length: ${Buffer.byteLength(body)}`,
    `x-request-id: ${answer.requestId}`,
    'connection: close',
    '',
    body,
  ].join('\r\n');
}

export function installClientErrorHandler(server: Server, logger: Logger, render: ClientErrorRenderer): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    // A peer that went away needs no answer and is not worth a warning.
    if (err.code === 'ECONNRESET' || err.code === 'EPIPE') {
      socket.destroy();
      return;
    }
    const answer: ClientErrorAnswer = { ...classifyClientError(err), requestId: randomUUID() };
    logger.warn({ reqId: answer.requestId, code: err.code, status: answer.status }, 'malformed HTTP request refused');
    // As node's default handler does: answer only if no response has started on this socket
    // (a keep-alive connection may be mid-response when its next request fails to parse).
    const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (socket.writable && !inFlight?.headersSent) {
      socket.end(clientErrorResponse(answer, render));
      // end() flushes the answer; destroy once it is out (or at once if the peer is gone).
      socket.once('finish', () => socket.destroy());
      setTimeout(() => socket.destroy(), 1000).unref();
    } else {
      socket.destroy();
    }
  });
}

/** The server option that hands requests without Host to `requireHost` instead of node's empty 400. */
export const HOST_CHECKED_BY_HANDLER = { requireHostHeader: false } as const;

/**
 * HTTP/1.1 requires a Host header (RFC 9112 §3.2). Node refuses a request without one with an
 * empty 400 unless the server is created with HOST_CHECKED_BY_HANDLER; this wrapper then answers
 * it in the server's error shape with x-request-id, and passes every other request on.
 */
export function requireHost(logger: Logger, render: ClientErrorRenderer, handler: RequestListener): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    if (req.headers.host !== undefined || req.httpVersionMajor !== 1 || req.httpVersionMinor !== 1) return handler(req, res);
    const answer: ClientErrorAnswer = { status: 400, code: 'MISSING_HOST', message: 'an HTTP/1.1 request needs a Host header', requestId: randomUUID() };
    logger.warn({ reqId: answer.requestId, status: 400 }, 'request without Host refused');
    const body = JSON.stringify(render(answer));
    res.shouldKeepAlive = false;
    res.writeHead(400, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), 'x-request-id': answer.requestId, connection: 'close' });
    res.end(body);
  };
}
