/**
 * The local development identity provider (environments with `identityProvider.development: true`):
 * an issuer whose signing key lives under DATA_DIR, so `npm start`, the tests and
 * `npm run token` agree on it across restarts. It signs Cognito-style ID tokens.
 *
 * Not for production: whoever can read `${dataDir}/dev-issuer/signing-key.json` can mint tokens.
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, SignJWT, type CryptoKey, type JWK } from 'jose';

export type DevIssuerAlgorithm = 'ES256' | 'RS256';

export interface DevIssuerOptions {
  issuer: string;
  audience: string;
  /** Algorithm of a newly created key; an existing key keeps its own. Default ES256. */
  algorithm?: DevIssuerAlgorithm;
}

export interface DevTokenRequest {
  sub: string;
  email?: string;
  /** Lifetime in seconds (default 3600). */
  ttlSeconds?: number;
  /** Claims added last; they override the generated ones (tests use this to craft bad tokens). */
  extraClaims?: Record<string, unknown>;
}

export interface DevIssuer {
  readonly issuer: string;
  readonly audience: string;
  readonly kid: string;
  readonly algorithm: DevIssuerAlgorithm;
  readonly keyPath: string;
  /** The public JWKS (one key, with kid, alg and use). */
  jwks(): { keys: JWK[] };
  sign(request: DevTokenRequest): Promise<string>;
}

export const DEFAULT_DEV_TTL_SECONDS = 3600;
export const MAX_DEV_TTL_SECONDS = 30 * 24 * 3600;
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth'] as const;

export function devIssuerKeyPath(dataDir: string): string {
  return join(dataDir, 'dev-issuer', 'signing-key.json');
}

/** Loads the signing key from `${dataDir}/dev-issuer/signing-key.json`, creating it (0600) the first time. */
export async function loadOrCreateDevIssuer(dataDir: string, options: DevIssuerOptions): Promise<DevIssuer> {
  const keyPath = devIssuerKeyPath(dataDir);
  const stored = readKeyFile(keyPath) ?? (await createKeyFile(keyPath, options.algorithm ?? 'ES256'));
  const algorithm = stored.alg as DevIssuerAlgorithm;
  const privateKey = (await importJWK(stored, algorithm)) as CryptoKey;
  const publicJwk: JWK = { ...stored };
  for (const member of PRIVATE_MEMBERS) delete publicJwk[member];
  const kid = stored.kid as string;

  return {
    issuer: options.issuer,
    audience: options.audience,
    kid,
    algorithm,
    keyPath,
    jwks: () => ({ keys: [{ ...publicJwk }] }),
    async sign(request: DevTokenRequest): Promise<string> {
      if (typeof request.sub !== 'string' || request.sub.length === 0) throw new Error('sub must be a non-empty string');
      const ttl = request.ttlSeconds ?? DEFAULT_DEV_TTL_SECONDS;
      if (!Number.isInteger(ttl) || ttl <= 0 || ttl > MAX_DEV_TTL_SECONDS) {
        throw new Error(`ttlSeconds must be a whole number of seconds between 1 and ${MAX_DEV_TTL_SECONDS}`);
      }
      const now = Math.floor(Date.now() / 1000);
      const claims: Record<string, unknown> = {
        sub: request.sub,
        ...(request.email !== undefined ? { email: request.email, email_verified: true } : {}),
        iss: options.issuer,
        aud: [options.audience],
        token_use: 'id',
        auth_time: now,
        iat: now,
        exp: now + ttl,
        jti: randomUUID(),
        'cognito:username': request.sub,
        origin_jti: randomUUID(),
        event_id: randomUUID(),
        ...request.extraClaims,
      };
      return new SignJWT(claims).setProtectedHeader({ alg: algorithm, kid, typ: 'JWT' }).sign(privateKey);
    },
  };
}

function readKeyFile(keyPath: string): JWK | undefined {
  let text: string;
  try {
    text = readFileSync(keyPath, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  // Someone loosened the permissions: tighten them again, the key signs tokens.
  if ((statSync(keyPath).mode & 0o077) !== 0) chmodSync(keyPath, 0o600);
  let jwk: JWK;
  try {
    jwk = JSON.parse(text) as JWK;
  } catch {
    throw new Error(`the development issuer key ${keyPath} is not valid JSON; delete it to create a new one`);
  }
  const usable =
    typeof jwk === 'object' && jwk !== null && typeof jwk.kid === 'string' && typeof jwk.d === 'string' &&
    ((jwk.alg === 'ES256' && jwk.kty === 'EC' && jwk.crv === 'P-256') || (jwk.alg === 'RS256' && jwk.kty === 'RSA'));
  if (!usable) throw new Error(`the development issuer key ${keyPath} is not an ES256 or RS256 private JWK with kid; delete it to create a new one`);
  return jwk;
}

/**
 * Creates the key file atomically: written to a private temporary file, then hard-linked into
 * place, which fails if another process got there first (its key is then used).
 */
async function createKeyFile(keyPath: string, algorithm: DevIssuerAlgorithm): Promise<JWK> {
  const { privateKey, publicKey } = await generateKeyPair(algorithm, { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  const jwk: JWK = { ...(await exportJWK(privateKey)), kid: await calculateJwkThumbprint(publicJwk), alg: algorithm, use: 'sig' };
  const dir = join(keyPath, '..');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tmp = `${keyPath}.${process.pid}.${randomUUID()}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(jwk, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  try {
    linkSync(tmp, keyPath);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EPERM' || code === 'ENOTSUP' || code === 'ENOSYS') {
      // A filesystem without hard links: exclusive create of the file itself (not atomic, but once).
      try {
        writeFileSync(keyPath, `${JSON.stringify(jwk, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
        return jwk;
      } catch (inner) {
        if ((inner as NodeJS.ErrnoException).code !== 'EEXIST') throw inner;
      }
    } else if (code !== 'EEXIST') throw err;
    const existing = readKeyFile(keyPath);
    if (!existing) throw err;
    return existing;
  } finally {
    unlinkSync(tmp);
  }
  return jwk;
}

/**
 * The development issuer as this machine serves it: a loopback issuer URL (the example manifest's
 * `http://localhost:8080/.well-known/dev-issuer`) names the port the data plane really listens on
 * (PORT), so a token's `iss` is an address that answers. Other issuers, and no port, leave it as configured.
 */
export function developmentIssuerOn(issuer: string, port: number | undefined): string {
  if (!port) return issuer;
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    return issuer;
  }
  if (!['localhost', '127.0.0.1', '[::1]'].includes(url.hostname)) return issuer;
  url.port = String(port);
  return url.toString();
}
