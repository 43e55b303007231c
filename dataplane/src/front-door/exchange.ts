/** One request/response pair on the gateway path: request id, access log, lean JSON responses. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { GatewayRoute } from './gateway.js';
import { writeAccessLog } from './access-log.js';
import { newRequestId } from './request-id.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

export interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  /** The request id: echoed in `x-request-id` and in every log line as `reqId`. */
  id: string;
  /** The raw (still percent-encoded) path, without the query string. */
  path: string;
  /** Query parameters; a repeated name gives an array. */
  query: Record<string, string | string[]>;
  route?: GatewayRoute;
  rawBody?: Buffer;
  body?: unknown;
  /** Set for firewall-blocked requests: their path may be the exploit string itself. */
  redactPath?: boolean;
}

/** The query of a request without one: shared, never written to (handlers only read the query). */
const NO_QUERY: Record<string, string | string[]> = Object.freeze({}) as Record<string, string | string[]>;

export function parseQuery(search: string): Record<string, string | string[]> {
  if (!search) return NO_QUERY;
  const query: Record<string, string | string[]> = {};
  for (const [key, value] of new URLSearchParams(search)) {
    const previous = query[key];
    query[key] = previous === undefined ? value : Array.isArray(previous) ? [...previous, value] : [previous, value];
  }
  return query;
}

/** Told about every finished response (request metrics), beside the access log. */
export type ExchangeObserver = (x: Exchange, status: number, seconds: number) => void;

/** The exchange as the access log sees it: its own state rides on the same object (one allocation per request). */
interface LoggedExchange extends Exchange {
  logger: Logger;
  started: number;
  observe: ExchangeObserver | undefined;
}

/**
 * Every request gets a UUID: the caller's `x-request-id` when it is a UUID (so traces join up),
 * otherwise a new one. The access log line is written when the response finishes.
 */
export function beginExchange(logger: Logger, req: IncomingMessage, res: ServerResponse, observe?: ExchangeObserver): Exchange {
  const incoming = req.headers['x-request-id'];
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  // Every field is present from the start, so the object keeps one shape while the request fills it in.
  const x: LoggedExchange = {
    req,
    res,
    id: typeof incoming === 'string' && UUID.test(incoming) ? incoming.toLowerCase() : newRequestId(),
    path: q < 0 ? url : url.slice(0, q),
    query: q < 0 ? NO_QUERY : parseQuery(url.slice(q + 1)),
    route: undefined,
    rawBody: undefined,
    body: undefined,
    redactPath: undefined,
    logger,
    started: performance.now(),
    observe,
  };
  // The firewall middleware and Express-style code read the id from the request.
  (req as IncomingMessage & { id?: string }).id = x.id;
  res.setHeader('x-request-id', x.id);
  // One shared listener, the exchange on the response: no closure or once-wrapper per request.
  (res as LoggedResponse)[ACCESS_LOG] = x;
  res.on('finish', logAccess);
  return x;
}

const ACCESS_LOG = Symbol('access log');
type LoggedResponse = ServerResponse & { [ACCESS_LOG]?: LoggedExchange };

/** The access-log line, written when the response finishes (`this` is the response). */
function logAccess(this: LoggedResponse): void {
  const x = this[ACCESS_LOG];
  if (!x) return;
  this[ACCESS_LOG] = undefined;
  const ms = performance.now() - x.started;
  const path = x.redactPath ? '[redacted: blocked by the firewall]' : x.path.slice(0, 512);
  writeAccessLog(x.logger, { reqId: x.id, method: x.req.method, path, status: this.statusCode, ms: Math.round(ms * 100) / 100 });
  x.observe?.(x, this.statusCode, ms / 1000);
}

/** JSON without framework detours (etag, charset negotiation): the hot path's response. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('content-type', 'application/json; charset=utf-8');
  // end(text) sets Content-Length itself; a HEAD response sends no body, so it is set here.
  if (res.req?.method === 'HEAD') res.setHeader('content-length', Buffer.byteLength(text));
  res.end(text);
}
