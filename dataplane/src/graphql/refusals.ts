/**
 * Refused WebSockets in the log: an upgrade answered with an HTTP error, or a `connection_init`
 * refused (4401, 4403). Without these lines a client that retries forever leaves no trace of why.
 * The credential itself is never logged: only the iam principal it names, or its scheme.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/** The caller's x-request-id when it is a UUID (as for REST), else a new one. */
export function upgradeRequestId(header: string | string[] | undefined): string {
  return typeof header === 'string' && UUID.test(header) ? header.toLowerCase() : randomUUID();
}

/** `Proxy alice` → `alice`; a token → `(bearer token)`; nothing → `(none)`. */
export function principalOf(authorization: string | undefined): string {
  if (!authorization?.trim()) return '(none)';
  const [scheme, ...rest] = authorization.trim().split(/\s+/);
  if (/^proxy$/i.test(scheme)) return rest.join(' ').slice(0, 200) || '(none)';
  return `(${scheme.slice(0, 20).toLowerCase()} token)`;
}

export interface Refusal {
  reqId: string;
  /** The HTTP status of a refused upgrade, or the close code of a refused connection_init. */
  status?: number;
  closeCode?: number;
  code?: string;
  reason: string;
  authorization: string | undefined;
  dataset?: string;
  gateway?: string;
}

/** Refused credentials are a warning (someone is knocking); a wrong address or protocol is info. */
export function logRefusal(logger: Logger, refusal: Refusal): void {
  const { authorization, ...fields } = refusal;
  const denied = [401, 403, 4401, 4403].includes(refusal.status ?? refusal.closeCode ?? 0);
  logger[denied ? 'warn' : 'info']({ ...fields, principal: principalOf(authorization) }, 'WebSocket refused');
}
