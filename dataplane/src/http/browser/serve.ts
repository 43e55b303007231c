/**
 * Answers for the browser pages and their static files (the I/O edge of pages.ts and assets.ts).
 * Pages need no credentials: they hold nothing but markup and ask for the Authorization value.
 */
import { ApiError, MethodNotAllowed } from '../../engine/errors.js';
import type { Exchange } from '../../front-door/exchange.js';
import { ASSET_PREFIX, assetFor } from './assets.js';
import { graphiqlPage, pageHeaders, swaggerPage, wantsHtml, type CredentialHint } from './pages.js';

const secure = (x: Exchange) => String(x.req.headers['x-forwarded-proto'] ?? '').split(',')[0].trim().toLowerCase() === 'https';

export function sendPage(x: Exchange, html: string): void {
  const body = Buffer.from(html);
  x.res.writeHead(200, { ...pageHeaders(x.req.headers.host, secure(x)), 'content-length': body.length });
  x.res.end(x.req.method === 'HEAD' ? undefined : body);
}

/** The path up to and including the dataset (or empty on a dataset host): `/demo/docs` → `/demo`. */
const base = (path: string) => path.replace(/\/+$/, '').replace(/\/[^/]*$/, '');

/** `GET /{dataset}/docs` (Swagger UI) and `GET /{dataset}/graphql` with Accept: text/html (GraphiQL). */
export function sendDatasetPage(x: Exchange, page: 'docs' | 'graphql', datasetId: string, credentials: CredentialHint): void {
  const at = base(x.path);
  if (page === 'docs') return sendPage(x, swaggerPage(`dataset ${datasetId}`, `${at}/openapi`, credentials));
  if (!wantsHtml(x.req.headers.accept)) {
    throw new ApiError(406, 'NOT_ACCEPTABLE', 'GET here serves the GraphiQL page (Accept: text/html); send GraphQL queries with POST and subscriptions over WebSocket', [
      { path: 'header:accept', message: 'not text/html' },
    ]);
  }
  sendPage(x, graphiqlPage(`dataset ${datasetId}`, `${at}/graphql`, credentials));
}

export function isAssetPath(path: string): boolean {
  return path.startsWith(ASSET_PREFIX);
}

/** A file under `/_assets/<version>/`: cached for a year (the version changes with the contents). */
export function sendAsset(x: Exchange): void {
  const asset = assetFor(x.path);
  if (!asset) throw new ApiError(404, 'NOT_FOUND', `no asset at ${x.path.slice(0, 200)}`);
  if (x.req.method !== 'GET' && x.req.method !== 'HEAD') throw new MethodNotAllowed(x.req.method ?? '', 'GET,HEAD');
  x.res.writeHead(200, {
    'content-type': asset.type,
    'content-length': asset.body.length,
    'cache-control': 'public, max-age=31536000, immutable',
    'x-content-type-options': 'nosniff',
  });
  x.res.end(x.req.method === 'HEAD' ? undefined : asset.body);
}
