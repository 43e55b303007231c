/**
 * The function gateway with `spec.gateways.iam.trust: verified` (settings rendered by the
 * operator): callers present a ServiceAccount token for the gateway's audience, whose principal
 * must match `spec.functionGateway.invokers`; the gateway calls the data plane with its own
 * projected token (re-read as the kubelet rotates it) instead of a Proxy assertion.
 *
 *   DAS_TRUST                 network (default) | verified
 *   DAS_TOKEN_AUDIENCE        the audience callers' tokens must carry
 *   DAS_INVOKERS              JSON array of principal patterns
 *   DAS_UPSTREAM_TOKEN_FILE   the gateway's own projected ServiceAccount token
 */
import type { DataPlaneSettings } from '../../../model/settings/dataplane.js';
import { readFileSync } from 'node:fs';
import { parseAuthorization } from '../auth/authorization.js';
import { forbidden, quote, unauthorized } from '../auth/errors.js';
import { anyMatches } from '../auth/principals.js';
import { NO_KUBERNETES_CREDENTIALS, serviceAccountVerifier, type ServiceAccountVerifier } from '../auth/token-review.js';
import { VERIFIED_CHALLENGE, verifyServiceAccount } from '../auth/verified.js';

export interface VerifiedInvocation {
  verifier: ServiceAccountVerifier;
  audience: string;
  invokers: string[];
  /** The Authorization value for the data plane (`Bearer <own token>`). */
  upstreamAuthorization(): string;
}

/** Re-read at most this often: the kubelet renews a projected token well before it expires. */
const TOKEN_REREAD_MS = 30_000;

/** A token file, re-read when the last read is older than TOKEN_REREAD_MS. */
export function tokenFile(path: string, now: () => number = Date.now): () => string {
  let token = '';
  let readAt = -Infinity;
  return () => {
    if (now() - readAt >= TOKEN_REREAD_MS) {
      const text = readFileSync(path, 'utf8').trim();
      if (!text) throw new Error(`the token file ${path} is empty`);
      token = text;
      readAt = now();
    }
    return token;
  };
}

/** The function gateway's trust settings from its environment; throws (refusing to start) when verified cannot work. */
export function functionGatewayTrust(env: DataPlaneSettings, log?: (message: string) => void): { verified?: VerifiedInvocation } {
  if (env.DAS_TRUST === 'network') return {};
  const verifier = serviceAccountVerifier(env, log);
  if (!verifier) throw new Error(NO_KUBERNETES_CREDENTIALS);
  if (!env.DAS_TOKEN_AUDIENCE) throw new Error('DAS_TRUST=verified needs DAS_TOKEN_AUDIENCE (the audience of callers\' tokens)');
  if (!env.DAS_UPSTREAM_TOKEN_FILE) throw new Error('DAS_TRUST=verified needs DAS_UPSTREAM_TOKEN_FILE (the gateway\'s own projected ServiceAccount token)');
  // A JSON array of strings: checked with the other settings.
  const invokers = JSON.parse(env.DAS_INVOKERS ?? '[]') as string[];
  const token = tokenFile(env.DAS_UPSTREAM_TOKEN_FILE);
  token(); // unreadable now: refuse to start rather than fail every call
  return { verified: { verifier, audience: env.DAS_TOKEN_AUDIENCE, invokers, upstreamAuthorization: () => `Bearer ${token()}` } };
}

const USAGE = 'send "Authorization: Bearer <ServiceAccount token>" with the function gateway\'s audience';

/** Who invokes: the caller's verified ServiceAccount principal, or an AuthError (401, 403, 503). */
export async function authenticateInvoker(authorization: string | undefined, verified: VerifiedInvocation): Promise<string> {
  const parsed = parseAuthorization(authorization);
  if (parsed === undefined) throw unauthorized('MISSING_CREDENTIALS', `the function gateway needs credentials: ${USAGE}`, VERIFIED_CHALLENGE);
  if (parsed === 'malformed' || parsed.scheme !== 'bearer') throw unauthorized('WRONG_SCHEME', `the function gateway takes Bearer ServiceAccount tokens: ${USAGE}`, VERIFIED_CHALLENGE);
  const verdict = await verifyServiceAccount(parsed.credentials, [verified.audience], verified.verifier);
  if (!anyMatches(verified.invokers, [verdict.principal])) {
    throw forbidden('INVOKER_NOT_ALLOWED', `principal ${quote(verdict.principal)} may not invoke this function gateway; add it (or a matching pattern) to the Environment's spec.functionGateway.invokers`);
  }
  return verdict.principal;
}
