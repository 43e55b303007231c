/**
 * TEST PEER ONLY. Login checks of the Snowflake test peer: user/password, and key-pair JWTs as
 * snowflake-sdk makes them (authentication/auth_keypair.js): RS256, `iss` =
 * `<ACCOUNT>.<USER>.SHA256:<base64 sha256 of the public key's SPKI DER>`, `sub` = `<ACCOUNT>.<USER>`,
 * verified against the public key registered for the user.
 */
import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';

export interface LoginCredentials {
  account: string;
  user: string;
  authenticator: string;
  password?: string;
  token?: string;
}

export type LoginCheck = { ok: true } | { ok: false; code: string; message: string };

export function publicKeyFingerprint(key: KeyObject): string {
  return `SHA256:${createHash('sha256').update(key.export({ type: 'spki', format: 'der' })).digest('base64')}`;
}

function decodePart(part: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

export class PeerUsers {
  private readonly passwords = new Map<string, string>();
  private readonly keys = new Map<string, KeyObject>();

  setPassword(user: string, password: string): void {
    this.passwords.set(user.toUpperCase(), password);
  }

  registerPublicKey(user: string, pem: string): void {
    this.keys.set(user.toUpperCase(), createPublicKey(pem));
  }

  check(c: LoginCredentials): LoginCheck {
    const user = c.user.toUpperCase();
    if (c.authenticator.toUpperCase() === 'SNOWFLAKE_JWT') return this.checkJwt(user, c.account.toUpperCase(), c.token ?? '');
    const expected = this.passwords.get(user);
    if (expected === undefined || c.password !== expected) {
      return { ok: false, code: '390100', message: 'Incorrect username or password was specified.' };
    }
    return { ok: true };
  }

  private checkJwt(user: string, account: string, token: string): LoginCheck {
    const invalid: LoginCheck = { ok: false, code: '390144', message: 'JWT token is invalid.' };
    const key = this.keys.get(user);
    if (!key) return invalid;
    const [header, payload, signature] = token.split('.');
    if (!header || !payload || !signature) return invalid;
    if (decodePart(header)?.alg !== 'RS256') return invalid;
    const good = verify('RSA-SHA256', Buffer.from(`${header}.${payload}`), key, Buffer.from(signature, 'base64url'));
    if (!good) return invalid;
    const claims = decodePart(payload);
    if (!claims) return invalid;
    if (claims.iss !== `${account}.${user}.${publicKeyFingerprint(key)}` || claims.sub !== `${account}.${user}`) return invalid;
    // The SDK writes exp in milliseconds; accept either unit, refuse an expired token.
    const exp = Number(claims.exp);
    const expMs = exp > 1e12 ? exp : exp * 1000;
    if (!Number.isFinite(expMs) || expMs < Date.now()) return invalid;
    return { ok: true };
  }
}
