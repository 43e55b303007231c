/**
 * The SERVER span of each HTTP request (and WebSocket upgrade), continuing the caller's W3C trace.
 * Installed by server.ts and the function gateway only when tracing is on; the one hook in the
 * request path, `nameRequestSpan`, is a single check when it is off.
 *
 * A span is named by its route template (`GET /{dataset}/{schema}/{id}`), never by ids or values:
 * the front door names it when it has matched the route; until then (and for paths no route
 * matched) it is the method alone, as the semantic conventions say.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { endSpan, inSpan, startServerSpan, tracingOn, withSpan, withSpanCall, type Span, type SpanAttributes } from '../../../model/telemetry/tracing.js';
import { AttributeTemplate } from '../../../model/telemetry/attribute-template.js';

/**
 * A request's span, kept on the request under a symbol of this module: a property set, read and
 * cleared per request costs less than a WeakMap's entry (added, looked up, removed, and swept by
 * the collector), and the span goes with the request object all the same.
 */
const SPAN = Symbol('request span');
type Spanned = IncomingMessage & { [SPAN]?: Span };
const spanOf = (req: IncomingMessage): Span | undefined => (req as Spanned)[SPAN];

/** Literal paths answered before routing, named as they are. */
const LITERAL_PATHS = new Set(['/healthz', '/readyz', '/metrics', '/', '/invoke']);
const LONGEST_LITERAL = Math.max(...[...LITERAL_PATHS].map((path) => path.length));

/** `/{dataset}` and the route's segments, variables as `{name}`. */
export function routeTemplate(path: readonly string[], prefix = '/{dataset}'): string {
  return prefix + path.map((segment) => `/${segment.startsWith(':') ? `{${segment.slice(1)}}` : segment}`).join('');
}

/** Each route's template and its span names by method, built once: the same string objects every request (the encoder's caches find them at once). */
const templates = new WeakMap<readonly string[], { template: string; names: Map<string | undefined, string> }>();

/** The front door's hook: names the request's span by its route (a no-op when tracing is off). */
export function nameRequestSpan(req: IncomingMessage, route: { readonly path: readonly string[] }, prefix?: string): void {
  if (!tracingOn()) return;
  const span = spanOf(req);
  if (!span) return;
  let named = templates.get(route.path);
  if (named === undefined) templates.set(route.path, (named = { template: routeTemplate(route.path, prefix), names: new Map() }));
  let name = named.names.get(req.method);
  if (name === undefined) named.names.set(req.method, (name = `${req.method} ${named.template}`));
  span.updateName(name);
  span.setAttribute('http.route', named.template);
}

/** `server.address` and `server.port` of a Host header, set on `attributes`. */
function addHostAndPort(attributes: SpanAttributes, host: string | undefined): SpanAttributes {
  if (!host) return attributes;
  const colon = host.lastIndexOf(':');
  // A colon inside an IPv6 literal's brackets is not the port's.
  if (colon < 0 || host.indexOf(']', colon) >= 0) attributes['server.address'] = host;
  else {
    attributes['server.address'] = host.slice(0, colon);
    const port = Number(host.slice(colon + 1));
    if (Number.isInteger(port)) attributes['server.port'] = port;
  }
  return attributes;
}

/** A request's attributes before routing, in one order (`http.route` only for the literal paths). */
function requestAttributes(method: string, req: IncomingMessage, literal: string | undefined, agent: string | undefined): SpanAttributes {
  const attributes: SpanAttributes = { 'http.request.method': method, 'url.scheme': 'http', 'network.protocol.version': req.httpVersion };
  addHostAndPort(attributes, req.headers.host);
  if (literal) attributes['http.route'] = literal;
  const client = req.socket.remoteAddress;
  if (client) attributes['client.address'] = client;
  if (agent !== undefined) attributes['user_agent.original'] = agent.length > 256 ? agent.slice(0, 256) : agent;
  return attributes;
}

/**
 * The last request's attributes on a connection, as a template (attribute-template.ts): a client
 * sends request after request with the same method, Host and User-Agent, so a span takes the
 * template by reference and the encoder copies its encoding. Kept on the socket (one per
 * connection, gone with it); any difference makes a new one.
 */
const TEMPLATE = Symbol('request attributes');
interface ConnectionTemplate {
  method: string;
  version: string;
  host: string | undefined;
  agent: string | undefined;
  template: AttributeTemplate;
}
type Templated = { [TEMPLATE]?: ConnectionTemplate };

function connectionTemplate(method: string, req: IncomingMessage, agent: string | undefined): AttributeTemplate | SpanAttributes {
  const socket = req.socket as typeof req.socket & Templated;
  const host = req.headers.host;
  const last = socket[TEMPLATE];
  if (last !== undefined && last.method === method && last.host === host && last.agent === agent && last.version === req.httpVersion) return last.template;
  const attributes = requestAttributes(method, req, undefined, agent);
  const template = AttributeTemplate.of(attributes);
  if (template === undefined) return attributes;
  socket[TEMPLATE] = { method, version: req.httpVersion, host, agent, template };
  return template;
}

/** Starts the span of a request (or upgrade); undefined when tracing is off. */
export function startRequestSpan(req: IncomingMessage): Span | undefined {
  const method = req.method ?? 'GET';
  const url = req.url ?? '/';
  const query = url.indexOf('?');
  const path = query < 0 ? url : url.slice(0, query);
  // The literal paths are short: a longer one (every dataset path) is not hashed for the Set.
  const literal = path.startsWith('/_admin') ? '/_admin' : path.length <= LONGEST_LITERAL && LITERAL_PATHS.has(path) ? path : undefined;
  const userAgent = req.headers['user-agent'];
  const agent = typeof userAgent === 'string' ? userAgent : undefined;
  // Routed requests (the many) take their connection's template; the literal paths' attributes are built each time.
  const attributes = literal ? requestAttributes(method, req, literal, agent) : connectionTemplate(method, req, agent);
  const span = startServerSpan(req.headers, literal ? `${method} ${literal}` : method, attributes);
  if (span) (req as Spanned)[SPAN] = span;
  return span;
}

function finish(req: IncomingMessage, span: Span, status: number, completed: boolean): void {
  if (spanOf(req) !== span) return;
  (req as Spanned)[SPAN] = undefined;
  span.setAttribute('http.response.status_code', status);
  endSpan(span, status >= 500 ? String(status) : completed ? undefined : 'connection closed');
}

/** A traced response's 'close' listener (`this` is the response): ends its request's span, if not ended yet. */
function endRequestSpan(this: ServerResponse): void {
  const req = this.req;
  const span = spanOf(req);
  if (span) finish(req, span, this.statusCode, this.writableFinished);
}

/** Wraps a request handler so that each request runs in its SERVER span, ended when the answer is sent. */
export function traceRequests(handler: (req: IncomingMessage, res: ServerResponse) => void): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const span = startRequestSpan(req);
    if (!span) return handler(req, res);
    // One listener: a response emits 'close' after 'finish' too, and writableFinished says which it
    // was. `on`, not `once`: 'close' comes once (and `finish` ends a span once), `once` would wrap
    // the listener in a bound function and its state per request. One shared function (the span is
    // on the request): no closure per request.
    res.on('close', endRequestSpan);
    withSpanCall(span, handler, req, res);
  };
}

/** Wraps the server's `upgrade` listener: the upgrade's span ends at its answer (`upgradeAnswered`) or when the socket closes. */
export function traceUpgrades<A extends unknown[]>(handler: (req: IncomingMessage, socket: Duplex, ...rest: A) => void): (req: IncomingMessage, socket: Duplex, ...rest: A) => void {
  return (req, socket, ...rest) => {
    const span = startRequestSpan(req);
    if (!span) return handler(req, socket, ...rest);
    if (/\/graphql\/?$/.test((req.url ?? '').split('?')[0])) nameRequestSpan(req, { path: ['graphql'] });
    socket.once('close', () => finish(req, span, 0, false));
    withSpan(span, () => handler(req, socket, ...rest));
  };
}

/** The upgrade's answer: 101 when the WebSocket is open, else the refusal's status (a no-op when tracing is off). */
export function upgradeAnswered(req: IncomingMessage, status: number): void {
  if (!tracingOn()) return;
  const span = spanOf(req);
  if (span) finish(req, span, status, true);
}

/** The function gateway's call to the data plane: a CLIENT span (when tracing is on) whose context the call carries. */
export function upstreamSpan<T extends { response: { status: number } }>(method: string, upstreamUrl: string, call: () => Promise<T>): Promise<T> {
  if (!tracingOn()) return call();
  return inSpan(method, () => addHostAndPort({ 'http.request.method': method }, new URL(upstreamUrl).host), call, { kind: 'client' });
}
