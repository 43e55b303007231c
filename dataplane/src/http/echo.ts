/** The echo endpoint's response: what the service saw of the request and the caller. */
import type { Exchange } from '../front-door/exchange.js';
import type { Caller } from '../auth/caller.js';

/** Headers every HTTP client or proxy sends; `headers.empty` says whether anything else came. */
const TRANSPORT_HEADERS = new Set([
  'host', 'authorization', 'accept', 'accept-encoding', 'accept-language', 'connection', 'content-length', 'content-type',
  'user-agent', 'x-request-id', 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-forwarded-port', 'x-real-ip',
  'forwarded', 'via', 'keep-alive', 'te', 'cache-control', 'pragma',
]);

/** `application/json` → `json`, `text/plain; charset=utf-8` → `plain`, absent or `*\/*` → `json`. */
export function shortMediaType(value: string | undefined): string {
  if (!value || value.trim() === '' || value.includes('*/*')) return 'json';
  const first = value.split(',')[0].split(';')[0].trim().toLowerCase();
  if (first.endsWith('/json') || first.endsWith('+json')) return 'json';
  return first.split('/')[1] || first;
}

export function echoResponse(x: Exchange, caller: Caller) {
  const req = x.req;
  const headerNames = Object.keys(req.headers);
  return {
    path: x.path,
    headers: { empty: headerNames.every((name) => TRANSPORT_HEADERS.has(name)) },
    requestId: x.id,
    caller: { anon: caller.anon, schema: caller.schema, id: caller.id, claims: caller.claims, super: caller.super },
    method: (req.method ?? 'GET').toLowerCase(),
    query: { empty: Object.keys(x.query).length === 0 },
    contentType: shortMediaType(req.headers['content-type']),
    accept: shortMediaType(req.headers.accept),
  };
}
