/**
 * The data plane's HTTP front door: gateway addressing, authentication, the conventional headers,
 * then the record engine. Handlers translate wire format to engine calls and back, nothing more.
 */
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { Logger } from 'pino';
import type { DatasetConfig, EnvironmentConfig } from '../../../model/types.js';
import type { Caller } from '../auth/caller.js';
import type { ConfigStore } from '../config/store.js';
import type { LocationDriver, StatementContext } from '../drivers/driver.js';
import { nameList, parseStructuredRequest } from '../engine/actions.js';
import type { RecordEngine } from '../engine/engine.js';
import { ApiError, badRequest } from '../engine/errors.js';
import { echoResponse } from './echo.js';
import { errorHandler } from './errors.js';
import { AddressingError, resolveGateway, type Authkind, type GatewayRoute } from './gateway.js';
import { checkAddressingHeaders, statementContext } from './headers.js';
import { requestContext } from './request-context.js';

export type Authenticate = (input: { authkind: Authkind; authorization?: string }, env: EnvironmentConfig, dataset: DatasetConfig) => Promise<Caller>;

export type RawQueryHandler = (input: {
  dataset: DatasetConfig;
  authkind: Authkind;
  body: unknown;
  driver: LocationDriver;
  ctx: StatementContext;
}) => Promise<Record<string, unknown>[]>;

export interface AppDeps {
  store: ConfigStore;
  engine: RecordEngine;
  driverFor: (dataset: DatasetConfig) => LocationDriver;
  logger: Logger;
  authenticate: Authenticate;
  /** Request inspection (API gateway firewall), run before addressing and authentication. */
  firewall?: RequestHandler;
  /** Body rules of the firewall, run on the raw body once it is read. */
  bodyFirewall?: RequestHandler;
  rawQuery?: RawQueryHandler;
  /** Largest accepted body, in bytes. */
  bodyLimit?: number;
  /** Routes outside the gateways (e.g. the development issuer's JWKS). */
  extraRoutes?: (app: express.Express) => void;
}

export interface DatasetRequest {
  route: GatewayRoute;
  env: EnvironmentConfig;
  dataset: DatasetConfig;
  caller: Caller;
  ctx: StatementContext;
}

declare module 'express-serve-static-core' {
  interface Request {
    rawBody?: Buffer;
  }
}

export const DEFAULT_BODY_LIMIT = 1024 * 1024;

export function createApp(deps: AppDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.use(requestContext(deps.logger));

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', (_req, res) => {
    const datasets = Object.fromEntries(deps.store.datasetIds().map((id) => [id, describeState(deps.store, id)]));
    const ready = deps.store.environment !== undefined && Object.values(datasets).every((d) => d.status !== 'pending');
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'starting', environment: deps.store.environment?.id, datasets });
  });
  deps.extraRoutes?.(app);

  if (deps.firewall) {
    const firewall = deps.firewall;
    app.use((req: Request, res: Response, next: NextFunction) => {
      let passed = false;
      firewall(req, res, (err?: unknown) => {
        passed = true;
        next(err);
      });
      // A blocked request's path may be the exploit string itself: keep it out of the access log.
      if (!passed) res.locals.redactPath = true;
    });
  }

  const json = express.json({
    limit: deps.bodyLimit ?? DEFAULT_BODY_LIMIT,
    type: () => true,
    strict: false,
    verify: (req, _res, buf) => {
      (req as Request).rawBody = buf;
    },
  });

  const handle = (fn: (req: Request, res: Response, d: DatasetRequest) => Promise<void>) => async (req: Request, res: Response, next: NextFunction) => {
    try {
      const d = await prepareDatasetRequest(deps, req);
      await fn(req, res, d);
    } catch (err) {
      next(err);
    }
  };

  const readOne = handle(async (req, res, d) => {
    const [schema, id] = d.route.rest;
    const query = req.query as Record<string, unknown>;
    for (const key of Object.keys(query)) {
      if (key !== 'expand' && key !== 'version' && key !== 'projection') {
        throw badRequest('UNKNOWN_PARAMETER', `unknown query parameter "${key}"; accepted: expand, version, projection`, [{ path: `query:${key}`, message: 'unknown parameter' }]);
      }
      if (typeof query[key] !== 'string') throw badRequest('INVALID_PARAMETER', `query parameter "${key}" must be given once`, [{ path: `query:${key}`, message: 'repeated' }]);
    }
    let version: number | undefined;
    if (query.version !== undefined) {
      version = Number(query.version);
      if (!/^[1-9][0-9]{0,9}$/.test(query.version as string)) throw badRequest('INVALID_PARAMETER', '"version" must be a positive integer', [{ path: 'query:version', message: 'not a positive integer' }]);
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
    res.json(record);
  });

  const structured = handle(async (req, res, d) => {
    const action = parseStructuredRequest(req.body);
    const result = await deps.engine.execute(d.dataset, action, d.ctx);
    res.status(result.status).json(result.body);
  });

  const echo = handle(async (req, res, d) => {
    res.json(echoResponse(req, d.caller));
  });

  const rawQuery = handle(async (req, res, d) => {
    if (!deps.rawQuery) throw new ApiError(501, 'NOT_AVAILABLE', 'the raw SQL endpoint is not available on this data plane');
    const rows = await deps.rawQuery({ dataset: d.dataset, authkind: d.route.authkind, body: req.body, driver: deps.driverFor(d.dataset), ctx: d.ctx });
    res.json(rows);
  });

  app.use((req: Request, res: Response, next: NextFunction) => {
    let route: GatewayRoute;
    try {
      route = resolveGateway(req.headers.host, req.path, req.headers.authorization);
    } catch (err) {
      if (err instanceof AddressingError) return next(badRequest('INVALID_PATH', err.message));
      return next(err);
    }
    res.locals.route = route;
    if (!route.datasetId) return next(new ApiError(404, 'NOT_FOUND', 'address a dataset: /{dataset}/… or a {dataset}.<gateway> host'));
    const rest = route.rest;
    const method = req.method;
    const allow = (methods: string, handler: RequestHandler) => {
      if (!methods.split(',').includes(method)) {
        res.setHeader('allow', methods);
        return next(new ApiError(405, 'METHOD_NOT_ALLOWED', `${method} is not allowed here; use ${methods}`));
      }
      if (method === 'POST') {
        if (!req.headers['content-type']) return next(new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', 'send the body as application/json'));
        if (!req.is(['application/json', 'application/*+json'])) {
          return next(new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', `Content-Type "${String(req.headers['content-type']).slice(0, 100)}" is not accepted; send application/json`));
        }
        return json(req, res, (err?: unknown) => {
          if (err) return next(err);
          if (req.rawBody === undefined || req.rawBody.length === 0) return next(badRequest('INVALID_BODY', 'the request needs a JSON body', [{ path: '$', message: 'empty body' }]));
          if (!deps.bodyFirewall) return handler(req, res, next);
          return deps.bodyFirewall(req, res, (fwErr?: unknown) => (fwErr ? next(fwErr) : handler(req, res, next)));
        });
      }
      return handler(req, res, next);
    };
    if (rest.length === 0) return allow('POST', structured);
    if (rest.length === 1 && rest[0] === 'echo') return allow('GET', echo);
    if (rest.length === 1 && rest[0] === 'raw-query') return allow('POST', rawQuery);
    if (rest.length === 2) return allow('GET,HEAD', readOne);
    return next(new ApiError(404, 'NOT_FOUND', `no endpoint at ${req.path.slice(0, 200)}`));
  });

  app.use(errorHandler());
  return app;
}

async function prepareDatasetRequest(deps: AppDeps, req: Request): Promise<DatasetRequest> {
  const route = req.res!.locals.route as GatewayRoute;
  const env = deps.store.environment;
  if (!env) throw new ApiError(503, 'NOT_READY', 'the data plane has no environment config yet');
  const dataset = deps.engine.dataset(route.datasetId!);
  const caller = await deps.authenticate({ authkind: route.authkind, authorization: req.headers.authorization }, env, dataset);
  checkAddressingHeaders(req.headers, env, dataset);
  const ctx = statementContext(req.headers, env);
  return { route, env, dataset, caller, ctx };
}

function describeState(store: ConfigStore, id: string) {
  const state = store.dataset(id)!;
  if (state.status === 'failed') return { status: state.status, generation: state.config.generation, problem: state.problem };
  if (state.status === 'ready' && state.warning) return { status: state.status, generation: state.config.generation, warning: state.warning };
  return { status: state.status, generation: state.config.generation };
}
