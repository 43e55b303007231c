/**
 * The browser pages: Swagger UI over a dataset's (or the admin API's) OpenAPI document, and
 * GraphiQL over a dataset's GraphQL endpoint. Pure HTML rendering plus the Content-Security-Policy
 * that confines them to the data plane's own origin; the scripts and styles they load are served
 * by the data plane itself (assets.ts).
 */
import { assetUrl, type AssetName } from './assets.js';

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * Only the data plane's own origin: scripts and styles are files from `/_assets/` (no inline
 * script or style: the styles Swagger UI and GraphiQL set from script are allowed without
 * 'unsafe-inline', and the browser test fails on any violation); fonts and icons are `data:` URLs
 * inside their CSS.
 * The WebSocket of GraphiQL's subscriptions is the same host (`connect-src` names it, since
 * older browsers do not count ws: as 'self').
 */
export function pageSecurityPolicy(host: string | undefined, secure: boolean): string {
  const plain = host && /^[a-z0-9.-]{1,253}(:[0-9]{1,5})?$/i.test(host) ? host.toLowerCase() : undefined;
  const socket = plain ? ` ${secure ? 'wss' : 'ws'}://${plain}` : '';
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    `connect-src 'self'${socket}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** Headers of every page answer. */
export function pageHeaders(host: string | undefined, secure: boolean): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': pageSecurityPolicy(host, secure),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  };
}

function page(input: { title: string; bodyClass: string; data: Record<string, string>; styles: AssetName[]; scripts: AssetName[]; main: string; hint: string }): string {
  const data = Object.entries(input.data)
    .map(([k, v]) => ` data-${k}="${escape(v)}"`)
    .join('');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(input.title)}</title>
<link rel="icon" href="data:,">
${input.styles.map((s) => `<link rel="stylesheet" href="${assetUrl(s)}">`).join('\n')}
</head>
<body class="${input.bodyClass}"${data}>
<form id="das-auth" class="das-auth" autocomplete="off">
<label>Authorization <input id="das-authorization" name="authorization" type="password" spellcheck="false" placeholder="Proxy &lt;principal&gt;  or  Bearer &lt;token&gt;"></label>
<button type="submit">Use</button>
<span class="das-note">${escape(input.hint)}</span>
</form>
<div id="${input.main}"></div>
${input.scripts.map((s) => `<script src="${assetUrl(s)}"></script>`).join('\n')}
</body>
</html>
`;
}

const HINT = 'sent with every request of this page; kept only in this page';

/** Swagger UI over the OpenAPI document at `openapiPath` (a path on this origin). */
export function swaggerPage(title: string, openapiPath: string): string {
  return page({ title: `${title} — Swagger UI`, bodyClass: 'das-swagger', data: { openapi: openapiPath }, styles: ['swagger-ui.css', 'pages.css'], scripts: ['swagger-ui-bundle.js', 'swagger-init.js'], main: 'swagger-ui', hint: HINT });
}

/** GraphiQL for the GraphQL endpoint at `graphqlPath` (queries by POST, subscriptions by WebSocket at the same path). */
export function graphiqlPage(title: string, graphqlPath: string): string {
  return page({
    title: `${title} — GraphiQL`,
    bodyClass: 'das-graphiql',
    data: { graphql: graphqlPath },
    styles: ['graphiql.css', 'pages.css'],
    scripts: ['react.js', 'react-dom.js', 'graphiql.js', 'graphql-ws.js', 'graphiql-init.js'],
    main: 'graphiql',
    hint: `${HINT} (subscriptions: in connection_init)`,
  });
}

/** Browsers ask for pages with `Accept: text/html`; API clients do not. */
export function wantsHtml(accept: string | undefined): boolean {
  return typeof accept === 'string' && /(^|,)\s*text\/html\s*(;|,|$)/i.test(accept);
}
