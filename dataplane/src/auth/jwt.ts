/**
 * Token verification for the `public` gateway: `Authorization: Bearer <token>`, a JWS-signed JWT
 * of the environment's identity provider (Amazon Cognito or any OIDC provider publishing a JWKS).
 *
 * What a token must satisfy:
 * - compact JWS (three base64url parts) of at most 16 KiB; JWE (encrypted) tokens are refused;
 * - `alg` in the provider's `algorithms` (default RS256, ES256); `none` and HS256/384/512 never,
 *   whatever the configuration says (an HMAC "signed" with the provider's public key would
 *   otherwise verify: the algorithm-confusion attack);
 * - signature by a key of the provider's JWKS, chosen by `kid` (a URL, fetched and cached, refetched
 *   at most once per cooldown when an unknown `kid` appears; or inline keys; or the development
 *   issuer's key);
 * - `iss` equal to the provider's issuer;
 * - `aud` (string or array) containing one of `audiences`; a token without `aud` (a Cognito access
 *   token) instead needs `client_id` in `audiences`;
 * - `exp` present and not past, `nbf` not in the future, `iat` not in the future, each with
 *   `clockSkewSeconds` of tolerance;
 * - `sub` present (a non-empty string): it becomes the caller id.
 *
 * The token itself never appears in an error message or a log line.
 */
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeProtectedHeader,
  jwtVerify,
  type CryptoKey,
  type JWTPayload,
  type JWTVerifyGetKey,
  type JWTVerifyOptions,
} from 'jose';
import type { DatasetConfig, EnvironmentConfig } from '../../../model/types.js';
import { parseAuthorization } from './authorization.js';
import { anonymousCaller, type Caller } from './caller.js';
import type { DevIssuer } from './dev-issuer.js';
import { AuthError, forbidden, quote, unauthorized, type AuthErrorCode } from './errors.js';
import { anyMatches, superPatterns } from './principals.js';

export type IdentityProviderConfig = NonNullable<EnvironmentConfig['identityProvider']>;

export interface TokenVerifierOptions {
  /** Required when the provider is `development: true`: the issuer whose key verifies tokens. */
  devIssuer?: DevIssuer;
  /** Minimum time between two JWKS fetches caused by an unknown `kid`. Default 30 s. */
  jwksCooldownMs?: number;
  /** Timeout of one JWKS fetch. Default 5 s. */
  jwksTimeoutMs?: number;
  /** How long fetched keys are used before they are fetched again. Default 10 min. */
  jwksCacheMaxAgeMs?: number;
}

export const MAX_TOKEN_LENGTH = 16 * 1024;
export const DEFAULT_JWKS_COOLDOWN_MS = 30_000;
export const DEFAULT_JWKS_TIMEOUT_MS = 5_000;
export const DEFAULT_JWKS_CACHE_MAX_AGE_MS = 600_000;
export const PUBLIC_CHALLENGE = 'Bearer realm="public"';
const INVALID_TOKEN_CHALLENGE = `${PUBLIC_CHALLENGE}, error="invalid_token"`;
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** `none` and the HMAC algorithms are never accepted, whatever the configuration lists. */
export function isForbiddenAlgorithm(alg: string): boolean {
  return /^none$/i.test(alg) || /^HS\d+$/i.test(alg);
}

const invalid = (code: AuthErrorCode, message: string) => unauthorized(code, message, INVALID_TOKEN_CHALLENGE);

export class TokenVerifier {
  readonly algorithms: readonly string[];
  private readonly keys: JWTVerifyGetKey;
  /** Where the keys come from, for messages. */
  readonly keySource: 'development' | 'jwks' | 'jwksUri';

  constructor(
    readonly provider: IdentityProviderConfig,
    options: TokenVerifierOptions = {},
  ) {
    this.algorithms = provider.algorithms.filter((alg) => !isForbiddenAlgorithm(alg));
    if (this.algorithms.length === 0) throw new Error('the identity provider allows no usable algorithm (none and HMAC are never accepted)');
    if (provider.development) {
      if (!options.devIssuer) throw new Error('a development identity provider needs the development issuer (loadOrCreateDevIssuer)');
      this.keys = createLocalJWKSet(options.devIssuer.jwks());
      this.keySource = 'development';
    } else if (provider.jwks) {
      this.keys = createLocalJWKSet(provider.jwks as Parameters<typeof createLocalJWKSet>[0]);
      this.keySource = 'jwks';
    } else if (provider.jwksUri) {
      this.keys = createRemoteJWKSet(new URL(provider.jwksUri), {
        cooldownDuration: options.jwksCooldownMs ?? DEFAULT_JWKS_COOLDOWN_MS,
        timeoutDuration: options.jwksTimeoutMs ?? DEFAULT_JWKS_TIMEOUT_MS,
        cacheMaxAge: options.jwksCacheMaxAgeMs ?? DEFAULT_JWKS_CACHE_MAX_AGE_MS,
      });
      this.keySource = 'jwksUri';
    } else {
      throw new Error('the identity provider needs jwksUri, jwks or development: true');
    }
  }

  /** Verifies the token; returns all its claims, or throws an AuthError (401, or 503 when the JWKS cannot be had). */
  async verify(token: string): Promise<JWTPayload> {
    if (token.length > MAX_TOKEN_LENGTH) throw invalid('MALFORMED_TOKEN', `the token is longer than ${MAX_TOKEN_LENGTH} characters`);
    if (!COMPACT_JWS.test(token)) {
      throw invalid('MALFORMED_TOKEN', 'the bearer token is not a signed JWT (three base64url parts separated by dots; encrypted tokens are not accepted)');
    }
    let alg: unknown;
    try {
      alg = decodeProtectedHeader(token).alg;
    } catch {
      throw invalid('MALFORMED_TOKEN', 'the token header is not valid base64url-encoded JSON');
    }
    if (typeof alg !== 'string') throw invalid('MALFORMED_TOKEN', 'the token header has no "alg"');
    const shown = /^[A-Za-z0-9]{1,16}$/.test(alg) ? `"${alg}"` : 'its';
    if (isForbiddenAlgorithm(alg)) {
      throw invalid('ALGORITHM_NOT_ALLOWED', `tokens with algorithm ${shown} are never accepted; the identity provider signs with ${this.algorithms.join(', ')}`);
    }
    if (!this.algorithms.includes(alg)) {
      throw invalid('ALGORITHM_NOT_ALLOWED', `the token's algorithm ${shown} is not accepted; allowed: ${this.algorithms.join(', ')}`);
    }

    const options: JWTVerifyOptions = {
      issuer: this.provider.issuer,
      algorithms: [...this.algorithms],
      clockTolerance: this.provider.clockSkewSeconds,
      requiredClaims: ['exp', 'sub'],
    };
    let payload: JWTPayload;
    try {
      payload = await this.verifyWithKeys(token, options);
    } catch (err) {
      throw this.translate(err);
    }

    const now = Math.floor(Date.now() / 1000);
    if (typeof payload.iat === 'number' && payload.iat > now + this.provider.clockSkewSeconds) {
      throw invalid('TOKEN_NOT_YET_VALID', 'the token was issued in the future ("iat"); check the clock of the identity provider or of this client');
    }
    if (typeof payload.sub !== 'string' || payload.sub === '') throw invalid('MALFORMED_TOKEN', 'the token\'s "sub" claim must be a non-empty string');
    this.checkAudience(payload);
    return payload;
  }

  private async verifyWithKeys(token: string, options: JWTVerifyOptions): Promise<JWTPayload> {
    try {
      return (await jwtVerify(token, this.keys, options)).payload;
    } catch (err) {
      // No `kid` and several keys of the right type: try each (jose hands them out as an iterator).
      if ((err as { code?: string }).code !== 'ERR_JWKS_MULTIPLE_MATCHING_KEYS') throw err;
      for await (const key of err as AsyncIterable<CryptoKey>) {
        try {
          return (await jwtVerify(token, key, options)).payload;
        } catch (attempt) {
          if ((attempt as { code?: string }).code !== 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED') throw attempt;
        }
      }
      throw Object.assign(new Error('no key verifies the signature'), { code: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' });
    }
  }

  private checkAudience(payload: JWTPayload): void {
    const audiences = this.provider.audiences;
    if (payload.aud !== undefined) {
      const given = typeof payload.aud === 'string' ? [payload.aud] : Array.isArray(payload.aud) ? payload.aud : undefined;
      if (!given || !given.every((a) => typeof a === 'string')) throw invalid('MALFORMED_TOKEN', 'the token\'s "aud" claim must be a string or an array of strings');
      if (!given.some((a) => audiences.includes(a))) {
        throw invalid('WRONG_AUDIENCE', `the token was issued for another audience; this environment accepts ${audiences.map((a) => quote(a)).join(', ')}`);
      }
      return;
    }
    const clientId = payload.client_id;
    if (typeof clientId === 'string' && audiences.includes(clientId)) return;
    throw invalid(
      'WRONG_AUDIENCE',
      `the token has no "aud" and its "client_id" is not one of this environment's audiences (${audiences.map((a) => quote(a)).join(', ')})`,
    );
  }

  /** Maps jose's errors to reason codes; never lets a message with token content through. */
  private translate(err: unknown): unknown {
    const e = err as { code?: string; claim?: string; reason?: string; name?: string };
    switch (e?.code) {
      case 'ERR_JWT_EXPIRED':
        return invalid('TOKEN_EXPIRED', 'the token has expired ("exp"); get a new one from the identity provider');
      case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
        if (e.reason === 'missing') return invalid('MISSING_CLAIM', `the token has no "${e.claim}" claim`);
        if (e.claim === 'iss') {
          return invalid(
            'WRONG_ISSUER',
            `the token was not issued by this environment's identity provider (expected issuer ${quote(this.provider.issuer)})` +
              (this.keySource === 'development' ? '; `npm run -s token` names the port in PORT: run it with the PORT this data plane listens on' : ''),
          );
        }
        if (e.claim === 'nbf' && e.reason === 'check_failed') return invalid('TOKEN_NOT_YET_VALID', 'the token is not valid yet ("nbf"); check the clocks');
        if (e.claim === 'aud') return invalid('WRONG_AUDIENCE', 'the token was issued for another audience');
        return invalid('MALFORMED_TOKEN', `the token's "${e.claim}" claim has the wrong type`);
      case 'ERR_JOSE_ALG_NOT_ALLOWED':
        return invalid('ALGORITHM_NOT_ALLOWED', `the token's algorithm is not accepted; allowed: ${this.algorithms.join(', ')}`);
      case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
        return invalid('BAD_SIGNATURE', 'the token signature does not verify: it was altered, or signed by another issuer');
      case 'ERR_JWKS_NO_MATCHING_KEY':
        return invalid(
          'UNKNOWN_KEY',
          "the token's signing key (kid) is not among the identity provider's keys" +
            (this.keySource === 'development'
              ? "; the development issuer's key lives under DATA_DIR (DATA_DIR/dev-issuer/signing-key.json): sign tokens with `npm run -s token` under the same DATA_DIR this data plane was started with"
              : ''),
        );
      case 'ERR_JWS_INVALID':
      case 'ERR_JWT_INVALID':
      case 'ERR_JOSE_NOT_SUPPORTED':
        return invalid('MALFORMED_TOKEN', 'the token is not a well-formed signed JWT this service supports');
      case 'ERR_JWKS_TIMEOUT':
      case 'ERR_JWKS_INVALID':
      case 'ERR_JWK_INVALID':
      case 'ERR_JOSE_GENERIC':
        return new AuthError(503, 'IDENTITY_PROVIDER_UNAVAILABLE', "the identity provider's signing keys could not be loaded; try again later");
    }
    if (this.keySource === 'jwksUri' && (e?.name === 'TypeError' || e?.name === 'AbortError' || e?.name === 'TimeoutError')) {
      // fetch() failures: connection refused, DNS, TLS.
      return new AuthError(503, 'IDENTITY_PROVIDER_UNAVAILABLE', "the identity provider's signing keys could not be fetched; try again later");
    }
    return err;
  }
}

/**
 * Authentication on the `public` gateway. `verifier` is undefined when the environment has no
 * identity provider.
 */
export async function authenticatePublic(authorization: string | undefined, dataset: DatasetConfig, verifier: TokenVerifier | undefined): Promise<Caller> {
  if (!dataset.auth.public.enabled) {
    throw forbidden('PUBLIC_ACCESS_DISABLED', `dataset "${dataset.id}" is not served on the public gateway (auth.public.enabled is false); use the iam gateway`);
  }
  const parsed = parseAuthorization(authorization);
  const usage = 'send "Authorization: Bearer <token>" with a token of the environment\'s identity provider';
  if (parsed === undefined) {
    if (dataset.caller.anon) return anonymousCaller();
    throw unauthorized('MISSING_CREDENTIALS', `the public gateway needs a token: ${usage}`, PUBLIC_CHALLENGE);
  }
  if (parsed === 'malformed') throw unauthorized('MALFORMED_CREDENTIALS', `the Authorization header does not start with an auth scheme: ${usage}`, PUBLIC_CHALLENGE);
  if (parsed.scheme !== 'bearer') {
    const hint = parsed.scheme === 'proxy' ? '; Proxy credentials belong to the iam gateway' : '';
    throw unauthorized('WRONG_SCHEME', `the public gateway takes the Bearer scheme${hint}: ${usage}`, PUBLIC_CHALLENGE);
  }
  if (parsed.credentials === '') throw unauthorized('MALFORMED_CREDENTIALS', `the Bearer credential is empty: ${usage}`, PUBLIC_CHALLENGE);
  if (!verifier) {
    throw forbidden('IDENTITY_PROVIDER_NOT_CONFIGURED', 'this environment has no identity provider, so the public gateway accepts no tokens');
  }
  const claims = await verifier.verify(parsed.credentials);
  const sub = claims.sub as string;
  const username = typeof claims['cognito:username'] === 'string' ? (claims['cognito:username'] as string) : undefined;
  const subjects = dataset.auth.public.subjects;
  if (subjects.length > 0 && !anyMatches(subjects, [sub, username])) {
    throw forbidden(
      'SUBJECT_NOT_ALLOWED',
      `subject ${quote(sub)} is not allowed on dataset "${dataset.id}"; add it (or a matching pattern) to the dataset's auth.public.subjects`,
    );
  }
  return { anon: false, schema: 'public', id: sub, claims: { ...claims }, super: anyMatches(superPatterns(dataset.caller.super, 'public'), [sub, username]) };
}
