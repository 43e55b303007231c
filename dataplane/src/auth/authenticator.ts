/**
 * The one entry point of authentication: which gateway, the Authorization header, the environment
 * and the dataset in; the caller out, or an AuthError (status, reason code, message) thrown.
 */
import type { DatasetConfig, EnvironmentConfig } from '../../../model/types.js';
import type { Caller } from './caller.js';
import { developmentIssuerOn, loadOrCreateDevIssuer, type DevIssuer } from './dev-issuer.js';
import { AuthError, forbidden } from './errors.js';
import { authenticateIam } from './iam.js';
import type { ServiceAccountVerifier } from './token-review.js';
import { authenticateVerifiedIam } from './verified.js';
import { authenticatePublic, TokenVerifier, type IdentityProviderConfig, type TokenVerifierOptions } from './jwt.js';

export interface AuthInput {
  authkind: 'iam' | 'public';
  /** The raw `Authorization` header value, if any. */
  authorization?: string;
  /** The TCP peer's address (trust verified: whether a Proxy assertion is believed). */
  remoteAddress?: string;
}

export async function authenticate(
  input: AuthInput,
  env: EnvironmentConfig,
  dataset: DatasetConfig,
  verifiers: TokenVerifierCache,
  serviceAccounts?: ServiceAccountVerifier,
): Promise<Caller> {
  return authenticateNow(input, env, dataset, verifiers, serviceAccounts);
}

/**
 * As `authenticate`, but the caller comes back as it is when no I/O was needed (a `Proxy`
 * assertion on a non-verified iam gateway, every refusal decided from the config): refusals are
 * thrown, so a front door awaits only what really waits.
 */
export function authenticateNow(
  input: AuthInput,
  env: EnvironmentConfig,
  dataset: DatasetConfig,
  verifiers: TokenVerifierCache,
  serviceAccounts?: ServiceAccountVerifier,
): Caller | Promise<Caller> {
  if (!env.gateways[input.authkind].enabled) {
    throw forbidden('GATEWAY_DISABLED', `the ${input.authkind} gateway is disabled in environment "${env.id}"`);
  }
  if (input.authkind === 'iam') {
    if (env.gateways.iam.trust !== 'verified') return authenticateIam(input.authorization, dataset);
    if (!serviceAccounts) throw new AuthError(503, 'TOKEN_REVIEW_UNAVAILABLE', 'this data plane has no Kubernetes credentials to verify ServiceAccount tokens with');
    return authenticateVerifiedIam(input.authorization, input.remoteAddress, env, dataset, serviceAccounts);
  }
  return verifiers.get(env).then((verifier) => authenticatePublic(input.authorization, dataset, verifier));
}

export interface TokenVerifierCacheOptions extends Omit<TokenVerifierOptions, 'devIssuer'> {
  /** DATA_DIR: where the development issuer keeps its signing key. */
  dataDir: string;
  /** The port the data plane listens on: a loopback development issuer's `iss` names it (developmentIssuerOn). */
  issuerPort?: number;
}

/**
 * One TokenVerifier per environment, reused across requests so the JWKS cache and its refetch
 * cooldown hold. A changed identity provider (hot-reloaded environment config) gets a new verifier.
 */
export class TokenVerifierCache {
  private readonly entries = new Map<string, { fingerprint: string; verifier: Promise<TokenVerifier> }>();

  constructor(private readonly options: TokenVerifierCacheOptions) {}

  /** The environment's verifier, or undefined when it has no identity provider. */
  async get(env: EnvironmentConfig): Promise<TokenVerifier | undefined> {
    const configured = env.identityProvider;
    if (!configured) {
      this.entries.delete(env.id);
      return undefined;
    }
    const { provider, fingerprint } = this.resolved(configured);
    let entry = this.entries.get(env.id);
    if (!entry || entry.fingerprint !== fingerprint) {
      const verifier = this.create(provider);
      entry = { fingerprint, verifier };
      this.entries.set(env.id, entry);
      // A failed creation (unreadable development key) is retried by the next request.
      verifier.catch(() => {
        if (this.entries.get(env.id) === entry) this.entries.delete(env.id);
      });
    }
    return entry.verifier;
  }

  /** The provider as verified and its fingerprint: worked out once per config object, not per request. */
  private readonly providers = new WeakMap<IdentityProviderConfig, { provider: IdentityProviderConfig; fingerprint: string }>();
  private resolved(configured: IdentityProviderConfig): { provider: IdentityProviderConfig; fingerprint: string } {
    let entry = this.providers.get(configured);
    if (!entry) {
      const provider = configured.development ? { ...configured, issuer: developmentIssuerOn(configured.issuer, this.options.issuerPort) } : configured;
      entry = { provider, fingerprint: JSON.stringify(provider) };
      this.providers.set(configured, entry);
    }
    return entry;
  }

  private async create(provider: IdentityProviderConfig): Promise<TokenVerifier> {
    const { dataDir, issuerPort: _port, ...rest } = this.options;
    let devIssuer: DevIssuer | undefined;
    if (provider.development) devIssuer = await loadOrCreateDevIssuer(dataDir, { issuer: provider.issuer, audience: provider.audiences[0] });
    return new TokenVerifier(provider, { ...rest, devIssuer });
  }
}
