/** One request/response pair on the gateway path: request id, access log, lean JSON responses. */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { GatewayRoute } from './gateway.js';
import { writeAccessLog } from './access-log.js';

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

export function parseQuery(search: string): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = {};
  if (!search) return query;
  for (const [key, value] of new URLSearchParams(search)) {
    const previous = query[key];
    query[key] = previous === undefined ? value : Array.isArray(previous) ? [...previous, value] : [previous, value];
  }
  return query;
}

/**
 * Every request gets a UUID: the caller's `x-request-id` when it is a UUID (so traces join up),
 * otherwise a new one. The access log line is written when the response finishes.
 */
/** Told about every finished response (request metrics), beside the access log. */
export type ExchangeObserver = (x: Exchange, status: number, seconds: number) => void;

export function beginExchange(logger: Logger, req: IncomingMessage, res: ServerResponse, observe?: ExchangeObserver): Exchange {
  const incoming = req.headers['x-request-id'];
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const x: Exchange = {
    req,
    res,
    id: typeof incoming === 'string' && UUID.test(incoming) ? incoming.toLowerCase() : randomUUID(),
    path: q < 0 ? url : url.slice(0, q),
    query: q < 0 ? {} : parseQuery(url.slice(q + 1)),
  };
  // The firewall middleware and Express-style code read the id from the request.
  (req as IncomingMessage & { id?: string }).id = x.id;
  res.setHeader('x-request-id', x.id);
  // One shared listener, its state on the response: no closure or once-wrapper per request.
  (res as LoggedResponse)[ACCESS_LOG] = { exchange: x, logger, started: performance.now(), observe };
  res.on('finish', logAccess);
  return x;
}

const ACCESS_LOG = Symbol('access log');
type LoggedResponse = ServerResponse & { [ACCESS_LOG]?: { exchange: Exchange; logger: Logger; started: number; observe?: ExchangeObserver } };

/** The access-log line, written when the response finishes (`this` is the response). */
function logAccess(this: LoggedResponse): void {
  const entry = this[ACCESS_LOG];
  if (!entry) return;
  this[ACCESS_LOG] = undefined;
  const { exchange: x, logger, started, observe } = entry;
  const ms = performance.now() - started;
  const path = x.redactPath ? '[redacted: blocked by the firewall]' : x.path.slice(0, 512);
  writeAccessLog(logger, { reqId: x.id, method: x.req.method, path, status: this.statusCode, ms: Math.round(ms * 100) / 100 });
  observe?.(x, this.statusCode, ms / 1000);
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
