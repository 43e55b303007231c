/**
 * Which PostgreSQL failures mean "the store cannot be reached right now" rather than "this request
 * is wrong": the connection was refused, reset or ended, the server is starting up or shutting
 * down, or it has no connection slot left. Those become the store outcome `unavailable` (the API's 503, retryable);
 * everything else keeps its own mapping.
 */
import { StoreError } from '../../engine/contract.js';

/** SQLSTATEs of an unavailable server: connection exceptions, admin/crash shutdown, cannot connect now, too many connections. */
const UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '53300']);
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNABORTED']);
/** pg's own messages for a connection that died or never came up (they carry no code). */
const PG_CONNECTION_MESSAGES = /Connection terminated|connection error|not queryable|timeout exceeded when trying to connect|Client was closed|Cannot use a pool after calling end/i;

export function isConnectionFailure(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (typeof code === 'string') {
    if (UNAVAILABLE_STATES.has(code) || code.startsWith('08') || NETWORK_CODES.has(code)) return true;
  }
  if (err instanceof AggregateError) return err.errors.some(isConnectionFailure);
  return typeof message === 'string' && PG_CONNECTION_MESSAGES.test(message);
}

/** The failure as a retryable store outcome, or undefined when it is something else. */
export function outageOf(err: unknown): StoreError | undefined {
  if (err instanceof StoreError) return err.failure.kind === 'unavailable' ? err : undefined;
  if (!isConnectionFailure(err)) return undefined;
  const { code } = err as { code?: string };
  return new StoreError({ kind: 'unavailable', detail: code ? `PostgreSQL: ${code}` : 'PostgreSQL connection lost' });
}
