/**
 * The dataset endpoints, as a table: what follows the dataset in the path (`/{dataset}/…`, or the
 * whole path on a `{dataset}.<gateway>` host), the methods each takes, and the handler's name.
 * Pure: `matchRoute` picks the first route whose segments match (literal segments before
 * variables, so `/echo` is no schema); variables come back by name.
 *
 * Schema names always contain a dot (model SCHEMA_NAME_PATTERN), so the literal words below can
 * never be a schema's name.
 */
import { WeakCache } from '../weak-cache.js';

export const DATASET_ROUTES = [
  { name: 'structured', path: [], methods: 'POST' },
  { name: 'echo', path: ['echo'], methods: 'GET' },
  { name: 'openapi', path: ['openapi'], methods: 'GET,HEAD' },
  // Swagger UI. It and GraphiQL (GET on graphql) are pages, served before authentication (app.ts):
  // they ask for the credentials and send them with every request they make.
  { name: 'docs', path: ['docs'], methods: 'GET,HEAD' },
  // GraphQL queries by POST; GET is the GraphiQL page (Accept: text/html). The WebSocket upgrade on
  // the same path is taken by the server (graphql/websocket.ts).
  { name: 'graphql', path: ['graphql'], methods: 'GET,HEAD,POST' },
  // The spec: raw SQL exists on the iam gateway only, refused before authentication elsewhere.
  { name: 'rawQuery', path: ['raw-query'], methods: 'POST', iamOnly: true },
  { name: 'namedQuery', path: ['queries', ':query'], methods: 'GET,HEAD' },
  { name: 'list', path: [':schema'], methods: 'GET,HEAD' },
  { name: 'read', path: [':schema', ':id'], methods: 'GET,HEAD' },
  { name: 'link', path: [':schema', ':id', ':link'], methods: 'GET,HEAD' },
] as const satisfies readonly DatasetRoute[];

export interface DatasetRoute {
  name: string;
  /** Literal segments, or `:name` for a variable one. */
  path: readonly string[];
  /** Comma-separated, as the Allow header lists them. */
  methods: string;
  iamOnly?: boolean;
}

export type RouteName = (typeof DATASET_ROUTES)[number]['name'];

export interface RouteMatch {
  route: (typeof DATASET_ROUTES)[number];
  params: Record<string, string>;
}

export function matchRoute(rest: readonly string[], routes: readonly DatasetRoute[] = DATASET_ROUTES): RouteMatch | undefined {
  for (const { route, names } of compiledRoutes(routes)) {
    if (names.length !== rest.length) continue;
    let matched = true;
    for (let i = 0; i < rest.length && matched; i++) {
      if (names[i] === undefined) matched = route.path[i] === rest[i];
    }
    if (!matched) continue;
    // Keys are the route's own variable names (never input), so a plain object is safe; values are data.
    const params: Record<string, string> = {};
    for (let i = 0; i < rest.length; i++) {
      const name = names[i];
      if (name !== undefined) params[name] = rest[i];
    }
    return { route: route as RouteMatch['route'], params };
  }
  return undefined;
}

/** Each route with its variables' names by position (undefined for a literal segment), worked out once per route table. */
interface CompiledRoute {
  route: DatasetRoute;
  names: readonly (string | undefined)[];
}

const compiled = new WeakCache<readonly DatasetRoute[], readonly CompiledRoute[]>();

function compiledRoutes(routes: readonly DatasetRoute[]): readonly CompiledRoute[] {
  let list = compiled.get(routes);
  if (!list) {
    list = routes.map((route) => ({ route, names: route.path.map((segment) => (segment.startsWith(':') ? segment.slice(1) : undefined)) }));
    compiled.set(routes, list);
  }
  return list;
}
