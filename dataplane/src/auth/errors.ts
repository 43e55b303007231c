/**
 * Authentication failures. `code` is a stable UPPER_SNAKE reason; `message` tells the caller what
 * to do about it. Neither ever contains the credential (token or header value) itself.
 */

export type AuthErrorCode =
  /** No Authorization header, and the dataset does not serve anonymous callers. */
  | 'MISSING_CREDENTIALS'
  /** The Authorization scheme does not belong to this gateway (Bearer on iam, Proxy on public). */
  | 'WRONG_SCHEME'
  /** The Authorization value is not of the form `<scheme> <credential>` or the credential is invalid. */
  | 'MALFORMED_CREDENTIALS'
  /** iam: the principal is not in the dataset's `auth.iam.principals`. */
  | 'PRINCIPAL_NOT_ALLOWED'
  | 'TOKEN_EXPIRED'
  /** `nbf` (or `iat`) lies in the future, beyond the clock skew tolerance. */
  | 'TOKEN_NOT_YET_VALID'
  | 'WRONG_ISSUER'
  | 'WRONG_AUDIENCE'
  | 'ALGORITHM_NOT_ALLOWED'
  | 'BAD_SIGNATURE'
  /** No key of the identity provider matches the token's `kid` (after one refetch of the JWKS). */
  | 'UNKNOWN_KEY'
  /** Not a compact JWS, or its header or claims are not valid JSON of the expected types. */
  | 'MALFORMED_TOKEN'
  /** A claim the service needs (`sub`, `exp`, `iss`) is absent. */
  | 'MISSING_CLAIM'
  /** public: the token's `sub` / `cognito:username` is not in the dataset's `auth.public.subjects`. */
  | 'SUBJECT_NOT_ALLOWED'
  /** public: the dataset has `auth.public.enabled: false`. */
  | 'PUBLIC_ACCESS_DISABLED'
  /** The gateway (iam or public) is disabled in the environment. */
  | 'GATEWAY_DISABLED'
  /** public: the environment has no identity provider, so no token can be verified. */
  | 'IDENTITY_PROVIDER_NOT_CONFIGURED'
  /** The identity provider's JWKS could not be fetched or is invalid (a server-side problem, 503). */
  | 'IDENTITY_PROVIDER_UNAVAILABLE'
  /** iam, trust verified: a Proxy assertion from an address outside spec.gateways.iam.proxyFrom. */
  | 'PROXY_NOT_TRUSTED'
  /** iam, trust verified: the TokenReview did not authenticate the ServiceAccount token (invalid, expired, revoked). */
  | 'TOKEN_NOT_AUTHENTICATED'
  /** iam, trust verified: the token authenticates a user that is not a ServiceAccount. */
  | 'NOT_A_SERVICE_ACCOUNT'
  /** The Kubernetes API server did not answer the TokenReview (a server-side problem, 503). */
  | 'TOKEN_REVIEW_UNAVAILABLE'
  /** The function gateway: the caller's ServiceAccount matches none of spec.functionGateway.invokers. */
  | 'INVOKER_NOT_ALLOWED';

export type AuthErrorStatus = 401 | 403 | 503;

export class AuthError extends Error {
  constructor(
    readonly status: AuthErrorStatus,
    readonly code: AuthErrorCode,
    message: string,
    /** The `WWW-Authenticate` challenge to send with a 401 (RFC 7235), when there is one. */
    readonly challenge?: string,
  ) {
    super(message);
    this.name = 'AuthError';
  }

  /** The REST error body, the same shape as every other error response. */
  toBody(requestId: string) {
    return { error: { code: this.code, message: this.message, details: [] as unknown[] }, requestId };
  }
}

export const unauthorized = (code: AuthErrorCode, message: string, challenge?: string) => new AuthError(401, code, message, challenge);
export const forbidden = (code: AuthErrorCode, message: string) => new AuthError(403, code, message);

/** Shortens caller-supplied text (a principal, a subject) for an error message. */
export function quote(text: string, max = 200): string {
  return JSON.stringify(text.length > max ? `${text.slice(0, max)}…` : text);
}
