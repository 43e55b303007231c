/**
 * The data plane's HTTP front door: request id and access log, probes, the API gateway firewall,
 * gateway addressing, authentication, the conventional headers, then the record engine.
 *
 * It runs on plain node:http requests: Express costs about half the throughput of a cached read
 * (measured: a one-middleware Express app served 0.46 of a bare node:http handler), so Express
 * is kept for what it is good at here — the JSON body parser and the auxiliary routes — and the
 * gateway path pays for none of its routing. Handlers translate wire format to engine calls and
 * back, nothing more.
 */
import express from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { DatasetConfig, EnvironmentConfig } from '../../../model/types.js';
import type { Caller } from '../auth/caller.js';
import type { ConfigStore } from '../config/store.js';
import type { LocationDriver, StatementContext } from '../engine/contract.js';
import { isVersionNumber, MAX_VERSION, nameList, parseStructuredRequest } from '../engine/actions.js';
import type { RecordEngine } from '../engine/engine.js';
import { argumentsFromText } from '../engine/queries.js';
import { ApiError, badRequest } from '../engine/errors.js';
import { rawSqlIamOnly } from '../rawsql/handler.js';
import { echoResponse } from './echo.js';
import { cachedOpenApiBody, serversFor, withServers } from './openapi.js';
import { respondWithError } from './errors.js';
import { AddressingError, resolveGateway, type Authkind, type GatewayRoute } from './gateway.js';
import { checkAddressingHeaders, statementContext } from './headers.js';
import { beginExchange, sendJson, type Exchange } from './exchange.js';
import { BodyBudget, DEFAULT_BODY_LIMIT, parseJsonBody, readRawBody } from './body.js';

export type Authenticate = (input: { authkind: Authkind; authorization?: string }, env: EnvironmentConfig, dataset: DatasetConfig) => Promise<Caller>;

export type RawQueryHandler = (input: {
  dataset: DatasetConfig;
  authkind: Authkind;
  body: unknown;
  driver: LocationDriver;
  ctx: StatementContext;
}) => Promise<Record<string, unknown>[]>;

/** Connect-style middleware on node requests (Express middleware fits). */
export type NodeMiddleware = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

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
  /** Largest accepted body, in bytes. */
  bodyLimit?: number;
  /** Bytes all requests together may hold while their bodies arrive. */
  bodyBudget?: BodyBudget;
  /** Readiness beyond the configs: the stores' reachability. */
  storeHealth?: () => Promise<StoreReadiness>;
  /** Routes under `/.well-known/` (e.g. the development issuer's JWKS), served by Express. */
  extraRoutes?: (router: express.Router) => void;
}

export interface DatasetRequest {
  route: GatewayRoute;
  env: EnvironmentConfig;
  dataset: DatasetConfig;
  caller: Caller;
  ctx: StatementContext;
}

type Handler = (x: Exchange, d: DatasetRequest) => Promise<void>;

export { DEFAULT_BODY_LIMIT };

/** Datasets whose store cannot be reached right now. */
export interface StoreReadiness {
  unavailable: Record<string, string>;
}

export function createRequestHandler(deps: AppDeps): (req: IncomingMessage, res: ServerResponse) => void {
  const auxiliary = express();
  auxiliary.disable('x-powered-by');
  auxiliary.set('etag', false);
  const extra = express.Router();
  deps.extraRoutes?.(extra);
  auxiliary.use(extra);

  const bodyOptions = { limit: deps.bodyLimit ?? DEFAULT_BODY_LIMIT, budget: deps.bodyBudget ?? new BodyBudget() };
  const run = (middleware: NodeMiddleware, x: Exchange) =>
    new Promise<boolean>((resolve, reject) => {
      let passed = false;
      middleware(x.req, x.res, (err?: unknown) => {
        passed = true;
        if (err) reject(err);
        else resolve(true);
      });
      // A middleware that answered without calling next (a firewall block) is done with the request.
      if (!passed && x.res.writableEnded) resolve(false);
      else if (!passed) x.res.once('finish', () => resolve(false));
    });

  /**
   * 200 `ready`; 200 `degraded` when some datasets cannot be served (a failed config, an
   * unreachable store) while others can — one bad dataset must not take the replica out of its
   * Service; 503 `starting` until every dataset's first preparation finished, and 503
   * `unavailable` when no dataset can be served because their stores cannot be reached.
   */
  const readiness = async () => {
    const datasets: Record<string, ReturnType<typeof describeState> & { store?: string }> = Object.fromEntries(
      deps.store.datasetIds().map((id) => [id, describeState(deps.store, id)]),
    );
    const stores = (await deps.storeHealth?.())?.unavailable ?? {};
    for (const [id, problem] of Object.entries(stores)) if (datasets[id]) datasets[id].store = `unreachable: ${problem}`;
    const entries = Object.entries(datasets);
    const starting = deps.store.environment === undefined || entries.some(([, d]) => d.status === 'pending');
    const broken = entries.filter(([, d]) => d.status === 'failed' || d.store).map(([id]) => id);
    const servable = entries.filter(([, d]) => d.status === 'ready' && !d.store).length;
    const anyStoreDown = Object.keys(stores).length > 0;
    const status = starting ? 'starting' : anyStoreDown && servable === 0 ? 'unavailable' : broken.length ? 'degraded' : 'ready';
    const body = { status, environment: deps.store.environment?.id, ...(broken.length ? { degraded: broken } : {}), datasets };
    return { status: status === 'ready' || status === 'degraded' ? 200 : 503, body };
  };

  const readOne: Handler = async (x, d) => {
    const [schema, id] = d.route.rest;
    const query = x.query;
    for (const key of Object.keys(query)) {
      if (key !== 'expand' && key !== 'version' && key !== 'projection') {
        throw badRequest('UNKNOWN_PARAMETER', `unknown query parameter "${key}"; accepted: expand, version, projection`, [{ path: `query:${key}`, message: 'unknown parameter' }]);
      }
      if (typeof query[key] !== 'string') throw badRequest('INVALID_PARAMETER', `query parameter "${key}" must be given once`, [{ path: `query:${key}`, message: 'repeated' }]);
    }
    let version: number | undefined;
    if (query.version !== undefined) {
      version = /^[1-9][0-9]{0,9}$/.test(query.version as string) ? Number(query.version) : undefined;
      if (!isVersionNumber(version)) {
        throw badRequest('INVALID_PARAMETER', `"version" must be a positive integer of at most ${MAX_VERSION}`, [{ path: 'query:version', message: 'not a positive integer' }]);
      }
    }
    const record = await deps.engine.read(
      d.dataset,
      {
        schema,
        id,
        version,
        expand: nameList(query.expand, 'query:expand', 'expand'),
        projection: query.projection === undefined ? undefined : nameList(query.projection, 'query:projection', 'projection'),
      },
      d.ctx,
      'query',
    );
    sendJson(x.res, 200, record);
  };

  /** GET list and link pages: filter, sort, limit, nextToken and expand as query parameters. */
  const page = (kind: 'list' | 'link'): Handler => async (x, d) => {
    const query = x.query;
    const accepted = ['filter', 'sort', 'limit', 'nextToken', 'expand'];
    for (const key of Object.keys(query)) {
      if (!accepted.includes(key)) {
        throw badRequest('UNKNOWN_PARAMETER', `unknown query parameter "${key}"; accepted: ${accepted.join(', ')}`, [{ path: `query:${key}`, message: 'unknown parameter' }]);
      }
      if (typeof query[key] !== 'string') throw badRequest('INVALID_PARAMETER', `query parameter "${key}" must be given once`, [{ path: `query:${key}`, message: 'repeated' }]);
    }
    const text = (key: string) => query[key] as string | undefined;
    let limit: number | undefined;
    if (query.limit !== undefined) {
      if (!/^[0-9]{1,7}$/.test(query.limit as string)) throw badRequest('INVALID_LIMIT', '"limit" must be a whole number', [{ path: 'query:limit', message: 'not a whole number' }]);
      limit = Number(query.limit);
    }
    const request = { filter: text('filter'), sort: text('sort'), limit, nextToken: text('nextToken'), expand: nameList(query.expand, 'query:expand', 'expand') };
    const at = (field: string) => `query:${field}`;
    const [schema, id, link] = d.route.rest;
    const result = kind === 'list' ? await deps.engine.list(d.dataset, { schema, ...request }, d.ctx, at) : await deps.engine.link(d.dataset, { schema, id, link, ...request }, d.ctx, at);
    sendJson(x.res, 200, result);
  };

  /** `GET /{dataset}/queries/{name}?<argument>=…&limit=&nextToken=`: a named query; every other parameter is an argument. */
  const namedQuery: Handler = async (x, d) => {
    const texts: Record<string, string> = {};
    for (const [key, value] of Object.entries(x.query)) {
      if (typeof value !== 'string') throw badRequest('INVALID_PARAMETER', `query parameter "${key}" must be given once`, [{ path: `query:${key}`, message: 'repeated' }]);
      if (key !== 'limit' && key !== 'nextToken') Object.defineProperty(texts, key, { value, enumerable: true });
    }
    const limit = x.query.limit as string | undefined;
    if (limit !== undefined && !/^[0-9]{1,7}$/.test(limit)) throw badRequest('INVALID_LIMIT', '"limit" must be a whole number', [{ path: 'query:limit', message: 'not a whole number' }]);
    const name = d.route.rest[1];
    const action = { schema: name, arguments: argumentsFromText(d.dataset, name, texts), limit: limit === undefined ? undefined : Number(limit), nextToken: x.query.nextToken as string | undefined };
    sendJson(x.res, 200, await deps.engine.query(d.dataset, action, d.ctx, (f) => (f === 'schema' ? 'path:name' : `query:${f}`), (key) => `query:${key}`));
  };

  const structured: Handler = async (x, d) => {
    const result = await deps.engine.execute(d.dataset, parseStructuredRequest(x.body), d.ctx);
    sendJson(x.res, result.status, result.body);
  };

  const echo: Handler = async (x, d) => sendJson(x.res, 200, echoResponse(x, d.caller));

  /** The dataset's OpenAPI document (openapi.ts): built once per config generation; `servers` from this request's host. */
  const openapi: Handler = async (x, d) => {
    for (const key of Object.keys(x.query)) throw badRequest('UNKNOWN_PARAMETER', `unknown query parameter "${key}"; none is accepted`, [{ path: `query:${key}`, message: 'unknown parameter' }]);
    const proto = x.req.headers['x-forwarded-proto'];
    const servers = serversFor({ host: x.req.headers.host, forwardedProto: typeof proto === 'string' ? proto : undefined, route: d.route }, d.dataset, d.env);
    sendJson(x.res, 200, withServers(cachedOpenApiBody(d.dataset, d.env), servers));
  };

  const rawQuery: Handler = async (x, d) => {
    if (!deps.rawQuery) throw new ApiError(501, 'NOT_AVAILABLE', 'the raw SQL endpoint is not available on this data plane');
    const rows = await deps.rawQuery({ dataset: d.dataset, authkind: d.route.authkind, body: x.body, driver: deps.driverFor(d.dataset), ctx: d.ctx });
    sendJson(x.res, 200, rows);
  };

  async function serve(x: Exchange, methods: string, handler: Handler): Promise<void> {
    const method = x.req.method ?? 'GET';
    if (!methods.split(',').includes(method)) {
      x.res.setHeader('allow', methods);
      throw new ApiError(405, 'METHOD_NOT_ALLOWED', `${method} is not allowed here; use ${methods}`);
    }
    if (method === 'POST') {
      const type = x.req.headers['content-type'];
      if (!type) throw new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', 'send the body as application/json');
      if (!isJsonMediaType(type)) throw new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', `Content-Type "${type.slice(0, 100)}" is not accepted; send application/json`);
    }
    // Addressing and authentication come before the body is read: an unauthenticated caller
    // cannot make the service buffer a megabyte.
    const d = await prepareDatasetRequest(deps, x);
    if (method === 'POST') {
      const raw = await readRawBody(x.req, bodyOptions);
      if (raw.length === 0) throw badRequest('INVALID_BODY', 'the request needs a JSON body', [{ path: '$', message: 'empty body' }]);
      x.rawBody = raw;
      x.body = parseJsonBody(raw);
      // The body rules of the firewall read the raw bytes from the request.
      (x.req as IncomingMessage & { rawBody?: Buffer }).rawBody = raw;
      if (deps.bodyFirewall && !(await run(deps.bodyFirewall, x))) {
        x.redactPath = true;
        return;
      }
    }
    await handler(x, d);
  }

  async function dispatch(x: Exchange): Promise<void> {
    let route: GatewayRoute;
    try {
      route = resolveGateway(x.req.headers.host, x.path, x.req.headers.authorization);
    } catch (err) {
      if (err instanceof AddressingError) throw badRequest('INVALID_PATH', err.message);
      throw err;
    }
    x.route = route;
    if (!route.datasetId) throw new ApiError(404, 'NOT_FOUND', 'address a dataset: /{dataset}/… or a {dataset}.<gateway> host');
    const rest = route.rest;
    if (rest.length === 0) return serve(x, 'POST', structured);
    if (rest.length === 1 && rest[0] === 'echo') return serve(x, 'GET', echo);
    // Schema names contain a dot (model SCHEMA_NAME_PATTERN): no schema's list is at /openapi.
    if (rest.length === 1 && rest[0] === 'openapi') return serve(x, 'GET,HEAD', openapi);
    if (rest.length === 1 && rest[0] === 'raw-query') {
      // Refused on other gateways before authentication: whatever the credentials, the answer is the same.
      if (route.authkind !== 'iam') throw rawSqlIamOnly();
      return serve(x, 'POST', rawQuery);
    }
    if (rest.length === 1) return serve(x, 'GET,HEAD', page('list'));
    // Schema names contain a dot: no schema is called "queries".
    if (rest.length === 2 && rest[0] === 'queries') return serve(x, 'GET,HEAD', namedQuery);
    if (rest.length === 2) return serve(x, 'GET,HEAD', readOne);
    if (rest.length === 3) return serve(x, 'GET,HEAD', page('link'));
    throw new ApiError(404, 'NOT_FOUND', `no endpoint at ${x.path.slice(0, 200)}`);
  }

  return (req, res) => {
    const x = beginExchange(deps.logger, req, res);
    if (x.req.method === 'GET') {
      if (x.path === '/healthz') return sendJson(res, 200, { status: 'ok' });
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
    if (!deps.firewall) {
      dispatch(x).catch((err: unknown) => respondWithError(x, err, deps.logger));
      return;
    }
    let passed = false;
    deps.firewall(req, res, (err?: unknown) => {
      passed = true;
      if (err) respondWithError(x, err, deps.logger);
      else dispatch(x).catch((failure: unknown) => respondWithError(x, failure, deps.logger));
    });
    // A blocked request's path may be the exploit string itself: keep it out of the access log.
    if (!passed) x.redactPath = true;
  };
}

export function isJsonMediaType(value: string): boolean {
  const type = value.split(';')[0].trim().toLowerCase();
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

async function prepareDatasetRequest(deps: AppDeps, x: Exchange): Promise<DatasetRequest> {
  const route = x.route!;
  const env = deps.store.environment;
  if (!env) throw new ApiError(503, 'NOT_READY', 'the data plane has no environment config yet');
  const dataset = deps.engine.dataset(route.datasetId!);
  const caller = await deps.authenticate({ authkind: route.authkind, authorization: x.req.headers.authorization }, env, dataset);
  checkAddressingHeaders(x.req.headers, env, dataset);
  const ctx = statementContext(x.req.headers, env);
  return { route, env, dataset, caller, ctx };
}

function describeState(store: ConfigStore, id: string) {
  const state = store.dataset(id)!;
  if (state.status === 'failed') return { status: state.status, generation: state.config.generation, problem: state.problem };
  if (state.status === 'ready' && state.warning) return { status: state.status, generation: state.config.generation, warning: state.warning };
  return { status: state.status, generation: state.config.generation };
}
