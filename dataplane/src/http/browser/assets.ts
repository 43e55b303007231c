/**
 * The browser pages' static files, served by the data plane itself (no CDN): Swagger UI, GraphiQL
 * with React, and the graphql-ws client from their npm packages, plus the pages' own small scripts
 * (scripts.ts). URLs carry a version (`/_assets/<version>/<name>`) that changes with the packages and
 * scripts, so the answers are cached for a year. Files are read once, on first request.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { OWN_FILES } from './scripts.js';

const require = createRequire(import.meta.url);

interface Asset {
  type: string;
  /** An npm package's file, or one of the pages' own texts. */
  from: { pkg: string; file: string } | { text: string };
}

const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

const ASSETS: Record<string, Asset> = {
  'swagger-ui-bundle.js': { type: JS, from: { pkg: 'swagger-ui-dist', file: 'swagger-ui-bundle.js' } },
  'swagger-ui.css': { type: CSS, from: { pkg: 'swagger-ui-dist', file: 'swagger-ui.css' } },
  'react.js': { type: JS, from: { pkg: 'react', file: 'umd/react.production.min.js' } },
  'react-dom.js': { type: JS, from: { pkg: 'react-dom', file: 'umd/react-dom.production.min.js' } },
  'graphiql.js': { type: JS, from: { pkg: 'graphiql', file: 'dist/index.umd.js' } },
  'graphiql.css': { type: CSS, from: { pkg: 'graphiql', file: 'dist/style.css' } },
  'graphql-ws.js': { type: JS, from: { pkg: 'graphql-ws', file: 'umd/graphql-ws.min.js' } },
  ...Object.fromEntries(Object.entries(OWN_FILES).map(([name, text]) => [name, { type: name.endsWith('.css') ? CSS : JS, from: { text } }])),
};

export type AssetName = keyof typeof ASSETS;

function packageDir(pkg: string): string {
  return dirname(require.resolve(`${pkg}/package.json`));
}

function packageVersion(pkg: string): string {
  return (JSON.parse(readFileSync(join(packageDir(pkg), 'package.json'), 'utf8')) as { version: string }).version;
}

let version: string | undefined;

/** Changes when any package or own script changes: the URL path segment that makes caching safe. */
export function assetVersion(): string {
  if (version) return version;
  const hash = createHash('sha256');
  for (const [name, asset] of Object.entries(ASSETS)) hash.update(`${name}\0${'pkg' in asset.from ? `${asset.from.pkg}@${packageVersion(asset.from.pkg)}` : asset.from.text}\0`);
  return (version = hash.digest('hex').slice(0, 12));
}

export const ASSET_PREFIX = '/_assets/';

export function assetUrl(name: AssetName): string {
  return `${ASSET_PREFIX}${assetVersion()}/${name}`;
}

const loaded = new Map<string, Buffer>();

/**
 * The answer for a path under `/_assets/`: the file for the current version, or undefined (a 404
 * for the caller). An old version's URL is a 404 too, so a stale page never mixes versions.
 */
export function assetFor(path: string): { type: string; body: Buffer } | undefined {
  const rest = path.slice(ASSET_PREFIX.length).split('/');
  if (rest.length !== 2 || rest[0] !== assetVersion() || !Object.hasOwn(ASSETS, rest[1])) return undefined;
  const asset = ASSETS[rest[1]];
  let body = loaded.get(rest[1]);
  if (!body) {
    body = 'pkg' in asset.from ? readFileSync(join(packageDir(asset.from.pkg), asset.from.file)) : Buffer.from(asset.from.text);
    loaded.set(rest[1], body);
  }
  return { type: asset.type, body };
}
