/**
 * The data plane's HTTP front door: request id and access log, probes, the API gateway firewall,
 * gateway addressing, authentication, the conventional headers, then the record engine.
 *
 * It runs on plain node:http requests: Express costs about half the throughput of a cached read
 * (measured: a one-middleware Express app served 0.46 of a bare node:http handler), so Express
 * is kept for what it is good at here — the JSON body parser and the auxiliary routes — and the
 * gateway path pays for none of its routing. The dataset endpoints are a table (routes.ts) whose
 * handlers (dataset-handlers.ts) translate wire format to engine calls and back, nothing more.
 */
import express from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { DatasetConfig, EnvironmentConfig } from '../../../model/types.js';
import type { Caller } from '../auth/caller.js';
import type { ConfigStore } from '../config/store.js';
import type { LocationDriver, StatementContext } from '../engine/contract.js';
import { TRANSACTION_SCHEMA, type RecordEngine } from '../engine/engine.js';
import { ApiError, badRequest, MethodNotAllowed } from '../engine/errors.js';
import { rawSqlIamOnly } from '../rawsql/handler.js';
import { datasetHandlers } from './dataset-handlers.js';
import { readinessOf } from './readiness.js';
import { matchRoute, type RouteMatch } from './routes.js';
import { nameRequestSpan } from '../telemetry/http.js';
import { respondWithError } from '../front-door/errors.js';
import { AddressingError, resolveGateway, type Authkind, type GatewayRoute } from '../front-door/gateway.js';
import { checkAddressingHeaders, statementContext } from './headers.js';
import { beginExchange, sendJson, type Exchange, type ExchangeObserver } from '../front-door/exchange.js';
import type { RequestSample } from '../metrics.js';
import { BodyBudget, DEFAULT_BODY_LIMIT, decodeJsonBody, parseJsonBody, readRawBody } from './body.js';
import { isAssetPath, sendAsset, sendDatasetPage, sendPage } from './browser/serve.js';
import { credentialHint, swaggerPage } from './browser/pages.js';
import { adminOpenApiDocument, adminServers } from './admin-openapi.js';
import { DOCUMENT_CACHE_HEADERS, knownAddresses } from './openapi.js';
import type { QueryLimits } from '../graphql/limits.js';
import type { Authenticate, NodeMiddleware } from '../front-door/authenticate.js';

export type { Authenticate, NodeMiddleware };


export type RawQueryHandler = (input: {
  dataset: DatasetConfig;
  authkind: Authkind;
  body: unknown;
  driver: LocationDriver;
  ctx: StatementContext;
  /** Called once the SQL is checked, before the store is asked. */
  whenServed?: () => void;
}) => Promise<Record<string, unknown>[]>;


export interface AppDeps {
  store: ConfigStore;
  engine: RecordEngine;
  driverFor: (dataset: DatasetConfig) => LocationDriver;
  logger: Logger;
  authenticate: Authenticate;
  /** Request inspection (API gateway firewall), run before addressing and authentication. */
  firewall?: NodeMiddleware;
  /** Body rules of the firewall, run on the raw body once it is read. */
  bodyFirewall?: NodeMiddleware;
  rawQuery?: RawQueryHandler;
  /** The process runs in a Pod (KUBERNETES_SERVICE_HOST): the OpenAPI `servers` name the cluster's addresses. */
  inCluster?: boolean;
  /** Largest accepted body, in bytes. */
  bodyLimit?: number;
  /** Bytes all requests together may hold while their bodies arrive. */
  bodyBudget?: BodyBudget;
  /** Readiness beyond the configs: the stores' reachability. */
  storeHealth?: () => Promise<import('./readiness.js').StoreReadiness>;
  /** True from SIGTERM on: /readyz answers 503 `draining` (http/drain.ts). */
  draining?: () => boolean;
  /** GET /metrics: the Prometheus text exposition (metrics.ts, graphql/metrics.ts). */
  metrics?: () => Promise<{ contentType: string; body: string }>;
  /** GraphQL operation limits (graphql/limits.ts), the same on every transport. */
  queryLimits?: QueryLimits;
  /** Each finished response, for the request metrics. */
  observeRequest?: (sample: RequestSample) => void;
  /** The URL this data plane listens on, once it does (server.ts): the OpenAPI documents' first server. */
  listeningAddress?: () => string | undefined;
  /** Routes under `/.well-known/` (e.g. the development issuer's JWKS), served by Express. */
  extraRoutes?: (router: express.Router) => void;
  /** The administrative API under `/_admin/` (admin/): authenticated first, then handed the request. */
  admin?: {
    /** `iam` authenticates like a dataset request would, against the admin principals as a dataset. */
    authenticate(authkind: Authkind, env: EnvironmentConfig, iam: (admins: DatasetConfig) => Promise<Caller>): Promise<void>;
    handle(request: { method: string; segments: string[]; body?: unknown }, env: EnvironmentConfig): Promise<{ status: number; body: unknown }>;
  };
}

export interface DatasetRequest {
  route: GatewayRoute;
  env: EnvironmentConfig;
  dataset: DatasetConfig;
  caller: Caller;
  ctx: StatementContext;
}

/** A dataset endpoint: the exchange, the authenticated request, the route's path variables. */
export type Handler = (x: Exchange, d: DatasetRequest, params: Record<string, string>) => Promise<void>;

export { DEFAULT_BODY_LIMIT };

export type { StoreReadiness } from './readiness.js';

export function createRequestHandler(deps: AppDeps): (req: IncomingMessage, res: ServerResponse) => void {
  const auxiliary = express();
  auxiliary.disable('x-powered-by');
  auxiliary.set('etag', false);
  const extra = express.Router();
  deps.extraRoutes?.(extra);
  auxiliary.use(extra);

  const bodyOptions = { limit: deps.bodyLimit ?? DEFAULT_BODY_LIMIT, budget: deps.bodyBudget ?? new BodyBudget() };
  /**
   * Whether the middleware let the request through. A middleware that decides synchronously (the
   * firewall's body rules) gets its answer back without a promise; only one still deciding is waited for.
   */
  const run = (middleware: NodeMiddleware, x: Exchange): boolean | Promise<boolean> => {
    let called = false;
    let failure: unknown;
    let settle: ((err?: unknown) => void) | undefined;
    middleware(x.req, x.res, (err?: unknown) => {
      if (settle) return settle(err);
      called = true;
      failure = err;
    });
    if (called) {
      if (failure) throw failure;
      return true;
    }
    // A middleware that answered without calling next (a firewall block) is done with the request.
    if (x.res.writableEnded) return false;
    return new Promise<boolean>((resolve, reject) => {
      settle = (err) => (err ? reject(err) : resolve(true));
      x.res.once('finish', () => resolve(false));
    });
  };

  const handlers = datasetHandlers(deps);
  const readiness = () => readinessOf(deps.store, deps.storeHealth, deps.draining);

  /**
   * The checks every dataset endpoint shares, then the route's handler. A GET whose caller was known
   * at once gets the handler's own promise back (no async frame and promise hop of its own); a body
   * to read, or authentication still deciding, goes through `serveAfter`.
   */
  function serve(x: Exchange, { route, params }: RouteMatch): Promise<void> {
    const { methods } = route;
    nameRequestSpan(x.req, route);
    const method = x.req.method ?? 'GET';
    // The pages need no credentials: they ask for them and send them with every request they make.
    // They answer the same for every dataset name, existing or not (whoever has no credentials
    // learns no dataset names from them); the page's first request tells the rest.
    const page = route.name === 'docs' || (route.name === 'graphql' && method !== 'POST');
    if (!methodsOf(methods).has(method)) {
      // Under a dataset or schema that does not exist the path is no endpoint at all: 404, not 405.
      const state = deps.store.dataset(x.route!.datasetId!);
      if (route.name === 'docs' || route.name === 'graphql') throw new MethodNotAllowed(method, methods);
      if (!state || (params.schema !== undefined && params.schema !== TRANSACTION_SCHEMA && !Object.hasOwn(state.config.schemas, params.schema))) throw noEndpoint(x.path);
      throw new MethodNotAllowed(method, methods);
    }
    if (page) return Promise.resolve(sendDatasetPage(x, route.name, x.route!.datasetId!, credentialHint(x.route!.by === 'host' ? x.route!.authkind : undefined, deps.store.environment)));
    if (method === 'POST') {
      const type = x.req.headers['content-type'];
      if (!type) throw new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', 'send the body as application/json');
      if (!isJsonMediaType(type)) throw new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', `Content-Type "${type.slice(0, 100)}" is not accepted; send application/json`);
    }
    // Addressing and authentication come before the body is read: an unauthenticated caller
    // cannot make the service buffer a megabyte.
    const prepared = prepareDatasetRequest(deps, x, ENGINE_ROUTES.has(route.name));
    const handler = handlers[route.name];
    if (method !== 'POST' && !(prepared instanceof Promise)) return handler(x, prepared, params);
    return serveAfter(x, handler, params, method, prepared);
  }

  /**
   * `serve`'s second half: waits for authentication if it had to, reads and checks a POST body, then
   * runs the handler. Each wait is one `then` (no async frame of its own per request); what it throws
   * before the first wait, the front door answers as it answers a rejection.
   */
  function serveAfter(x: Exchange, handler: Handler, params: Record<string, string>, method: string, prepared: DatasetRequest | Promise<DatasetRequest>): Promise<void> {
    if (prepared instanceof Promise) return prepared.then((d) => serveAuthenticated(x, handler, params, method, d));
    return serveAuthenticated(x, handler, params, method, prepared);
  }

  function serveAuthenticated(x: Exchange, handler: Handler, params: Record<string, string>, method: string, d: DatasetRequest): Promise<void> {
    if (method !== 'POST') return handler(x, d, params);
    return readRawBody(x.req, bodyOptions).then((raw) => serveWithBody(x, handler, params, d, raw));
  }

  function serveWithBody(x: Exchange, handler: Handler, params: Record<string, string>, d: DatasetRequest, raw: Buffer): Promise<void> | undefined {
    if (raw.length === 0) throw badRequest('INVALID_BODY', 'the request needs a JSON body', [{ path: '$', message: 'empty body' }]);
    x.rawBody = raw;
    const { text, value } = decodeJsonBody(raw);
    x.body = value;
    // The body rules of the firewall read the raw bytes from the request, and the text decoded from them.
    const req = x.req as IncomingMessage & { rawBody?: Buffer; rawBodyText?: string };
    req.rawBody = raw;
    req.rawBodyText = text;
    if (deps.bodyFirewall) {
      const passed = run(deps.bodyFirewall, x);
      if (passed instanceof Promise) return passed.then((ok) => (ok ? handler(x, d, params) : void (x.redactPath = true)));
      if (!passed) {
        x.redactPath = true;
        return undefined;
      }
    }
    return handler(x, d, params);
  }

  /** `/_admin/…`: admin principals on the iam gateway (checked before the body is read). */
  async function administer(x: Exchange): Promise<void> {
    if (!deps.admin) throw new ApiError(404, 'NOT_FOUND', 'the administrative API is not available on this data plane');
    const env = deps.store.environment;
    if (!env) throw new ApiError(503, 'NOT_READY', 'the data plane has no environment config yet');
    const method = x.req.method ?? 'GET';
    const at = x.path.replace(/\/+$/, '');
    const readOnly = () => {
      if (method !== 'GET' && method !== 'HEAD') throw new MethodNotAllowed(method, 'GET,HEAD');
    };
    if (at === '/_admin/docs') {
      readOnly();
      // The administrative API answers on the iam gateway only, whatever host the page is on.
      const host = resolveGateway(x.req.headers.host, at, undefined);
      const onPublic = host.by === 'host' && host.authkind === 'public';
      return sendPage(x, swaggerPage('administrative API', '/_admin/openapi', credentialHint('iam', env), onPublic ? ADMIN_ON_PUBLIC : undefined));
    }
    const { authkind } = resolveGateway(x.req.headers.host, '/_admin', x.req.headers.authorization);
    const authorization = x.req.headers.authorization;
    await deps.admin.authenticate(authkind, env, async (admins) => deps.authenticate({ authkind, authorization, remoteAddress: x.req.socket.remoteAddress }, env, admins));
    if (at === '/_admin/openapi') {
      readOnly();
      for (const [name, value] of Object.entries(DOCUMENT_CACHE_HEADERS)) x.res.setHeader(name, value);
      return sendJson(x.res, 200, adminOpenApiDocument(adminServers(knownAddresses(deps), env.domain)));
    }
    let body: unknown;
    if (method === 'POST' && x.req.headers['content-type'] !== undefined) {
      if (!isJsonMediaType(x.req.headers['content-type'])) throw new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', 'send application/json');
      const raw = await readRawBody(x.req, bodyOptions);
      // The firewall's body rules apply to admin bodies as to every other body.
      (x.req as IncomingMessage & { rawBody?: Buffer }).rawBody = raw;
      if (raw.length && deps.bodyFirewall && !(await run(deps.bodyFirewall, x))) {
        x.redactPath = true;
        return;
      }
      body = raw.length ? parseJsonBody(raw) : undefined;
    }
    let segments: string[];
    try {
      segments = x.path.split('/').filter(Boolean).slice(1).map((s) => decodeURIComponent(s));
    } catch {
      throw badRequest('INVALID_PATH', 'the path has a malformed percent-encoding', [{ path: 'path', message: 'malformed percent-encoding' }]);
    }
    const result = await deps.admin.handle({ method, segments, body }, env);
    sendJson(x.res, result.status, result.body);
  }

  /** The gateway path; throws or returns the promise of the route's work (no async wrapper of its own). */
  function dispatch(x: Exchange): Promise<void> {
    if (x.path === '/_admin' || x.path.startsWith('/_admin/')) return administer(x);
    let route: GatewayRoute;
    try {
      route = resolveGateway(x.req.headers.host, x.path, x.req.headers.authorization);
    } catch (err) {
      if (err instanceof AddressingError) throw badRequest('INVALID_PATH', err.message);
      throw err;
    }
    x.route = route;
    if (!route.datasetId) throw new ApiError(404, 'NOT_FOUND', 'address a dataset: /{dataset}/… or a {dataset}.<gateway> host');
    const match = matchRoute(route.rest);
    if (match) {
      // Refused on other gateways before authentication: whatever the credentials, the answer is the same.
      if ('iamOnly' in match.route && match.route.iamOnly && route.authkind !== 'iam') throw rawSqlIamOnly();
      return serve(x, match);
    }
    throw noEndpoint(x.path);
  }

  /** Runs dispatch; whatever it throws or rejects with is answered as an error response. */
  function dispatchOrAnswer(x: Exchange): void {
    let done: Promise<void>;
    try {
      done = dispatch(x);
    } catch (err) {
      return respondWithError(x, err, deps.logger);
    }
    done.catch((err: unknown) => respondWithError(x, err, deps.logger));
  }

  const record = deps.observeRequest;
  const observe: ExchangeObserver | undefined = record
    ? (x, status, seconds) => record({ dataset: x.route?.datasetId, gateway: x.route?.authkind, method: x.req.method, status, seconds })
    : undefined;

  return (req, res) => {
    const x = beginExchange(deps.logger, req, res, observe);
    // The pages' static files: public, the same for everyone, before the firewall's body rules matter.
    if (isAssetPath(x.path)) {
      try {
        return sendAsset(x);
      } catch (err) {
        return respondWithError(x, err, deps.logger);
      }
    }
    if (x.req.method !== 'GET' && x.req.method !== 'HEAD' && FIXED_PATHS.includes(x.path)) return respondWithError(x, new MethodNotAllowed(x.req.method ?? '', 'GET,HEAD'), deps.logger);
    if (x.req.method === 'GET' || x.req.method === 'HEAD') {
      if (x.path === '/healthz') return sendJson(res, 200, { status: 'ok' });
      if (x.path === '/metrics' && deps.metrics) {
        deps.metrics().then(
          ({ contentType, body }) => {
            res.writeHead(200, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
            res.end(body);
          },
          (err: unknown) => respondWithError(x, err, deps.logger),
        );
        return;
      }
      if (x.path === '/readyz') {
        readiness().then(
          ({ status, body }) => {
            if (status === 503) res.setHeader('retry-after', '1');
            sendJson(res, status, body);
          },
          (err: unknown) => respondWithError(x, err, deps.logger),
        );
        return;
      }
    }
    if (x.path.startsWith('/.well-known/')) {
      auxiliary(req as express.Request, res as express.Response, (err?: unknown) =>
        respondWithError(x, err ?? new ApiError(404, 'NOT_FOUND', `no endpoint at ${x.path.slice(0, 200)}`), deps.logger),
      );
      return;
    }
    if (!deps.firewall) return dispatchOrAnswer(x);
    let passed = false;
    deps.firewall(req, res, (err?: unknown) => {
      passed = true;
      if (err) respondWithError(x, err, deps.logger);
      else dispatchOrAnswer(x);
    });
    // A blocked request's path may be the exploit string itself: keep it out of the access log.
    if (!passed) x.redactPath = true;
  };
}

/** A route's accepted methods as a set, split once per route rather than on every request. */
const routeMethods = new Map<string, ReadonlySet<string>>();
function methodsOf(methods: string): ReadonlySet<string> {
  let set = routeMethods.get(methods);
  if (!set) routeMethods.set(methods, (set = new Set(methods.split(','))));
  return set;
}

/** The probes and metrics: GET (and HEAD) only. */
const FIXED_PATHS = ['/healthz', '/readyz', '/metrics'];

/** The admin page's prompt on a public. host, where every admin call is refused (ADMIN_IAM_ONLY). */
const ADMIN_ON_PUBLIC = 'This host is the public gateway, and the administrative API answers on the iam gateway only: open this page on an iam. host.';

const noEndpoint = (path: string) => new ApiError(404, 'NOT_FOUND', `no endpoint at ${path.slice(0, 200)}`);

export function isJsonMediaType(value: string): boolean {
  if (value === 'application/json') return true; // the common header, without a split per request
  const type = value.split(';')[0].trim().toLowerCase();
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

/**
 * Routes served by the record engine alone, and raw SQL: a dataset still being prepared is checked
 * against its config, so a request that can never succeed gets its 400 before the 503 (store calls
 * are refused until the dataset is served). Other routes need the dataset served first.
 */
const ENGINE_ROUTES: ReadonlySet<string> = new Set(['structured', 'read', 'list', 'link', 'namedQuery', 'graphql', 'rawQuery']);

/**
 * The checked request, as it is when authentication did not have to wait (a `Proxy` assertion),
 * else a promise of it: the common read pays no promise hop here. Refusals are thrown or reject.
 */
function prepareDatasetRequest(deps: AppDeps, x: Exchange, engineRoute: boolean): DatasetRequest | Promise<DatasetRequest> {
  const route = x.route!;
  const env = deps.store.environment;
  if (!env) throw new ApiError(503, 'NOT_READY', 'the data plane has no environment config yet');
  const dataset = engineRoute ? deps.engine.requestDataset(route.datasetId!) : deps.engine.dataset(route.datasetId!);
  const caller = deps.authenticate({ authkind: route.authkind, authorization: x.req.headers.authorization, remoteAddress: x.req.socket.remoteAddress }, env, dataset);
  if (caller instanceof Promise) return caller.then((authenticated: Caller) => checkedRequest(x, route, env, dataset, authenticated));
  return checkedRequest(x, route, env, dataset, caller);
}

function checkedRequest(x: Exchange, route: GatewayRoute, env: EnvironmentConfig, dataset: DatasetConfig, caller: Caller): DatasetRequest {
  checkAddressingHeaders(x.req.headers, env, dataset);
  const ctx = statementContext(x.req.headers, env);
  return { route, env, dataset, caller, ctx };
}
