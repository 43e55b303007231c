/**
 * The handlers of the dataset endpoints (routes.ts names them): each translates its wire format to
 * an engine call and back, nothing more. The front door (app.ts) has already checked the method,
 * the gateway, the credentials and the conventional headers, and read the body.
 */
import { isVersionNumber, MAX_VERSION, nameList, parseConsistency, parseStructuredRequest } from '../engine/actions.js';
import { argumentsFromText } from '../engine/queries.js';
import { ApiError, badRequest } from '../engine/errors.js';
import type { AppDeps, Handler } from './app.js';
import { echoResponse } from './echo.js';
import { sendJson } from '../front-door/exchange.js';
import { cachedOpenApiBody, DOCUMENT_CACHE_HEADERS, knownAddresses, serversFor, withServers } from './openapi.js';
import { parseGraphQLRequest, runGraphQLQuery } from '../graphql/http.js';
import type { RouteName } from './routes.js';

/** Every endpoint but the Swagger UI page, which app.ts serves before authentication (browser/serve.ts). */
export function datasetHandlers(deps: AppDeps): Record<Exclude<RouteName, 'docs'>, Handler> {
  // The read, the structured request and GraphQL are not async: the engine's promise, answered in
  // one `then` (no frame of their own). The front door answers a refusal thrown here as it answers
  // a rejection.
  const read: Handler = (x, d, { schema, id }) => {
    const query = x.query;
    for (const key in query) {
      if (key !== 'expand' && key !== 'version' && key !== 'projection' && key !== 'consistency') {
        throw badRequest('UNKNOWN_PARAMETER', `unknown query parameter "${key}"; accepted: expand, version, projection, consistency`, [{ path: `query:${key}`, message: 'unknown parameter' }]);
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
    const action = {
      schema,
      id,
      version,
      expand: nameList(query.expand, 'query:expand', 'expand'),
      projection: query.projection === undefined ? undefined : nameList(query.projection, 'query:projection', 'projection'),
      consistency: parseConsistency(query.consistency, 'query:consistency'),
    };
    return deps.engine.read(d.dataset, action, d.ctx, 'query').then((record) => sendJson(x.res, 200, record));
  };

  /** GET list and link pages: filter, sort, limit, nextToken and expand as query parameters. */
  const page = (kind: 'list' | 'link'): Handler => async (x, d, { schema, id, link }) => {
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
    const result = kind === 'list' ? await deps.engine.list(d.dataset, { schema, ...request }, d.ctx, at) : await deps.engine.link(d.dataset, { schema, id, link, ...request }, d.ctx, at);
    sendJson(x.res, 200, result);
  };

  /** `GET /{dataset}/queries/{name}?<argument>=…&limit=&nextToken=`: a named query; every other parameter is an argument. */
  const namedQuery: Handler = async (x, d, { query: name }) => {
    const texts: Record<string, string> = {};
    for (const [key, value] of Object.entries(x.query)) {
      if (typeof value !== 'string') throw badRequest('INVALID_PARAMETER', `query parameter "${key}" must be given once`, [{ path: `query:${key}`, message: 'repeated' }]);
      if (key !== 'limit' && key !== 'nextToken') Object.defineProperty(texts, key, { value, enumerable: true });
    }
    const limit = x.query.limit as string | undefined;
    if (limit !== undefined && !/^[0-9]{1,7}$/.test(limit)) throw badRequest('INVALID_LIMIT', '"limit" must be a whole number', [{ path: 'query:limit', message: 'not a whole number' }]);
    const action = { schema: name, arguments: argumentsFromText(d.dataset, name, texts), limit: limit === undefined ? undefined : Number(limit), nextToken: x.query.nextToken as string | undefined };
    sendJson(x.res, 200, await deps.engine.query(d.dataset, action, d.ctx, (f) => (f === 'schema' ? 'path:name' : `query:${f}`), (key) => `query:${key}`));
  };

  const structured: Handler = (x, d) => deps.engine.execute(d.dataset, parseStructuredRequest(x.body), d.ctx).then((result) => sendJson(x.res, result.status, result.body));

  const echo: Handler = async (x, d) => sendJson(x.res, 200, echoResponse(x, d.caller));

  /** The dataset's OpenAPI document (openapi.ts): built once per config generation; `servers` from this request's host. */
  const openapi: Handler = async (x, d) => {
    for (const key of Object.keys(x.query)) throw badRequest('UNKNOWN_PARAMETER', `unknown query parameter "${key}"; none is accepted`, [{ path: `query:${key}`, message: 'unknown parameter' }]);
    const servers = serversFor(knownAddresses(deps), d.dataset, d.env);
    for (const [name, value] of Object.entries(DOCUMENT_CACHE_HEADERS)) x.res.setHeader(name, value);
    // The Transaction paths only where the location takes bulk loads (its driver says so).
    const transactions = Boolean(deps.engine.transactions && deps.driverFor(d.dataset).capabilities.bulkLoad);
    sendJson(x.res, 200, withServers(cachedOpenApiBody(d.dataset, d.env, { transactions }), servers));
  };

  const rawQuery: Handler = async (x, d) => {
    if (!deps.rawQuery) throw new ApiError(501, 'NOT_AVAILABLE', 'the raw SQL endpoint is not available on this data plane');
    const whenServed = () => void deps.engine.dataset(d.dataset.id);
    const rows = await deps.rawQuery({ dataset: d.dataset, authkind: d.route.authkind, body: x.body, driver: deps.driverFor(d.dataset), ctx: d.ctx, whenServed });
    sendJson(x.res, 200, rows);
  };

  /** GraphQL queries and introspection (graphql/http.ts). */
  const graphql: Handler = (x, d) => runGraphQLQuery(deps.engine, d.dataset, parseGraphQLRequest(x.body), d.ctx, deps.queryLimits).then((answer) => sendJson(x.res, 200, answer));

  return { structured, echo, openapi, rawQuery, namedQuery, graphql, list: page('list'), read, link: page('link') };
}
