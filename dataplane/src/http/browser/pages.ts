/**
 * The browser pages: Swagger UI over a dataset's (or the admin API's) OpenAPI document, and
 * GraphiQL over a dataset's GraphQL endpoint. Pure HTML rendering plus the Content-Security-Policy
 * that confines them to the data plane's own origin; the scripts and styles they load are served
 * by the data plane itself (assets.ts).
 */
import type { EnvironmentConfig } from '../../../../model/types.js';
import type { Authkind } from '../../front-door/gateway.js';
import { assetUrl, type AssetName } from './assets.js';

/**
 * What a page suggests for the Authorization value, before anyone typed one: the scheme of the
 * gateway the page was opened on (its host's label; none on a host without one, such as
 * 127.0.0.1), and on a development environment the example principal its README names. Never
 * anything about a dataset: the page answers the same for every dataset name.
 */
export interface CredentialHint {
  gateway?: Authkind;
  /** Only on an Environment with the development issuer (`npm start`): its first admin principal. */
  principal?: string;
}

/** The hint for a page on `gateway` (known from the host's label, or undefined) in `env`. */
export function credentialHint(gateway: Authkind | undefined, env: EnvironmentConfig | undefined): CredentialHint {
  const principal = env?.identityProvider?.development ? env.admin?.principals[0] : undefined;
  return { gateway, ...(principal ? { principal } : {}) };
}

export function authorizationExample(hint: CredentialHint): { template: string; placeholder: string } {
  const proxy = `Proxy ${hint.principal ?? '<principal>'}`;
  if (hint.gateway === 'public') return { template: 'Bearer <token>', placeholder: 'Bearer <token>' };
  return { template: proxy, placeholder: hint.gateway === 'iam' ? proxy : `${proxy}  or  Bearer <token>` };
}

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

function page(input: { title: string; bodyClass: string; data: Record<string, string>; styles: AssetName[]; scripts: AssetName[]; main: string; hint: string; credentials: CredentialHint; prompt?: string }): string {
  const example = authorizationExample(input.credentials);
  const data = Object.entries({ ...input.data, 'authorization-example': example.template })
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
<label>Authorization <input id="das-authorization" name="authorization" type="password" spellcheck="false" placeholder="${escape(example.placeholder)}"></label>
<button type="submit">Use</button>
<span class="das-note">${escape(input.hint)}</span>
</form>
<div id="${input.main}">${input.prompt ?? ''}</div>
${input.scripts.map((s) => `<script src="${assetUrl(s)}"></script>`).join('\n')}
</body>
</html>
`;
}

const HINT = 'sent with every request of this page; kept only in this page';

/**
 * What Swagger UI's place shows until credentials are given: the document is served to
 * authenticated callers only, so the page asks instead of fetching it and failing.
 */
function credentialsPrompt(what: string, credentials: CredentialHint, note?: string): string {
  const example = authorizationExample(credentials);
  return `<section class="das-prompt" role="status"><h2>Enter credentials</h2>
<p>${escape(what)} is served to authenticated callers only. Type the Authorization value into the field above — for example <code>${escape(example.template)}</code>${credentials.gateway ? '' : ' (iam gateway) or <code>Bearer &lt;token&gt;</code> (public gateway)'} — and press <b>Use</b>.</p>${note ? `\n<p>${escape(note)}</p>` : ''}</section>`;
}

/** Swagger UI over the OpenAPI document at `openapiPath` (a path on this origin); fetched once credentials are given. */
export function swaggerPage(title: string, openapiPath: string, credentials: CredentialHint = {}, note?: string): string {
  return page({
    title: `${title} — Swagger UI`,
    bodyClass: 'das-swagger',
    data: { openapi: openapiPath },
    styles: ['swagger-ui.css', 'pages.css'],
    scripts: ['swagger-ui-bundle.js', 'swagger-init.js'],
    main: 'swagger-ui',
    hint: HINT,
    credentials,
    prompt: credentialsPrompt(`The API definition of the ${title}`, credentials, note),
  });
}

/**
 * GraphiQL for the GraphQL endpoint at `graphqlPath` (queries by POST, subscriptions by WebSocket
 * at the same path), its headers editor holding the Authorization template of this gateway.
 */
export function graphiqlPage(title: string, graphqlPath: string, credentials: CredentialHint = {}): string {
  return page({
    credentials,
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
