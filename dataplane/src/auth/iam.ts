/**
 * Authentication on the `iam` gateway: `Authorization: Proxy <PRINCIPAL_IDENTIFIER>`.
 *
 * The principal identifier is asserted by the IAM-authenticated infrastructure in front of the
 * data plane (the IAM REST gateway, the function gateway, or a caller inside the private network);
 * the data plane checks it against the dataset's `auth.iam.principals` patterns.
 */
import type { DatasetConfig } from '../../../model/types.js';
import { parseAuthorization } from './authorization.js';
import { anonymousCaller, type Caller } from './caller.js';
import { forbidden, quote, unauthorized } from './errors.js';
import { anyMatches, superPatterns } from './principals.js';
import { WeakCache } from '../weak-cache.js';

export const MAX_PRINCIPAL_LENGTH = 2048;
/** Visible ASCII only: no whitespace, no control characters, nothing a header cannot carry faithfully. */
const PRINCIPAL = /^[\x21-\x7e]+$/;
export const IAM_CHALLENGE = 'Proxy realm="iam"';
const USAGE = 'send "Authorization: Proxy <principal identifier>"';

/**
 * Callers repeat their credentials: an accepted `Authorization` value is remembered per dataset
 * config object (a changed config is a new object, so a removed principal is refused at once).
 * Refusals are not remembered. The remembered Caller is frozen: requests share it.
 */
const accepted = new WeakCache<DatasetConfig, Map<string, Caller>>();
const MAX_ACCEPTED = 1024;

export function authenticateIam(authorization: string | undefined, dataset: DatasetConfig): Caller {
  if (authorization === undefined) return checkIamCredentials(authorization, dataset);
  let known = accepted.get(dataset);
  const caller = known?.get(authorization);
  if (caller) return caller;
  const fresh = checkIamCredentials(authorization, dataset);
  if (fresh.anon) return fresh;
  if (!known) accepted.set(dataset, (known = new Map()));
  if (known.size >= MAX_ACCEPTED) known.clear();
  Object.freeze(fresh.claims);
  known.set(authorization, Object.freeze(fresh));
  return fresh;
}

function checkIamCredentials(authorization: string | undefined, dataset: DatasetConfig): Caller {
  const parsed = parseAuthorization(authorization);
  if (parsed === undefined) {
    if (dataset.caller.anon) return anonymousCaller();
    throw unauthorized('MISSING_CREDENTIALS', `the iam gateway needs credentials: ${USAGE}`, IAM_CHALLENGE);
  }
  if (parsed === 'malformed') {
    throw unauthorized('MALFORMED_CREDENTIALS', `the Authorization header does not start with an auth scheme: ${USAGE}`, IAM_CHALLENGE);
  }
  if (parsed.scheme !== 'proxy') {
    const hint = parsed.scheme === 'bearer' ? '; Bearer tokens belong to the public gateway' : '';
    throw unauthorized('WRONG_SCHEME', `the iam gateway takes the Proxy scheme${hint}: ${USAGE}`, IAM_CHALLENGE);
  }
  const principal = parsed.credentials;
  if (principal === '') throw unauthorized('MALFORMED_CREDENTIALS', `the Proxy credential names no principal: ${USAGE}`, IAM_CHALLENGE);
  if (principal.length > MAX_PRINCIPAL_LENGTH) {
    throw unauthorized('MALFORMED_CREDENTIALS', `the principal identifier is longer than ${MAX_PRINCIPAL_LENGTH} characters`, IAM_CHALLENGE);
  }
  if (!PRINCIPAL.test(principal)) {
    throw unauthorized(
      'MALFORMED_CREDENTIALS',
      'the principal identifier may contain only visible ASCII characters (no spaces or control characters)',
      IAM_CHALLENGE,
    );
  }
  if (!anyMatches(dataset.auth.iam.principals, [principal])) {
    throw forbidden(
      'PRINCIPAL_NOT_ALLOWED',
      `principal ${quote(principal)} is not allowed on dataset "${dataset.id}"; add it (or a matching pattern) to the dataset's auth.iam.principals`,
    );
  }
  return { anon: false, schema: 'iam', id: principal, claims: {}, super: anyMatches(superPatterns(dataset.caller.super, 'iam'), [principal]) };
}
