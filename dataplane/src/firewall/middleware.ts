/**
 * Express binding of the API gateway firewall. Answers a blocked request with
 * `403 {"error":{"code":"FIREWALL_BLOCKED","message":…,"details":[{"rule":"<id>"}]},"requestId":…}`
 * and logs the rule id, client address and method — never the URL, headers or body, which may hold
 * the very payload (a `${jndi:` string is best kept out of log pipelines).
 *
 * Two mount points:
 * - `firewallMiddleware` before the body is read: IP rules, request line, headers, Content-Length
 *   (and the body too, if `req.rawBody` is already there);
 * - `firewallBodyMiddleware` after a body parser that keeps the raw bytes in `req.rawBody`
 *   (`express.json({ verify: (req, _res, buf) => { req.rawBody = buf } })`): the body rules;
 *   a parser that decoded them already (strict UTF-8) may leave that text in `req.rawBodyText`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { resolveClientAddress } from './client-address.js';
import { compileFirewall, type FirewallConfig } from './config.js';
import { inspect, type FirewallVerdict, type InspectionScope } from './inspect.js';

export interface FirewallLogger {
  warn(object: Record<string, unknown>, message: string): void;
}

type Middleware = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

export function firewallMiddleware(getConfig: () => FirewallConfig, logger: FirewallLogger): Middleware {
  return middleware(getConfig, logger, (hasBody) => (hasBody ? 'all' : 'request'));
}

/** Body rules only; a request without `req.rawBody` passes untouched. */
export function firewallBodyMiddleware(getConfig: () => FirewallConfig, logger: FirewallLogger): Middleware {
  return middleware(getConfig, logger, (hasBody) => (hasBody ? 'body' : undefined));
}

/** `req.rawBodyText`: the body parser's own strict decoding of `req.rawBody` (the same text), so it is not decoded twice. */
const decodedAlready = (req: IncomingMessage): string | undefined => {
  const text = (req as unknown as { rawBodyText?: unknown }).rawBodyText;
  return typeof text === 'string' ? text : undefined;
};

function middleware(getConfig: () => FirewallConfig, logger: FirewallLogger, scopeFor: (hasBody: boolean) => InspectionScope | undefined): Middleware {
  return function firewall(req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void): void {
    let verdict: FirewallVerdict | undefined;
    let clientAddress = '';
    try {
      const raw = (req as unknown as { rawBody?: unknown }).rawBody;
      const bodyText = typeof raw === 'string' ? raw : Buffer.isBuffer(raw) ? (decodedAlready(req) ?? raw.toString('utf8')) : undefined;
      const scope = scopeFor(bodyText !== undefined);
      if (!scope) {
        next();
        return;
      }
      const config = getConfig();
      clientAddress = resolveClientAddress(req.socket?.remoteAddress, req.headers['x-forwarded-for'], compileFirewall(config).trustedProxies);
      const bodyBytes = typeof raw === 'string' ? Buffer.byteLength(raw) : Buffer.isBuffer(raw) ? raw.length : undefined;
      const rawUrl = (req as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url ?? '/';
      verdict = inspect({ method: req.method ?? 'GET', rawUrl, headers: req.headers, clientAddress, bodyText, bodyBytes }, config, scope);
    } catch (err) {
      next(err); // fail closed: an unusable firewall config answers 500, never lets requests through
      return;
    }
    if (!verdict) {
      next();
      return;
    }
    const requestId: string = (req as unknown as { id?: string }).id ?? '';
    logger.warn({ rule: verdict.ruleId, requestId, clientAddress, method: req.method }, 'request blocked by the API gateway firewall');
    // Plain node response calls, so the middleware serves node:http and Express alike.
    const body = JSON.stringify({
      error: { code: 'FIREWALL_BLOCKED', message: `the API gateway firewall blocked this request: ${verdict.message}`, details: [{ rule: verdict.ruleId }] },
      requestId,
    });
    res.statusCode = 403;
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.setHeader('content-length', Buffer.byteLength(body));
    res.end(body);
  };
}
