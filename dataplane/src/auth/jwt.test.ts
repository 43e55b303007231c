import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { base64url, exportJWK, exportSPKI, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { AuthError } from './errors.js';
import { authenticatePublic, TokenVerifier, type IdentityProviderConfig } from './jwt.js';
import { datasetConfig } from '../../test-support/auth-fixtures.js';

const ISSUER = 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_TEST';
const AUDIENCE = 'client-123';

interface TestKey {
  kid: string;
  alg: 'RS256' | 'ES256';
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  publicJwk: JWK;
}

async function makeKey(alg: 'RS256' | 'ES256', kid: string): Promise<TestKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { kid, alg, privateKey, publicKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

const now = () => Math.floor(Date.now() / 1000);

async function sign(key: TestKey, claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}): Promise<string> {
  const t = now();
  return new SignJWT({ sub: 'alice', iss: ISSUER, aud: AUDIENCE, iat: t, exp: t + 600, token_use: 'id', 'cognito:username': 'alice', ...claims })
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT', ...header })
    .sign(key.privateKey);
}

function provider(overrides: Partial<IdentityProviderConfig> = {}): IdentityProviderConfig {
  return { issuer: ISSUER, audiences: [AUDIENCE, 'other-client'], algorithms: ['RS256', 'ES256'], clockSkewSeconds: 30, ...overrides };
}

async function rejection(promise: Promise<unknown>): Promise<AuthError> {
  try {
    await promise;
  } catch (err) {
    if (!(err instanceof AuthError)) throw err;
    return err;
  }
  throw new Error('expected an AuthError');
}

/** Every rejection is checked: the token (or any of its parts) never appears in the message. */
async function rejects(verifier: TokenVerifier, token: string, code: string): Promise<AuthError> {
  const err = await rejection(verifier.verify(token));
  expect(err.code, err.message).to.equal(code);
  expect(err.status).to.equal(401);
  expect(err.challenge).to.equal('Bearer realm="public", error="invalid_token"');
  for (const part of token.split('.').filter((p) => p.length > 8)) {
    expect(err.message).not.to.include(part);
    expect(String(err.stack)).not.to.include(part);
  }
  return err;
}

describe('TokenVerifier', () => {
  let rsa: TestKey;
  let ec: TestKey;
  let inline: TokenVerifier;

  before(async () => {
    rsa = await makeKey('RS256', 'rsa-1');
    ec = await makeKey('ES256', 'ec-1');
    inline = new TokenVerifier(provider({ jwks: { keys: [rsa.publicJwk, ec.publicJwk] } }));
  });

  describe('with an inline JWKS', () => {
    it('accepts a valid RS256 and a valid ES256 token and returns all claims', async () => {
      const claims = await inline.verify(await sign(rsa, { email: 'alice@example.com', custom: { a: 1 } }));
      expect(claims).to.include({ sub: 'alice', iss: ISSUER, aud: AUDIENCE, email: 'alice@example.com', 'cognito:username': 'alice' });
      expect(claims.custom).to.deep.equal({ a: 1 });
      expect((await inline.verify(await sign(ec))).sub).to.equal('alice');
    });

    it('rejects an expired token, tolerating the clock skew', async () => {
      await rejects(inline, await sign(rsa, { iat: now() - 3600, exp: now() - 60 }), 'TOKEN_EXPIRED');
      expect((await inline.verify(await sign(rsa, { iat: now() - 3600, exp: now() - 10 }))).sub).to.equal('alice');
    });

    it('rejects a token that is not valid yet (nbf or iat in the future beyond the skew)', async () => {
      await rejects(inline, await sign(rsa, { nbf: now() + 120 }), 'TOKEN_NOT_YET_VALID');
      await rejects(inline, await sign(rsa, { iat: now() + 120, exp: now() + 600 }), 'TOKEN_NOT_YET_VALID');
      expect((await inline.verify(await sign(rsa, { nbf: now() + 10, iat: now() + 10 }))).sub).to.equal('alice');
    });

    it('rejects a token of another issuer', async () => {
      const err = await rejects(inline, await sign(rsa, { iss: 'https://evil.example.com' }), 'WRONG_ISSUER');
      expect(err.message).to.include(ISSUER);
    });

    it('checks the audience: aud as string or array must hold one of the audiences', async () => {
      await rejects(inline, await sign(rsa, { aud: 'someone-else' }), 'WRONG_AUDIENCE');
      await rejects(inline, await sign(rsa, { aud: ['a', 'b'] }), 'WRONG_AUDIENCE');
      expect((await inline.verify(await sign(rsa, { aud: ['a', 'other-client'] }))).sub).to.equal('alice');
    });

    it('accepts a Cognito access token (no aud) by its client_id', async () => {
      const access = { aud: undefined, token_use: 'access', client_id: AUDIENCE, username: 'alice', scope: 'openid' };
      expect((await inline.verify(await sign(rsa, access))).client_id).to.equal(AUDIENCE);
      await rejects(inline, await sign(rsa, { ...access, client_id: 'another-app' }), 'WRONG_AUDIENCE');
      await rejects(inline, await sign(rsa, { ...access, client_id: undefined }), 'WRONG_AUDIENCE');
      // A token that names an audience is judged by it, not by client_id.
      await rejects(inline, await sign(rsa, { aud: 'someone-else', client_id: AUDIENCE }), 'WRONG_AUDIENCE');
    });

    it('requires exp and sub', async () => {
      expect((await rejects(inline, await sign(rsa, { exp: undefined }), 'MISSING_CLAIM')).message).to.include('"exp"');
      expect((await rejects(inline, await sign(rsa, { sub: undefined }), 'MISSING_CLAIM')).message).to.include('"sub"');
      await rejects(inline, await sign(rsa, { sub: '' }), 'MALFORMED_TOKEN');
      await rejects(inline, await sign(rsa, { exp: 'tomorrow' }), 'MALFORMED_TOKEN');
    });

    it('rejects alg "none" in any spelling, unsigned', async () => {
      const payload = base64url.encode(JSON.stringify({ sub: 'alice', iss: ISSUER, aud: AUDIENCE, exp: now() + 600 }));
      for (const alg of ['none', 'None', 'NONE']) {
        const token = `${base64url.encode(JSON.stringify({ alg, typ: 'JWT' }))}.${payload}.`;
        const err = await rejects(inline, token, 'ALGORITHM_NOT_ALLOWED');
        expect(err.message).to.include('never accepted');
      }
    });

    it('rejects HS256 signed with the RSA public key (algorithm confusion), even when configured', async () => {
      const pem = await exportSPKI(rsa.publicKey);
      const forged = await new SignJWT({ sub: 'admin', iss: ISSUER, aud: AUDIENCE, exp: now() + 600 })
        .setProtectedHeader({ alg: 'HS256', kid: rsa.kid })
        .sign(new TextEncoder().encode(pem));
      await rejects(inline, forged, 'ALGORITHM_NOT_ALLOWED');
      const misconfigured = new TokenVerifier(provider({ algorithms: ['RS256', 'HS256', 'none'], jwks: { keys: [rsa.publicJwk] } }));
      expect(misconfigured.algorithms).to.deep.equal(['RS256']);
      await rejects(misconfigured, forged, 'ALGORITHM_NOT_ALLOWED');
      for (const alg of ['HS384', 'HS512']) {
        const token = await new SignJWT({ sub: 'admin', iss: ISSUER, aud: AUDIENCE, exp: now() + 600 }).setProtectedHeader({ alg }).sign(new TextEncoder().encode(pem));
        await rejects(inline, token, 'ALGORITHM_NOT_ALLOWED');
      }
    });

    it('rejects an algorithm outside the allow-list', async () => {
      const rsOnly = new TokenVerifier(provider({ algorithms: ['RS256'], jwks: { keys: [rsa.publicJwk, ec.publicJwk] } }));
      const err = await rejects(rsOnly, await sign(ec), 'ALGORITHM_NOT_ALLOWED');
      expect(err.message).to.include('"ES256"').and.include('RS256');
      const { privateKey } = await generateKeyPair('PS256');
      const ps = await new SignJWT({ sub: 'a', iss: ISSUER, aud: AUDIENCE, exp: now() + 60 }).setProtectedHeader({ alg: 'PS256', kid: 'rsa-1' }).sign(privateKey);
      await rejects(inline, ps, 'ALGORITHM_NOT_ALLOWED');
    });

    it('rejects a tampered payload or signature', async () => {
      const token = await sign(rsa);
      const [header, payload, signature] = token.split('.');
      const forgedPayload = base64url.encode(JSON.stringify({ ...JSON.parse(new TextDecoder().decode(base64url.decode(payload))), sub: 'admin' }));
      await rejects(inline, `${header}.${forgedPayload}.${signature}`, 'BAD_SIGNATURE');
      const middle = Math.floor(signature.length / 2);
      const flipped = signature.slice(0, middle) + (signature[middle] === 'A' ? 'B' : 'A') + signature.slice(middle + 1);
      await rejects(inline, `${header}.${payload}.${flipped}`, 'BAD_SIGNATURE');
      // Signed by a stranger's key that claims a known kid.
      const stranger = await makeKey('RS256', 'rsa-1');
      await rejects(inline, await sign(stranger), 'BAD_SIGNATURE');
      await rejects(inline, `${header}.${payload}.`, 'BAD_SIGNATURE');
    });

    it('verifies a token without kid against each key of the right type', async () => {
      const second = await makeKey('RS256', 'rsa-2');
      const verifier = new TokenVerifier(provider({ jwks: { keys: [rsa.publicJwk, second.publicJwk] } }));
      expect((await verifier.verify(await sign(second, {}, { kid: undefined }))).sub).to.equal('alice');
      const stranger = await makeKey('RS256', 'x');
      await rejects(verifier, await sign(stranger, {}, { kid: undefined }), 'BAD_SIGNATURE');
    });

    it('rejects an unknown kid', async () => {
      const other = await makeKey('RS256', 'rsa-unknown');
      await rejects(inline, await sign(other), 'UNKNOWN_KEY');
    });

    it('rejects what is not a compact signed JWT', async () => {
      for (const token of ['abc', 'a.b', 'a.b.c.d.e', 'not a token', '..', `${'a'.repeat(17000)}.b.c`]) await rejects(inline, token, 'MALFORMED_TOKEN');
      await rejects(inline, `${base64url.encode('not json')}.${base64url.encode('{}')}.abc`, 'MALFORMED_TOKEN');
      await rejects(inline, `${base64url.encode('{"typ":"JWT"}')}.${base64url.encode('{}')}.abc`, 'MALFORMED_TOKEN');
      const token = await sign(rsa);
      const [header, , signature] = token.split('.');
      await rejects(inline, `${header}.${base64url.encode('[1,2]')}.${signature}`, 'BAD_SIGNATURE');
    });

    it('refuses to be built with no usable algorithm or no keys', () => {
      expect(() => new TokenVerifier(provider({ algorithms: ['HS256'], jwks: { keys: [] } }))).to.throw(/no usable algorithm/);
      expect(() => new TokenVerifier(provider())).to.throw(/jwksUri, jwks or development/);
      expect(() => new TokenVerifier(provider({ development: true }))).to.throw(/development issuer/);
    });
  });

  describe('with a JWKS URL', () => {
    let server: Server;
    let url: string;
    let fetches = 0;
    let served: JWK[] = [];
    let status = 200;

    before(async () => {
      server = createServer((req, res) => {
        fetches++;
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ keys: served }));
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`;
    });
    after(() => new Promise<void>((resolve) => server.close(() => resolve())));
    beforeEach(() => {
      fetches = 0;
      served = [rsa.publicJwk];
      status = 200;
    });

    const COOLDOWN = 500;
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

    it('fetches once and caches the keys', async () => {
      const verifier = new TokenVerifier(provider({ jwksUri: url }), { jwksCooldownMs: COOLDOWN });
      const token = await sign(rsa);
      await Promise.all([verifier.verify(token), verifier.verify(token), verifier.verify(token)]);
      await verifier.verify(token);
      expect(fetches).to.equal(1);
    });

    it('refetches once on an unknown kid, then answers 401 UNKNOWN_KEY, rate-limited by the cooldown', async () => {
      const verifier = new TokenVerifier(provider({ jwksUri: url }), { jwksCooldownMs: COOLDOWN });
      const unknown = await sign(await makeKey('ES256', 'ec-unknown'));
      await verifier.verify(await sign(rsa));
      expect(fetches).to.equal(1);
      // Within the cooldown of the first fetch: no refetch at all.
      await rejects(verifier, unknown, 'UNKNOWN_KEY');
      expect(fetches).to.equal(1);
      await sleep(COOLDOWN + 50);
      await rejects(verifier, unknown, 'UNKNOWN_KEY');
      expect(fetches).to.equal(2);
      // A burst of unknown kids right after: no further fetches.
      await Promise.all(Array.from({ length: 10 }, () => rejects(verifier, unknown, 'UNKNOWN_KEY')));
      expect(fetches).to.equal(2);
      // Concurrent unknown kids after the cooldown share one fetch.
      await sleep(COOLDOWN + 50);
      await Promise.all(Array.from({ length: 10 }, () => rejects(verifier, unknown, 'UNKNOWN_KEY')));
      expect(fetches).to.equal(3);
    });

    it('accepts a rotated-in key once the JWKS shows it', async () => {
      const verifier = new TokenVerifier(provider({ jwksUri: url }), { jwksCooldownMs: COOLDOWN });
      const next = await makeKey('ES256', 'ec-next');
      const rotated = await sign(next);
      await verifier.verify(await sign(rsa));
      served = [rsa.publicJwk, next.publicJwk];
      // Inside the cooldown the new kid is still unknown; after it, one refetch finds it.
      await rejects(verifier, rotated, 'UNKNOWN_KEY');
      expect(fetches).to.equal(1);
      await sleep(COOLDOWN + 50);
      expect((await verifier.verify(rotated)).sub).to.equal('alice');
      expect(fetches).to.equal(2);
      // The old key keeps working from the refreshed cache; the new one too, without fetching again.
      await verifier.verify(await sign(rsa));
      await verifier.verify(rotated);
      expect(fetches).to.equal(2);
    });

    it('answers 503 IDENTITY_PROVIDER_UNAVAILABLE when the JWKS cannot be fetched', async () => {
      status = 500;
      const failing = new TokenVerifier(provider({ jwksUri: url }), { jwksCooldownMs: COOLDOWN });
      const err = await rejection(failing.verify(await sign(rsa)));
      expect([err.status, err.code]).to.deep.equal([503, 'IDENTITY_PROVIDER_UNAVAILABLE']);
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const port = (closed.address() as AddressInfo).port;
      await new Promise<void>((resolve) => closed.close(() => resolve()));
      const unreachable = new TokenVerifier(provider({ jwksUri: `http://127.0.0.1:${port}/jwks` }), { jwksTimeoutMs: 2000 });
      const err2 = await rejection(unreachable.verify(await sign(rsa)));
      expect([err2.status, err2.code]).to.deep.equal([503, 'IDENTITY_PROVIDER_UNAVAILABLE']);
    });
  });
});

describe('authenticatePublic', () => {
  let key: TestKey;
  let verifier: TokenVerifier;
  before(async () => {
    key = await makeKey('ES256', 'k1');
    verifier = new TokenVerifier(provider({ jwks: { keys: [key.publicJwk] } }));
  });

  async function fails(promise: Promise<unknown>, status: number, code: string): Promise<AuthError> {
    const err = await rejection(promise);
    expect([err.status, err.code], err.message).to.deep.equal([status, code]);
    return err;
  }

  it('authenticates a Bearer token: caller with the sub as id and all claims', async () => {
    const token = await sign(key, { email: 'alice@example.com' });
    const caller = await authenticatePublic(`Bearer ${token}`, datasetConfig(), verifier);
    expect(caller).to.deep.include({ anon: false, schema: 'public', id: 'alice', super: false });
    expect(caller.claims).to.include({ sub: 'alice', email: 'alice@example.com', iss: ISSUER, token_use: 'id' });
    expect((await authenticatePublic(`bearer ${token}`, datasetConfig(), verifier)).id).to.equal('alice');
  });

  it('needs credentials unless the dataset serves anonymous callers', async () => {
    const err = await fails(authenticatePublic(undefined, datasetConfig(), verifier), 401, 'MISSING_CREDENTIALS');
    expect(err.challenge).to.equal('Bearer realm="public"');
    const anon = datasetConfig({ caller: { anon: true } });
    expect(await authenticatePublic(undefined, anon, verifier)).to.deep.equal({ anon: true, schema: 'anonymous', id: 'anonymous', claims: {}, super: false });
    expect(await authenticatePublic(undefined, anon, undefined)).to.include({ anon: true });
    await fails(authenticatePublic('Bearer garbage', anon, verifier), 401, 'MALFORMED_TOKEN');
  });

  it('rejects the Proxy scheme and empty or malformed credentials', async () => {
    const err = await fails(authenticatePublic('Proxy demo-admin', datasetConfig(), verifier), 401, 'WRONG_SCHEME');
    expect(err.message).to.include('iam gateway');
    await fails(authenticatePublic('Basic YTpi', datasetConfig(), verifier), 401, 'WRONG_SCHEME');
    await fails(authenticatePublic('Bearer', datasetConfig(), verifier), 401, 'MALFORMED_CREDENTIALS');
    await fails(authenticatePublic('(Bearer) x', datasetConfig(), verifier), 401, 'MALFORMED_CREDENTIALS');
  });

  it('refuses datasets with auth.public.enabled false, and environments without an identity provider', async () => {
    const token = await sign(key);
    const closed = datasetConfig({ auth: { public: { enabled: false } }, caller: { anon: true } });
    await fails(authenticatePublic(`Bearer ${token}`, closed, verifier), 403, 'PUBLIC_ACCESS_DISABLED');
    await fails(authenticatePublic(undefined, closed, verifier), 403, 'PUBLIC_ACCESS_DISABLED');
    await fails(authenticatePublic(`Bearer ${token}`, datasetConfig(), undefined), 403, 'IDENTITY_PROVIDER_NOT_CONFIGURED');
  });

  it('restricts subjects by sub or cognito:username patterns', async () => {
    const dataset = datasetConfig({ auth: { public: { enabled: true, subjects: ['team-*', 'bob'] } } });
    const err = await fails(authenticatePublic(`Bearer ${await sign(key)}`, dataset, verifier), 403, 'SUBJECT_NOT_ALLOWED');
    expect(err.message).to.include('"alice"').and.include('auth.public.subjects');
    expect((await authenticatePublic(`Bearer ${await sign(key, { sub: 'team-x' })}`, dataset, verifier)).id).to.equal('team-x');
    const byUsername = await sign(key, { sub: '5f0c-uuid', 'cognito:username': 'bob' });
    expect((await authenticatePublic(`Bearer ${byUsername}`, dataset, verifier)).id).to.equal('5f0c-uuid');
  });

  it('marks super callers by sub or cognito:username, from the public: entries only', async () => {
    const iamOnly = datasetConfig({ caller: { super: ['admin-*'] } });
    expect((await authenticatePublic(`Bearer ${await sign(key, { sub: 'admin-1' })}`, iamOnly, verifier)).super).to.equal(false);
    const dataset = datasetConfig({ caller: { super: ['public:admin-*'] } });
    expect((await authenticatePublic(`Bearer ${await sign(key, { sub: 'admin-1' })}`, dataset, verifier)).super).to.equal(true);
    expect((await authenticatePublic(`Bearer ${await sign(key, { sub: 'u-1', 'cognito:username': 'admin-jo' })}`, dataset, verifier)).super).to.equal(true);
    expect((await authenticatePublic(`Bearer ${await sign(key, { sub: 'u-1' })}`, dataset, verifier)).super).to.equal(false);
  });

  it('never puts the token in an error message', async () => {
    const token = await sign(key, { exp: now() - 3600, iat: now() - 7200 });
    const err = await rejection(authenticatePublic(`Bearer ${token}`, datasetConfig(), verifier));
    expect(err.code).to.equal('TOKEN_EXPIRED');
    expect(JSON.stringify(err.toBody('r'))).not.to.include(token.split('.')[1]);
    expect(err.message).not.to.include(token.split('.')[2]);
  });
});
