/**
 * The cluster's ServiceAccount issuer and its public keys, read from the API server's OIDC
 * discovery (`/.well-known/openid-configuration` for the issuer, `/openid/v1/jwks` for the keys)
 * with the process's own credentials. Kept in memory; fetched again when they are older than
 * `maxAgeMs`, or when a token names a key id the set lacks — at most once per
 * `unknownKeyCooldownMs`, so tokens with invented key ids cost the API server nothing more. While
 * the keys cannot be had, a fetch is retried at most once per `failureRetryMs`.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { createLocalJWKSet, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import { kubeRequest } from './kube-http.js';

export interface IssuerDocument {
  issuer: string;
  jwks: JSONWebKeySet;
}

/** Thrown when the issuer or its keys cannot be had now (the cause is for the log, not the client). */
export class IssuerKeysUnavailable extends Error {
  constructor(override readonly cause: Error) {
    super(`the cluster's ServiceAccount issuer keys cannot be read: ${cause.message}`);
    this.name = 'IssuerKeysUnavailable';
  }
}

export interface IssuerKeysOptions {
  /** Least time between two fetches caused by unknown key ids (default 30 s). */
  unknownKeyCooldownMs?: number;
  /** Least time between two fetches while none succeeded (default 1 s). */
  failureRetryMs?: number;
  /** Keys older than this are fetched again on the next token (default 10 minutes). */
  maxAgeMs?: number;
  now?: () => number;
}

interface Loaded {
  issuer: string;
  keys: JWTVerifyGetKey;
  at: number;
}

export class ServiceAccountIssuerKeys {
  private loaded: Loaded | undefined;
  private fetching: Promise<Loaded> | undefined;
  private lastFetch = -Infinity;
  private lastFailure: Error | undefined;
  private readonly unknownKeyCooldownMs: number;
  private readonly failureRetryMs: number;
  private readonly maxAgeMs: number;
  private readonly now: () => number;
  /** How many times the document was fetched (for tests and metrics). */
  fetches = 0;

  constructor(
    private readonly source: () => Promise<IssuerDocument>,
    options: IssuerKeysOptions = {},
  ) {
    this.unknownKeyCooldownMs = options.unknownKeyCooldownMs ?? 30_000;
    this.failureRetryMs = options.failureRetryMs ?? 1_000;
    this.maxAgeMs = options.maxAgeMs ?? 600_000;
    this.now = options.now ?? Date.now;
  }

  /** The issuer every ServiceAccount token must name; throws IssuerKeysUnavailable. */
  async issuer(): Promise<string> {
    return (await this.current()).issuer;
  }

  /** For jose's jwtVerify: the key the token's header names, fetching the set again for an unknown kid (rate-bounded). */
  readonly getKey: JWTVerifyGetKey = async (header, token) => {
    const loaded = await this.current();
    try {
      return await loaded.keys(header, token);
    } catch (err) {
      if ((err as { code?: string }).code !== 'ERR_JWKS_NO_MATCHING_KEY' || this.now() - this.lastFetch < this.unknownKeyCooldownMs) throw err;
      const fresh = await this.fetch();
      return fresh.keys(header, token);
    }
  };

  private async current(): Promise<Loaded> {
    const loaded = this.loaded;
    if (loaded && this.now() - loaded.at < this.maxAgeMs) return loaded;
    if (this.fetching) return this.fetching;
    // Stale keys keep serving while a refetch fails; none at all: retry at a bounded rate.
    if (this.now() - this.lastFetch < this.failureRetryMs) {
      if (loaded) return loaded;
      throw new IssuerKeysUnavailable(this.lastFailure ?? new Error('not loaded yet'));
    }
    return this.fetch().catch((err: unknown) => {
      if (loaded) return loaded;
      throw err;
    });
  }

  private fetch(): Promise<Loaded> {
    this.fetching ??= (async () => {
      this.lastFetch = this.now();
      this.fetches++;
      try {
        const document = await this.source();
        const loaded = { issuer: document.issuer, keys: createLocalJWKSet(document.jwks), at: this.now() };
        this.loaded = loaded;
        this.lastFailure = undefined;
        return loaded;
      } catch (err) {
        this.lastFailure = err as Error;
        throw err instanceof IssuerKeysUnavailable ? err : new IssuerKeysUnavailable(err as Error);
      } finally {
        this.fetching = undefined;
      }
    })();
    return this.fetching;
  }
}

const MAX_DISCOVERY_BYTES = 64 * 1024;
const MAX_JWKS_BYTES = 256 * 1024;

/** GET of one discovery document as JSON, with the hint an operator needs for the usual refusals. */
async function discoveryGet(kubeConfig: KubeConfig, path: string, accept: string, maxBytes: number, timeoutMs: number): Promise<Record<string, unknown>> {
  const { status, text } = await kubeRequest(kubeConfig, path, { method: 'GET', timeoutMs, maxBytes, accept });
  if (status === 403 || status === 401) throw new Error(`GET ${path}: HTTP ${status} (the ServiceAccount needs a ClusterRoleBinding to system:service-account-issuer-discovery)`);
  if (status === 404) throw new Error(`GET ${path}: HTTP 404 (the API server serves no OIDC discovery: it needs --service-account-issuer with an https URL)`);
  if (status !== 200) throw new Error(`GET ${path}: HTTP ${status}`);
  const parsed: unknown = JSON.parse(text);
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error(`GET ${path}: not a JSON object`);
  return parsed as Record<string, unknown>;
}

/**
 * The issuer document from the API server itself. The keys are read from the API server's own
 * `/openid/v1/jwks`, not from the document's `jwks_uri`: that names the cluster's external
 * address, which this process may not reach, and would send the credentials elsewhere.
 */
export async function kubeIssuerDocument(kubeConfig: KubeConfig, timeoutMs = 5_000): Promise<IssuerDocument> {
  const discovery = await discoveryGet(kubeConfig, '/.well-known/openid-configuration', 'application/json', MAX_DISCOVERY_BYTES, timeoutMs);
  if (typeof discovery.issuer !== 'string' || discovery.issuer === '') throw new Error('the OIDC discovery document names no issuer');
  const jwks = await discoveryGet(kubeConfig, '/openid/v1/jwks', 'application/jwk-set+json, application/json', MAX_JWKS_BYTES, timeoutMs);
  if (!Array.isArray(jwks.keys)) throw new Error('the JWKS has no "keys" array');
  return { issuer: discovery.issuer, jwks: jwks as unknown as JSONWebKeySet };
}
