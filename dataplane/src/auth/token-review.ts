/**
 * ServiceAccount token verification, in order of cost:
 *
 * 1. remembered verdicts: an acceptance until the token's expiry and at most `maxAgeMs`; a refusal
 *    until the token's expiry and at most an hour (two caches bounded in size, least recently used
 *    first, keyed by a SHA-256 of the audiences and the token, so a flood of forged tokens can
 *    neither grow memory nor push out the acceptances of real callers);
 * 2. local checks: the claims (expiry, audience), then the signature and issuer against the
 *    cluster's ServiceAccount issuer keys (OIDC discovery on the API server, issuer-keys.ts);
 * 3. only then a TokenReview (POST /apis/authentication.k8s.io/v1/tokenreviews) with the process's
 *    own credentials, which tells whether the token's ServiceAccount and bound Pod or Secret still
 *    exist; at most `maxInFlight` at once per process, `4 × maxInFlight` more waiting their turn.
 *
 * Keys or API server unreachable, or every review slot taken: 503 TOKEN_REVIEW_UNAVAILABLE for a
 * token without a remembered verdict, in words that name no internal address (the cause goes to
 * the log). Never an open door: no verdict, no access.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import type { DataPlaneSettings } from '../../../model/settings/dataplane.js';
import { jwtVerify } from 'jose';
import { AuthError } from './errors.js';
import { ExpiringLru } from './expiring-lru.js';
import { IssuerKeysUnavailable, kubeIssuerDocument, ServiceAccountIssuerKeys } from './issuer-keys.js';
import { kubeRequest } from './kube-http.js';
import { inSpan } from '../../../model/telemetry/tracing.js';
import { ReviewSlots, ReviewSlotsFull } from './review-slots.js';
import { cacheUntil, earlyRefusal, unverifiedClaims, verdictOf, type Refusal, type TokenReviewStatus, type Verdict } from './service-account.js';

/** The I/O edge: asks the API server about one token. Throws when no answer came. */
export interface TokenReviewer {
  review(token: string, audiences: readonly string[]): Promise<TokenReviewStatus>;
}

/** Where the issuer and its keys come from (ServiceAccountIssuerKeys in production). */
export interface IssuerKeySource {
  issuer(): Promise<string>;
  getKey: Parameters<typeof jwtVerify>[1];
}

export const MAX_VERDICT_AGE_MS = 5 * 60_000;
/** The longest a refusal is remembered (a forged token's own `exp` may lie far ahead). */
export const MAX_REFUSAL_AGE_MS = 60 * 60_000;
export const DEFAULT_MAX_REVIEWS_IN_FLIGHT = 8;
/** Callers that may wait for a review slot, per slot. */
export const WAITING_PER_REVIEW_SLOT = 4;
/** The signature algorithms of Kubernetes ServiceAccount tokens (RSA or ECDSA issuer keys). */
const SERVICE_ACCOUNT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'ES256', 'ES384', 'ES512', 'PS256', 'PS384', 'PS512'];
/** The API server's own leeway for nbf/iat; `exp` is checked strictly before (earlyRefusal). */
const CLOCK_TOLERANCE_SECONDS = 60;
const MAX_REVIEW_RESPONSE_BYTES = 64 * 1024;
const RETRY_HINT = 'try again shortly';

export interface ServiceAccountVerifierOptions {
  /** Longest an acceptance is reused, ms (at most 5 minutes; default 5 minutes). */
  maxAgeMs?: number;
  /** Most acceptances and most refusals remembered (default 10 000 each); the least recently used goes first. */
  maxEntries?: number;
  /** TokenReviews in flight at once (default 8); 4 × as many callers may wait for one. */
  maxInFlight?: number;
  /** Where the causes of 503s go (they are not told to the caller). */
  log?: (message: string) => void;
  now?: () => number;
}

type Accepted = Extract<Verdict, { ok: true }>;

export class ServiceAccountVerifier {
  private readonly accepted: ExpiringLru<Accepted>;
  private readonly refused: ExpiringLru<Refusal>;
  private readonly pending = new Map<string, Promise<Verdict>>();
  private readonly slots: ReviewSlots;
  private readonly maxAgeMs: number;
  private readonly now: () => number;
  private readonly log: (message: string) => void;
  /** TokenReviews asked for (a counter for tests and metrics). */
  reviews = 0;

  constructor(
    private readonly reviewer: TokenReviewer | (() => TokenReviewer),
    private readonly keys: IssuerKeySource | (() => IssuerKeySource),
    options: ServiceAccountVerifierOptions = {},
  ) {
    this.maxAgeMs = Math.min(options.maxAgeMs ?? MAX_VERDICT_AGE_MS, MAX_VERDICT_AGE_MS);
    this.now = options.now ?? Date.now;
    const maxEntries = options.maxEntries ?? 10_000;
    this.accepted = new ExpiringLru(maxEntries, this.now);
    this.refused = new ExpiringLru(maxEntries, this.now);
    const maxInFlight = options.maxInFlight ?? DEFAULT_MAX_REVIEWS_IN_FLIGHT;
    this.slots = new ReviewSlots(maxInFlight, maxInFlight * WAITING_PER_REVIEW_SLOT);
    this.log = options.log ?? (() => undefined);
  }

  /** Acceptances remembered. */
  get size(): number {
    return this.accepted.size;
  }

  /** Refusals remembered. */
  get refusals(): number {
    return this.refused.size;
  }

  /** The verdict on `token` for `audiences`; throws AuthError 503 when none can be had now. */
  async verify(token: string, audiences: readonly string[]): Promise<Verdict> {
    // The audiences are part of the question; a digest keeps each entry small whatever the token's size.
    const key = createHash('sha256').update(audiences.join('\n')).update('\0').update(token).digest('base64url');
    const known = this.accepted.get(key) ?? this.refused.get(key);
    if (known) return known;
    const now = this.now();
    const early = earlyRefusal(token, audiences, Math.floor(now / 1000));
    if (early) return this.refuse(key, token, { ok: false, ...early });
    let inFlight = this.pending.get(key);
    if (!inFlight) {
      inFlight = this.decide(token, audiences, key).finally(() => this.pending.delete(key));
      this.pending.set(key, inFlight);
    }
    return inFlight;
  }

  private async decide(token: string, audiences: readonly string[], key: string): Promise<Verdict> {
    const local = await this.checkLocally(token, audiences);
    // An unknown key id may be a key the cluster added since: not remembered, asked about again (rate-bounded).
    if (local) return local.code === 'UNKNOWN_KEY' ? local : this.refuse(key, token, local);
    const verdict = verdictOf(await this.review(token, audiences), audiences);
    if (!verdict.ok) return this.refuse(key, token, verdict, this.maxAgeMs);
    // The signature holds, so the token's exp is the API server's: it bounds the caller (subscriptions end then).
    const exp = unverifiedClaims(token)?.exp;
    if (typeof exp === 'number') verdict.exp = exp;
    verdict.until = cacheUntil(token, this.now(), this.maxAgeMs);
    this.accepted.set(key, verdict, verdict.until);
    return verdict;
  }

  /** Remembers a refusal until the token's expiry, at most `maxMs`. */
  private refuse(key: string, token: string, refusal: Refusal, maxMs = MAX_REFUSAL_AGE_MS): Refusal {
    this.refused.set(key, refusal, cacheUntil(token, this.now(), maxMs));
    return refusal;
  }

  /** Signature, issuer, audience and times against the cluster's issuer keys: a refusal, or undefined when the token holds. */
  private async checkLocally(token: string, audiences: readonly string[]): Promise<Refusal | undefined> {
    const keys = typeof this.keys === 'function' ? this.keys() : this.keys;
    try {
      const issuer = await keys.issuer();
      await jwtVerify(token, keys.getKey, {
        issuer,
        audience: [...audiences],
        algorithms: SERVICE_ACCOUNT_ALGORITHMS,
        requiredClaims: ['exp'],
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        currentDate: new Date(this.now()),
      });
      return undefined;
    } catch (err) {
      const refusal = localRefusal(err);
      if (refusal) return refusal;
      this.log(`ServiceAccount token not verifiable: ${(err as Error).message}`);
      const what = err instanceof IssuerKeysUnavailable ? "the cluster's ServiceAccount issuer keys cannot be read" : 'the ServiceAccount token could not be checked';
      throw new AuthError(503, 'TOKEN_REVIEW_UNAVAILABLE', `the token cannot be verified now: ${what}; ${RETRY_HINT}`);
    }
  }

  private async review(token: string, audiences: readonly string[]): Promise<TokenReviewStatus> {
    try {
      return await this.slots.run(() => {
        this.reviews++;
        const reviewer = typeof this.reviewer === 'function' ? this.reviewer() : this.reviewer;
        return reviewer.review(token, audiences);
      });
    } catch (err) {
      if (err instanceof ReviewSlotsFull) {
        throw new AuthError(503, 'TOKEN_REVIEW_UNAVAILABLE', `the token cannot be verified now: too many new ServiceAccount tokens are being reviewed at once; ${RETRY_HINT}`);
      }
      this.log(`TokenReview failed: ${(err as Error).message}`);
      throw new AuthError(503, 'TOKEN_REVIEW_UNAVAILABLE', `the token cannot be verified now: the Kubernetes API server did not answer the TokenReview; ${RETRY_HINT}`);
    }
  }
}

/** jose's verdict on a token as a refusal with a reason code; undefined for failures that are not the token's. */
export function localRefusal(err: unknown): Refusal | undefined {
  const e = err as { code?: string; claim?: string; reason?: string };
  const refusal = (code: Refusal['code'], message: string): Refusal => ({ ok: false, code, message });
  switch (e?.code) {
    case 'ERR_JWT_EXPIRED':
      return refusal('TOKEN_EXPIRED', 'the ServiceAccount token has expired; request a new one (projected tokens are renewed by the kubelet)');
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      if (e.reason === 'missing') return refusal('MISSING_CLAIM', `the ServiceAccount token has no "${e.claim}" claim`);
      if (e.claim === 'iss') return refusal('WRONG_ISSUER', "the token was not issued by this cluster's ServiceAccount issuer");
      if (e.claim === 'aud') return refusal('WRONG_AUDIENCE', 'the ServiceAccount token is not meant for this service');
      if (e.claim === 'nbf' || e.claim === 'iat') return refusal('TOKEN_NOT_YET_VALID', 'the ServiceAccount token is not valid yet ("nbf" or "iat" lies ahead); check the clocks');
      return refusal('MALFORMED_TOKEN', `the ServiceAccount token's "${e.claim}" claim has the wrong type`);
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return refusal('BAD_SIGNATURE', "the token's signature does not verify against this cluster's ServiceAccount issuer keys: it was altered, or signed by another issuer");
    case 'ERR_JWKS_NO_MATCHING_KEY':
    case 'ERR_JWKS_MULTIPLE_MATCHING_KEYS':
      return refusal('UNKNOWN_KEY', "the token's signing key (kid) is not among this cluster's ServiceAccount issuer keys");
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return refusal('ALGORITHM_NOT_ALLOWED', `the token's algorithm is not one of a ServiceAccount token's (${SERVICE_ACCOUNT_ALGORITHMS.join(', ')})`);
    case 'ERR_JWS_INVALID':
    case 'ERR_JWT_INVALID':
      return refusal('MALFORMED_TOKEN', 'the bearer token is not a well-formed signed JWT');
  }
  return undefined;
}

/** Whether this process has Kubernetes credentials: KUBECONFIG, ~/.kube/config, or in-cluster. */
export function kubernetesCredentialsSource(env: Pick<DataPlaneSettings, 'KUBECONFIG' | 'KUBERNETES_SERVICE_HOST'>): string | undefined {
  if (env.KUBECONFIG) {
    const files = env.KUBECONFIG.split(':').filter(Boolean);
    return files.some((f) => existsSync(f)) ? `KUBECONFIG (${env.KUBECONFIG})` : undefined;
  }
  if (env.KUBERNETES_SERVICE_HOST && existsSync('/var/run/secrets/kubernetes.io/serviceaccount/token')) return 'in-cluster ServiceAccount';
  const home = join(homedir(), '.kube', 'config');
  return existsSync(home) ? home : undefined;
}

const TOKEN_REVIEW_PATH = '/apis/authentication.k8s.io/v1/tokenreviews';

/** TokenReviews with the credentials of a KubeConfig (in-cluster or KUBECONFIG). */
export class KubeTokenReviewer implements TokenReviewer {
  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly timeoutMs = 5_000,
  ) {}

  /** The API server's host, for the span. */
  private serverAddress(): string {
    try {
      return new URL(this.kubeConfig.getCurrentCluster()?.server ?? '').hostname;
    } catch {
      return '';
    }
  }

  async review(token: string, audiences: readonly string[]): Promise<TokenReviewStatus> {
    const body = JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token, audiences } });
    // A CLIENT span of the request that needed the review (when it is traced); the token is never an attribute.
    const { status, text } = await inSpan(
      `POST ${TOKEN_REVIEW_PATH}`,
      () => ({ 'http.request.method': 'POST', 'url.template': TOKEN_REVIEW_PATH, 'server.address': this.serverAddress() }),
      () => kubeRequest(this.kubeConfig, TOKEN_REVIEW_PATH, { method: 'POST', body, timeoutMs: this.timeoutMs, maxBytes: MAX_REVIEW_RESPONSE_BYTES }),
      { kind: 'client', childOnly: true },
    );
    if (status !== 201 && status !== 200) {
      const hint = status === 403 ? ' (the ServiceAccount needs a ClusterRoleBinding to system:auth-delegator)' : '';
      throw new Error(`HTTP ${status}${hint}`);
    }
    const review = JSON.parse(text) as { status?: TokenReviewStatus };
    return review.status ?? {};
  }
}

/** The settings of ServiceAccount token verification, read once (README, "Process environment"). */
export interface ServiceAccountSettings {
  /** DAS_TOKEN_REVIEW_CACHE_MS: how long an acceptance is reused (at most 5 minutes). */
  verdictMaxAgeMs: number;
  /** DAS_TOKEN_REVIEW_MAX_IN_FLIGHT: TokenReviews in flight at once per process. */
  maxReviewsInFlight: number;
}

export function serviceAccountSettings(s: Pick<DataPlaneSettings, 'DAS_TOKEN_REVIEW_CACHE_MS' | 'DAS_TOKEN_REVIEW_MAX_IN_FLIGHT'>): ServiceAccountSettings {
  // The registry bounds DAS_TOKEN_REVIEW_CACHE_MS to MAX_VERDICT_AGE_MS (5 minutes).
  return { verdictMaxAgeMs: Math.min(s.DAS_TOKEN_REVIEW_CACHE_MS, MAX_VERDICT_AGE_MS), maxReviewsInFlight: s.DAS_TOKEN_REVIEW_MAX_IN_FLIGHT };
}

/**
 * ServiceAccount token verification (trust verified), when this process has Kubernetes
 * credentials. The KubeConfig is loaded on first use (the settings are checked at once).
 */
export function serviceAccountVerifier(env: Pick<DataPlaneSettings, 'KUBECONFIG' | 'KUBERNETES_SERVICE_HOST' | 'DAS_TOKEN_REVIEW_CACHE_MS' | 'DAS_TOKEN_REVIEW_MAX_IN_FLIGHT'>, log?: (message: string) => void): ServiceAccountVerifier | undefined {
  if (!kubernetesCredentialsSource(env)) return undefined;
  const settings = serviceAccountSettings(env);
  let kubeConfig: KubeConfig | undefined;
  const config = () => {
    if (!kubeConfig) {
      kubeConfig = new KubeConfig();
      kubeConfig.loadFromDefault();
    }
    return kubeConfig;
  };
  let reviewer: KubeTokenReviewer | undefined;
  let keys: ServiceAccountIssuerKeys | undefined;
  return new ServiceAccountVerifier(
    () => (reviewer ??= new KubeTokenReviewer(config())),
    () => (keys ??= new ServiceAccountIssuerKeys(() => kubeIssuerDocument(config()))),
    { maxAgeMs: settings.verdictMaxAgeMs, maxInFlight: settings.maxReviewsInFlight, log },
  );
}

export const NO_KUBERNETES_CREDENTIALS =
  'gateways.iam.trust is verified, but this process has no Kubernetes credentials to verify ServiceAccount tokens with (no KUBECONFIG file, no ~/.kube/config, not in a cluster): set KUBECONFIG to the cluster the tokens come from';
