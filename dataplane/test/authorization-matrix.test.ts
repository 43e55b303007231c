/**
 * Every endpoint × gateway × credential, through the real HTTP server, the development identity
 * provider's real signing key, and a real PostgreSQL.
 */
import { expect } from 'chai';
import { generateKeyPair, SignJWT, importJWK, exportJWK, type JWK } from 'jose';
import { readFileSync } from 'node:fs';
import { devIssuerKeyPath, loadOrCreateDevIssuer } from '../src/auth/dev-issuer.js';
import { startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { call } from '../test-support/http.js';

const ISSUER = 'http://localhost:8080/.well-known/dev-issuer';
const AUDIENCE = 'data-access-local';

type Credential = { name: string; header: () => string | undefined };
type Endpoint = { name: string; method: string; path: string; body?: unknown; okStatus: number; publicStatus?: number; publicCode?: string; publicRefusesAll?: boolean };

const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

describe('authorization matrix: endpoint × gateway × credential', function () {
  this.timeout(60000);
  let dp: TestDataPlane;
  const tokens: Record<string, string> = {};

  before(async () => {
    dp = await startTestDataPlane();
    const issuer = await loadOrCreateDevIssuer(dp.dataDir, { issuer: ISSUER, audience: AUDIENCE });
    const jwk = JSON.parse(readFileSync(devIssuerKeyPath(dp.dataDir), 'utf8')) as JWK;
    const key = await importJWK(jwk, jwk.alg);
    const now = Math.floor(Date.now() / 1000);
    const sign = (claims: Record<string, unknown>, header: Record<string, unknown> = {}) =>
      new SignJWT({ sub: 'alice', token_use: 'id', ...claims }).setProtectedHeader({ alg: jwk.alg!, kid: jwk.kid, ...header }).sign(key);
    tokens.valid = await issuer.sign({ sub: 'alice', email: 'alice@example.com' });
    tokens.expired = await sign({ iss: ISSUER, aud: [AUDIENCE], iat: now - 7200, exp: now - 3600 });
    tokens.wrongIssuer = await sign({ iss: 'https://evil.example.com', aud: [AUDIENCE], iat: now, exp: now + 600 });
    tokens.wrongAudience = await sign({ iss: ISSUER, aud: ['someone-else'], iat: now, exp: now + 600 });
    tokens.algNone = `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ sub: 'alice', iss: ISSUER, aud: [AUDIENCE], iat: now, exp: now + 600 })}.`;
    const publicJwk = { ...jwk };
    delete publicJwk.d;
    const hmacSecret = new TextEncoder().encode(JSON.stringify(publicJwk));
    tokens.hmacConfusion = await new SignJWT({ sub: 'alice', iss: ISSUER, aud: [AUDIENCE], iat: now, exp: now + 600 })
      .setProtectedHeader({ alg: 'HS256', kid: jwk.kid })
      .sign(hmacSecret);
    const [h, p, s] = tokens.valid.split('.');
    tokens.tampered = `${h}.${b64({ ...JSON.parse(Buffer.from(p, 'base64url').toString()), sub: 'mallory' })}.${s}`;
    tokens.tamperedSignature = `${h}.${p}.${s.slice(0, -4)}${s.slice(-4) === 'AAAA' ? 'BBBB' : 'AAAA'}`;
    const other = await generateKeyPair('ES256', { extractable: true });
    await exportJWK(other.publicKey);
    tokens.unknownKid = await new SignJWT({ sub: 'alice', iss: ISSUER, aud: [AUDIENCE], iat: now, exp: now + 600 })
      .setProtectedHeader({ alg: 'ES256', kid: 'not-a-known-key' })
      .sign(other.privateKey);
    const created = await call(dp.url, {
      host: 'iam.localhost',
      headers: { authorization: 'Proxy demo-admin' },
      path: '/demo',
      body: { create: { schema: 'demo.Company', id: 'm1', data: { name: 'Matrix' } } },
    });
    expect(created.status).to.equal(201);
  });
  after(async () => dp?.stop());

  const endpoints: Endpoint[] = [
    { name: 'GET /{dataset}/{schema}/{id}', method: 'GET', path: '/demo/demo.Company/m1', okStatus: 200 },
    { name: 'POST /{dataset}', method: 'POST', path: '/demo', body: { read: { schema: 'demo.Company', id: 'm1' } }, okStatus: 200 },
    { name: 'GET /{dataset}/echo', method: 'GET', path: '/demo/echo', okStatus: 200 },
    {
      name: 'POST /{dataset}/raw-query',
      method: 'POST',
      path: '/demo/raw-query',
      body: { sql: 'SELECT @{c.name} AS name FROM @{c}', using: { c: 'demo.Company' } },
      okStatus: 200,
      publicStatus: 403,
      publicCode: 'RAW_SQL_IAM_ONLY',
      // Not served on the public gateway at all: the same 403 whatever the credentials.
      publicRefusesAll: true,
    },
  ];

  const credentials: (Credential & { iam: [number, string?]; public: [number, string?] })[] = [
    { name: 'none', header: () => undefined, iam: [401, 'MISSING_CREDENTIALS'], public: [401, 'MISSING_CREDENTIALS'] },
    { name: 'malformed', header: () => 'Proxy', iam: [401, 'MALFORMED_CREDENTIALS'], public: [401] },
    { name: 'malformed bearer', header: () => 'Bearer not.a-token', iam: [401, 'WRONG_SCHEME'], public: [401, 'MALFORMED_TOKEN'] },
    { name: 'wrong scheme (Basic)', header: () => 'Basic ZGVtbzpkZW1v', iam: [401, 'WRONG_SCHEME'], public: [401, 'WRONG_SCHEME'] },
    { name: 'unknown principal', header: () => 'Proxy arn:aws:iam::1:role/stranger', iam: [403, 'PRINCIPAL_NOT_ALLOWED'], public: [401, 'WRONG_SCHEME'] },
    { name: 'allowed principal', header: () => 'Proxy demo-admin', iam: [0], public: [401, 'WRONG_SCHEME'] },
    { name: 'expired token', header: () => `Bearer ${tokens.expired}`, iam: [401, 'WRONG_SCHEME'], public: [401, 'TOKEN_EXPIRED'] },
    { name: 'wrong issuer', header: () => `Bearer ${tokens.wrongIssuer}`, iam: [401, 'WRONG_SCHEME'], public: [401, 'WRONG_ISSUER'] },
    { name: 'wrong audience', header: () => `Bearer ${tokens.wrongAudience}`, iam: [401, 'WRONG_SCHEME'], public: [401, 'WRONG_AUDIENCE'] },
    { name: 'alg: none', header: () => `Bearer ${tokens.algNone}`, iam: [401, 'WRONG_SCHEME'], public: [401, 'ALGORITHM_NOT_ALLOWED'] },
    { name: 'HMAC with the public key', header: () => `Bearer ${tokens.hmacConfusion}`, iam: [401, 'WRONG_SCHEME'], public: [401, 'ALGORITHM_NOT_ALLOWED'] },
    { name: 'tampered payload', header: () => `Bearer ${tokens.tampered}`, iam: [401, 'WRONG_SCHEME'], public: [401, 'BAD_SIGNATURE'] },
    { name: 'tampered signature', header: () => `Bearer ${tokens.tamperedSignature}`, iam: [401, 'WRONG_SCHEME'], public: [401, 'BAD_SIGNATURE'] },
    { name: 'unknown kid', header: () => `Bearer ${tokens.unknownKid}`, iam: [401, 'WRONG_SCHEME'], public: [401, 'UNKNOWN_KEY'] },
    { name: 'valid token', header: () => `Bearer ${tokens.valid}`, iam: [401, 'WRONG_SCHEME'], public: [0] },
  ];

  for (const gateway of ['iam', 'public'] as const) {
    for (const endpoint of endpoints) {
      for (const credential of credentials) {
        const refused = gateway === 'public' && endpoint.publicRefusesAll;
        const [status, code] = refused ? [0] : credential[gateway];
        const expectOk = status === 0;
        const wantStatus = expectOk ? (gateway === 'public' && endpoint.publicStatus ? endpoint.publicStatus : endpoint.okStatus) : status;
        const wantCode = expectOk ? (gateway === 'public' ? endpoint.publicCode : undefined) : code;
        it(`${gateway} · ${endpoint.name} · ${credential.name} → ${wantStatus}${wantCode ? ` ${wantCode}` : ''}`, async () => {
          const header = credential.header();
          const res = await call(dp.url, {
            method: endpoint.method,
            path: endpoint.path,
            host: `${gateway}.localhost`,
            headers: header === undefined ? {} : { authorization: header },
            body: endpoint.body,
          });
          expect(res.status, res.text).to.equal(wantStatus);
          if (wantCode) expect(res.json.error.code).to.equal(wantCode);
          if (res.status === 401) expect(res.headers['www-authenticate']).to.be.a('string');
          for (const token of Object.values(tokens)) expect(res.text).to.not.contain(token.split('.')[2] || token);
        });
      }
    }
  }

  it('reports the caller on echo: iam principal, super flag, and the token claims on public', async () => {
    const iam = await call(dp.url, { host: 'iam.localhost', path: '/demo/echo', headers: { authorization: 'Proxy demo-admin' } });
    expect(iam.json.caller).to.deep.equal({ anon: false, schema: 'iam', id: 'demo-admin', claims: {}, super: true });
    const pub = await call(dp.url, { host: 'public.localhost', path: '/demo/echo?x=1', headers: { authorization: `Bearer ${tokens.valid}`, 'x-custom': 'y' } });
    expect(pub.status).to.equal(200);
    const echo = pub.json;
    expect(Object.keys(echo).sort()).to.deep.equal(['accept', 'caller', 'contentType', 'headers', 'method', 'path', 'query', 'requestId'].sort());
    expect(echo).to.deep.include({ path: '/demo/echo', method: 'get', headers: { empty: false }, query: { empty: false }, contentType: 'json', accept: 'json' });
    expect(echo.requestId).to.equal(pub.headers['x-request-id']);
    expect(echo.caller).to.include({ anon: false, schema: 'public', id: 'alice', super: false });
    expect(echo.caller.claims).to.include({ sub: 'alice', email: 'alice@example.com', iss: ISSUER, token_use: 'id', 'cognito:username': 'alice' });
    expect(echo.caller.claims.aud).to.deep.equal([AUDIENCE]);
    for (const claim of ['exp', 'iat', 'auth_time', 'jti', 'email_verified']) expect(echo.caller.claims).to.have.property(claim);
  });

  it('refuses raw SQL on a dataset that has not enabled it, with 403', async () => {
    const res = await call(dp.url, {
      host: 'iam.localhost',
      path: '/sealed/raw-query',
      headers: { authorization: 'Proxy demo-admin' },
      body: { sql: 'SELECT 1 AS one' },
    });
    expect(res.status).to.equal(403);
    expect(res.json.error.code).to.equal('RAW_SQL_DISABLED');
  });

  it('serves echo and raw SQL with the dataset as a host label too', async () => {
    const headers = { authorization: 'Proxy demo-admin' };
    const echo = await call(dp.url, { host: 'demo.iam.localhost', path: '/echo', headers });
    expect(echo.status).to.equal(200);
    expect(echo.json.caller.id).to.equal('demo-admin');
    const raw = await call(dp.url, { host: 'demo.iam.localhost', path: '/raw-query', headers, body: { sql: 'SELECT @{c.name} AS name FROM @{c} WHERE @{c.id} = ${id}', using: { c: 'demo.Company' }, arguments: { id: { value: 'm1', type: 'string' } } } });
    expect(raw.status, raw.text).to.equal(200);
    expect(raw.json).to.deep.equal([{ name: 'Matrix' }]);
    const pub = await call(dp.url, { host: 'demo.public.localhost', path: '/echo', headers: { authorization: `Bearer ${tokens.valid}` } });
    expect(pub.json.caller.id).to.equal('alice');
  });
});
