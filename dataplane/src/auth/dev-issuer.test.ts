import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, statSync, chmodSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { devIssuerKeyPath, loadOrCreateDevIssuer } from './dev-issuer.js';
import { TokenVerifier } from './jwt.js';

const ISSUER = 'http://localhost:8080/.well-known/dev-issuer';
const AUDIENCE = 'data-access-local';
const PROVIDER = { issuer: ISSUER, audiences: [AUDIENCE], algorithms: ['RS256', 'ES256'], clockSkewSeconds: 30, development: true };

describe('development issuer', () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'das-dev-issuer-'));
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it('creates a private ES256 key once (mode 0600) and reuses it across restarts', async () => {
    const first = await loadOrCreateDevIssuer(dataDir, { issuer: ISSUER, audience: AUDIENCE });
    const path = devIssuerKeyPath(dataDir);
    expect(path).to.equal(join(dataDir, 'dev-issuer', 'signing-key.json'));
    expect(statSync(path).mode & 0o777).to.equal(0o600);
    expect(first.algorithm).to.equal('ES256');
    const token = await first.sign({ sub: 'alice' });

    const second = await loadOrCreateDevIssuer(dataDir, { issuer: ISSUER, audience: AUDIENCE });
    expect(second.kid).to.equal(first.kid);
    expect(second.jwks()).to.deep.equal(first.jwks());
    const verifier = new TokenVerifier(PROVIDER, { devIssuer: second });
    expect((await verifier.verify(token)).sub).to.equal('alice');
  });

  it('publishes only the public key, with kid, alg and use', async () => {
    const issuer = await loadOrCreateDevIssuer(dataDir, { issuer: ISSUER, audience: AUDIENCE });
    const [key] = issuer.jwks().keys;
    expect(key).to.include({ kty: 'EC', crv: 'P-256', kid: issuer.kid, alg: 'ES256', use: 'sig' });
    expect(key).not.to.have.property('d');
    expect(JSON.parse(readFileSync(issuer.keyPath, 'utf8'))).to.have.property('d');
  });

  it('signs Cognito-style ID tokens', async () => {
    const issuer = await loadOrCreateDevIssuer(dataDir, { issuer: ISSUER, audience: AUDIENCE });
    const token = await issuer.sign({ sub: 'alice', email: 'alice@example.com', ttlSeconds: 120 });
    expect(decodeProtectedHeader(token)).to.deep.equal({ alg: 'ES256', kid: issuer.kid, typ: 'JWT' });
    const claims = decodeJwt(token);
    expect(Object.keys(claims).sort()).to.deep.equal(
      ['aud', 'auth_time', 'cognito:username', 'email', 'email_verified', 'event_id', 'exp', 'iat', 'iss', 'jti', 'origin_jti', 'sub', 'token_use'].sort(),
    );
    expect(claims).to.include({ sub: 'alice', email: 'alice@example.com', email_verified: true, iss: ISSUER, token_use: 'id', 'cognito:username': 'alice' });
    expect(claims.aud).to.deep.equal([AUDIENCE]);
    expect((claims.exp as number) - (claims.iat as number)).to.equal(120);
    expect(claims.jti).to.match(/^[0-9a-f-]{36}$/);
    const plain = decodeJwt(await issuer.sign({ sub: 'bob' }));
    expect(plain).not.to.have.property('email');
    expect((plain.exp as number) - (plain.iat as number)).to.equal(3600);
    expect(decodeJwt(await issuer.sign({ sub: 'x', extraClaims: { iss: 'other', custom: 1 } }))).to.include({ iss: 'other', custom: 1 });
  });

  it('rejects bad sign requests', async () => {
    const issuer = await loadOrCreateDevIssuer(dataDir, { issuer: ISSUER, audience: AUDIENCE });
    for (const bad of [{ sub: '' }, { sub: 'a', ttlSeconds: 0 }, { sub: 'a', ttlSeconds: 1.5 }, { sub: 'a', ttlSeconds: 10 ** 9 }]) {
      let failed = false;
      await issuer.sign(bad).catch(() => (failed = true));
      expect(failed, JSON.stringify(bad)).to.equal(true);
    }
  });

  it('can use RS256 and keeps an existing key\'s algorithm', async () => {
    const rs = await loadOrCreateDevIssuer(dataDir, { issuer: ISSUER, audience: AUDIENCE, algorithm: 'RS256' });
    expect(rs.algorithm).to.equal('RS256');
    const again = await loadOrCreateDevIssuer(dataDir, { issuer: ISSUER, audience: AUDIENCE, algorithm: 'ES256' });
    expect([again.algorithm, again.kid]).to.deep.equal(['RS256', rs.kid]);
    expect((await new TokenVerifier(PROVIDER, { devIssuer: again }).verify(await rs.sign({ sub: 'alice' }))).sub).to.equal('alice');
  });

  it('tightens loose permissions and refuses an unusable key file', async () => {
    const issuer = await loadOrCreateDevIssuer(dataDir, { issuer: ISSUER, audience: AUDIENCE });
    chmodSync(issuer.keyPath, 0o644);
    await loadOrCreateDevIssuer(dataDir, { issuer: ISSUER, audience: AUDIENCE });
    expect(statSync(issuer.keyPath).mode & 0o777).to.equal(0o600);
    writeFileSync(issuer.keyPath, '{"kty":"oct","k":"abc"}');
    let message = '';
    await loadOrCreateDevIssuer(dataDir, { issuer: ISSUER, audience: AUDIENCE }).catch((err: Error) => (message = err.message));
    expect(message).to.match(/not an ES256 or RS256 private JWK/);
  });

  it('creates one key when several processes start at once', async () => {
    const issuers = await Promise.all(Array.from({ length: 5 }, () => loadOrCreateDevIssuer(dataDir, { issuer: ISSUER, audience: AUDIENCE })));
    expect(new Set(issuers.map((i) => i.kid)).size).to.equal(1);
  });
});
