/**
 * Kubernetes ServiceAccount tokens, the pure part: what a token claims before anyone vouches for it
 * (used only to refuse early and to bound a cache, never to accept), and the verdict a TokenReview
 * status amounts to. The signature check and the TokenReview call are token-review.ts.
 */
import type { AuthErrorCode } from './errors.js';

export const SERVICE_ACCOUNT_PREFIX = 'system:serviceaccount:';
/** Larger than any ServiceAccount token the API server issues; a longer one is refused unread. */
export const MAX_SERVICE_ACCOUNT_TOKEN_LENGTH = 16 * 1024;

/** The claims of a JWT's payload, decoded but NOT verified; undefined when it is no JWT. */
export function unverifiedClaims(token: string): Record<string, unknown> | undefined {
  if (token.length > MAX_SERVICE_ACCOUNT_TOKEN_LENGTH) return undefined;
  const parts = token.split('.');
  if (parts.length !== 3 || !/^[A-Za-z0-9_-]+$/.test(parts[1])) return undefined;
  try {
    const claims: unknown = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
    return claims && typeof claims === 'object' && !Array.isArray(claims) ? (claims as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether a bearer token looks like a ServiceAccount token: bound tokens carry a `kubernetes.io`
 * claim, legacy Secret-based ones `kubernetes.io/serviceaccount/namespace`. Only routes a request
 * to the iam gateway when the host names no gateway; the gateway then verifies it.
 */
export function looksLikeServiceAccountToken(authorization: string | undefined): boolean {
  if (!authorization || !/^bearer[ \t]/i.test(authorization)) return false;
  const claims = unverifiedClaims(authorization.slice(7).trim());
  return claims !== undefined && ('kubernetes.io' in claims || 'kubernetes.io/serviceaccount/namespace' in claims);
}

export type EarlyRefusal = { code: 'MALFORMED_TOKEN' | 'TOKEN_EXPIRED' | 'WRONG_AUDIENCE'; message: string };

/**
 * Refusals that need no TokenReview: not a JWT, already expired, or made for another audience.
 * The claims are unverified, so they may only refuse: a forged `exp` or `aud` hurts its forger.
 */
export function earlyRefusal(token: string, audiences: readonly string[], nowSeconds: number): EarlyRefusal | undefined {
  const claims = unverifiedClaims(token);
  if (!claims) return { code: 'MALFORMED_TOKEN', message: 'the bearer token is not a Kubernetes ServiceAccount token (a JWT of three base64url parts)' };
  if (typeof claims.exp === 'number' && claims.exp <= nowSeconds) {
    return { code: 'TOKEN_EXPIRED', message: `the ServiceAccount token expired at ${new Date(claims.exp * 1000).toISOString()}; request a new one (projected tokens are renewed by the kubelet)` };
  }
  const aud = typeof claims.aud === 'string' ? [claims.aud] : Array.isArray(claims.aud) ? claims.aud.filter((a): a is string => typeof a === 'string') : [];
  if (!aud.some((a) => audiences.includes(a))) {
    return {
      code: 'WRONG_AUDIENCE',
      message: `the ServiceAccount token is not meant for this service: its audience must be one of ${audiences.map((a) => JSON.stringify(a)).join(', ')} (a projected token's "audience")`,
    };
  }
  return undefined;
}

/**
 * Until when a verdict on this token may be reused: the token's own `exp` (unverified, so it only
 * shortens the bound), and never more than `maxMs` from now.
 */
export function cacheUntil(token: string, nowMs: number, maxMs: number): number {
  const exp = unverifiedClaims(token)?.exp;
  const bound = nowMs + maxMs;
  return typeof exp === 'number' && Number.isFinite(exp) ? Math.min(bound, exp * 1000) : bound;
}

/** The `status` of a TokenReview (authentication.k8s.io/v1). */
export interface TokenReviewStatus {
  authenticated?: boolean;
  user?: { username?: string; uid?: string; groups?: string[] };
  audiences?: string[];
  error?: string;
}

export type Verdict =
  | {
      ok: true;
      principal: string;
      namespace: string;
      name: string;
      /** The token's expiry, seconds (set once the API server vouched for it). */
      exp?: number;
      /** Until when (ms) the verdict may be reused (set by the cache). */
      until?: number;
    }
  | Refusal;

export type Refusal = {
  ok: false;
  code: Extract<
    AuthErrorCode,
    | EarlyRefusal['code']
    | 'TOKEN_NOT_AUTHENTICATED'
    | 'NOT_A_SERVICE_ACCOUNT'
    | 'BAD_SIGNATURE'
    | 'UNKNOWN_KEY'
    | 'WRONG_ISSUER'
    | 'MISSING_CLAIM'
    | 'TOKEN_NOT_YET_VALID'
    | 'ALGORITHM_NOT_ALLOWED'
  >;
  message: string;
};

const SA_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/** What a TokenReview's status says about a token presented for `audiences`. */
export function verdictOf(status: TokenReviewStatus, audiences: readonly string[]): Verdict {
  if (status.authenticated !== true) {
    const why = status.error ? `: ${status.error.slice(0, 300)}` : '';
    return { ok: false, code: 'TOKEN_NOT_AUTHENTICATED', message: `the Kubernetes API server did not accept the ServiceAccount token${why}` };
  }
  // The API server answers with the audiences the token is valid for, out of those asked about.
  if (!(status.audiences ?? []).some((a) => audiences.includes(a))) {
    return { ok: false, code: 'WRONG_AUDIENCE', message: `the token is not valid for the audience ${audiences.map((a) => JSON.stringify(a)).join(', ')}` };
  }
  const username = status.user?.username ?? '';
  const [namespace, name, ...rest] = username.startsWith(SERVICE_ACCOUNT_PREFIX) ? username.slice(SERVICE_ACCOUNT_PREFIX.length).split(':') : [];
  if (!namespace || !name || rest.length || !SA_NAME.test(namespace) || !SA_NAME.test(name)) {
    return { ok: false, code: 'NOT_A_SERVICE_ACCOUNT', message: 'the token authenticates a user that is not a ServiceAccount; the iam gateway takes ServiceAccount tokens only' };
  }
  return { ok: true, principal: username, namespace, name };
}
