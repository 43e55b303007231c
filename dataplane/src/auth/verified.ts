/**
 * The iam gateway with `spec.gateways.iam.trust: verified`: `Authorization: Bearer <ServiceAccount
 * token>` verified by a TokenReview (principal `system:serviceaccount:<ns>:<name>`, matched against
 * `auth.iam.principals` like any principal), and `Proxy <principal>` believed only from the CIDRs
 * of `spec.gateways.iam.proxyFrom` (the TCP peer's address: X-Forwarded-For proves nothing).
 */
import { CidrSet } from '../../../model/cidr.js';
import type { DatasetConfig, EnvironmentConfig } from '../../../model/types.js';
import { parseAuthorization } from './authorization.js';
import { anonymousCaller, type Caller } from './caller.js';
import { forbidden, quote, unauthorized } from './errors.js';
import { authenticateIam } from './iam.js';
import { anyMatches, superPatterns } from './principals.js';
import type { Verdict } from './service-account.js';
import type { ServiceAccountVerifier } from './token-review.js';

export const VERIFIED_CHALLENGE = 'Bearer realm="iam"';
const USAGE = 'send "Authorization: Bearer <ServiceAccount token>" (a projected token with the audience of spec.gateways.iam.audiences)';

const proxySets = new WeakMap<readonly string[], CidrSet>();
function proxyFrom(env: EnvironmentConfig): CidrSet {
  const ranges = env.gateways.iam.proxyFrom;
  let set = proxySets.get(ranges);
  if (!set) proxySets.set(ranges, (set = new CidrSet(ranges)));
  return set;
}

/**
 * The names a verified ServiceAccount is matched as: its principal, and for the Environment's own
 * function gateway ServiceAccount also the gateway's name (datasets list that principal).
 */
export function verifiedNames(verdict: Extract<Verdict, { ok: true }>, env: EnvironmentConfig): string[] {
  const own = verdict.namespace === env.namespace && verdict.name === env.functionGateway.name;
  return own ? [verdict.principal, env.functionGateway.name] : [verdict.principal];
}

/** Throws the refusal of a verdict (401), or returns the ServiceAccount's names. */
export async function verifyServiceAccount(token: string, audiences: readonly string[], verifier: ServiceAccountVerifier): Promise<Extract<Verdict, { ok: true }>> {
  const verdict = await verifier.verify(token, audiences);
  if (!verdict.ok) throw unauthorized(verdict.code, verdict.message, VERIFIED_CHALLENGE);
  return verdict;
}

export async function authenticateVerifiedIam(
  authorization: string | undefined,
  remoteAddress: string | undefined,
  env: EnvironmentConfig,
  dataset: DatasetConfig,
  verifier: ServiceAccountVerifier,
): Promise<Caller> {
  const known = recalled(authorization, env, dataset);
  if (known) return known;
  const parsed = parseAuthorization(authorization);
  if (parsed === undefined) {
    if (dataset.caller.anon) return anonymousCaller();
    throw unauthorized('MISSING_CREDENTIALS', `the iam gateway needs credentials: ${USAGE}`, VERIFIED_CHALLENGE);
  }
  if (parsed === 'malformed') throw unauthorized('MALFORMED_CREDENTIALS', `the Authorization header does not start with an auth scheme: ${USAGE}`, VERIFIED_CHALLENGE);
  if (parsed.scheme === 'proxy') {
    if (remoteAddress === undefined || !proxyFrom(env).contains(remoteAddress)) {
      const ranges = env.gateways.iam.proxyFrom;
      throw unauthorized(
        'PROXY_NOT_TRUSTED',
        `a Proxy assertion is believed only from spec.gateways.iam.proxyFrom (${ranges.length ? ranges.join(', ') : 'empty'}) of environment "${env.id}", and ${quote(remoteAddress ?? 'this caller')} is not in it: ${USAGE}`,
        VERIFIED_CHALLENGE,
      );
    }
    return authenticateIam(authorization, dataset);
  }
  if (parsed.scheme !== 'bearer') throw unauthorized('WRONG_SCHEME', `the iam gateway takes Bearer ServiceAccount tokens: ${USAGE}`, VERIFIED_CHALLENGE);
  const verdict = await verifyServiceAccount(parsed.credentials, env.gateways.iam.audiences, verifier);
  const caller = verifiedCaller(verdict, env, dataset);
  remember(authorization!, env, dataset, caller, verdict.until);
  return caller;
}

function verifiedCaller(verdict: Extract<Verdict, { ok: true }>, env: EnvironmentConfig, dataset: DatasetConfig): Caller {
  const names = verifiedNames(verdict, env);
  if (!anyMatches(dataset.auth.iam.principals, names)) {
    throw forbidden(
      'PRINCIPAL_NOT_ALLOWED',
      `principal ${quote(verdict.principal)} is not allowed on dataset "${dataset.id}"; add it (or a matching pattern such as "system:serviceaccount:${verdict.namespace}:*") to the dataset's auth.iam.principals`,
    );
  }
  return Object.freeze({
    anon: false,
    schema: 'iam',
    id: verdict.principal,
    claims: Object.freeze(verdict.exp !== undefined ? { exp: verdict.exp } : {}),
    super: anyMatches(superPatterns(dataset.caller.super, 'iam'), names),
  });
}

/**
 * Callers repeat their token: an accepted `Authorization` value is remembered per dataset config
 * (as iam.ts does for Proxy) until its verdict's own bound, so a revoked token is refused no later
 * than the verdict cache would refuse it; a changed environment or dataset config misses.
 */
const accepted = new WeakMap<DatasetConfig, Map<string, { env: EnvironmentConfig; caller: Caller; until: number }>>();
const MAX_ACCEPTED = 1024;

function remember(authorization: string, env: EnvironmentConfig, dataset: DatasetConfig, caller: Caller, until: number | undefined): void {
  if (until === undefined) return;
  let known = accepted.get(dataset);
  if (!known) accepted.set(dataset, (known = new Map()));
  if (known.size >= MAX_ACCEPTED) known.clear();
  known.set(authorization, { env, caller, until });
}

function recalled(authorization: string | undefined, env: EnvironmentConfig, dataset: DatasetConfig): Caller | undefined {
  if (authorization === undefined) return undefined;
  const entry = accepted.get(dataset)?.get(authorization);
  return entry && entry.env === env && entry.until > Date.now() ? entry.caller : undefined;
}
