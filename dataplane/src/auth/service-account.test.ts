/**
 * The pure rules of verified callers: early refusals and the verdict of a TokenReview status
 * (audience, ServiceAccount principal), the cache bound, the routing of ServiceAccount tokens, and
 * the verified iam gateway's rules (proxyFrom, principal patterns, the function gateway's alias).
 * The verifier is driven by tokens signed with a generated issuer key (the local signature check is
 * real jose) and a recording TokenReviewer here; the real API server is in
 * e2e/operator/verified-callers.test.ts.
 */
import { expect } from 'chai';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { SignJWT, type JWK } from 'jose';
import { inferAuthkind } from '../front-door/gateway.js';
import { AuthError } from './errors.js';
import { ServiceAccountIssuerKeys, type IssuerDocument } from './issuer-keys.js';
import { cacheUntil, earlyRefusal, looksLikeServiceAccountToken, verdictOf, type TokenReviewStatus } from './service-account.js';
import { datasetConfig, environmentConfig } from '../../test-support/auth-fixtures.js';
import { ServiceAccountVerifier, type ServiceAccountVerifierOptions, type TokenReviewer } from './token-review.js';
import { authenticateVerifiedIam } from './verified.js';

const AUD = 'dataaccess.dev/team-a/local';
const NOW = 1_800_000_000;

/** An unsigned JWT with these claims (signatures are the API server's business). */
function jwt(claims: Record<string, unknown>): string {
  const part = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'RS256', kid: 'k' })}.${part(claims)}.c2ln`;
}
const saToken = (extra: Record<string, unknown> = {}) =>
  jwt({ iss: 'https://kubernetes.default.svc', aud: [AUD], exp: NOW + 600, sub: 'system:serviceaccount:team-a:reader', 'kubernetes.io': { namespace: 'team-a' }, ...extra });

const authenticated = (username: string, audiences = [AUD]): TokenReviewStatus => ({ authenticated: true, user: { username }, audiences });

/** Answers as the API server would for tokens it knows; counts the reviews; `down` throws like an unreachable server. */
class RecordingReviewer implements TokenReviewer {
  reviews = 0;
  down = false;
  constructor(private readonly answers: Map<string, TokenReviewStatus>) {}
  revoke(token: string): void {
    this.answers.delete(token);
  }
  async review(token: string): Promise<TokenReviewStatus> {
    this.reviews++;
    if (this.down) throw new Error('connect ECONNREFUSED 127.0.0.1:6443');
    return this.answers.get(token) ?? { authenticated: false, error: 'invalid bearer token' };
  }
}

describe('verified callers: ServiceAccount token rules', () => {
  it('refuses before any TokenReview: not a JWT, expired by its own exp, or made for another audience', () => {
    expect(earlyRefusal('not-a-jwt', [AUD], NOW)?.code).to.equal('MALFORMED_TOKEN');
    expect(earlyRefusal(saToken({ exp: NOW - 1 }), [AUD], NOW)?.code).to.equal('TOKEN_EXPIRED');
    const other = earlyRefusal(saToken({ aud: ['https://kubernetes.default.svc'] }), [AUD], NOW);
    expect(other?.code).to.equal('WRONG_AUDIENCE');
    expect(other?.message).to.include(AUD);
    expect(earlyRefusal(saToken({ aud: AUD }), [AUD], NOW)).to.equal(undefined);
    expect(earlyRefusal(saToken({ aud: ['x', AUD] }), ['y', AUD], NOW)).to.equal(undefined);
  });

  it('a verdict needs authenticated, an asked-for audience and a ServiceAccount user', () => {
    expect(verdictOf(authenticated('system:serviceaccount:team-a:reader'), [AUD])).to.deep.equal({ ok: true, principal: 'system:serviceaccount:team-a:reader', namespace: 'team-a', name: 'reader' });
    const refused = verdictOf({ authenticated: false, error: 'service account token has been invalidated' }, [AUD]);
    expect(refused).to.include({ ok: false, code: 'TOKEN_NOT_AUTHENTICATED' });
    expect((refused as { message: string }).message).to.include('invalidated');
    expect(verdictOf(authenticated('system:serviceaccount:team-a:reader', []), [AUD])).to.include({ ok: false, code: 'WRONG_AUDIENCE' });
    expect(verdictOf(authenticated('alice@example.com'), [AUD])).to.include({ ok: false, code: 'NOT_A_SERVICE_ACCOUNT' });
    expect(verdictOf(authenticated('system:serviceaccount:team-a'), [AUD])).to.include({ ok: false, code: 'NOT_A_SERVICE_ACCOUNT' });
    expect(verdictOf(authenticated('system:serviceaccount:team-a:reader:extra'), [AUD])).to.include({ ok: false, code: 'NOT_A_SERVICE_ACCOUNT' });
  });

  it('a verdict is reused until the token expires, and never longer than the bound', () => {
    const nowMs = NOW * 1000;
    expect(cacheUntil(saToken({ exp: NOW + 60 }), nowMs, 300_000)).to.equal(nowMs + 60_000);
    expect(cacheUntil(saToken({ exp: NOW + 3600 }), nowMs, 300_000)).to.equal(nowMs + 300_000);
    expect(cacheUntil(saToken({ exp: 'soon' }), nowMs, 300_000)).to.equal(nowMs + 300_000);
  });

  it('routes Bearer ServiceAccount tokens to the iam gateway when the host names none; other Bearer tokens stay public', () => {
    expect(looksLikeServiceAccountToken(`Bearer ${saToken()}`)).to.equal(true);
    expect(looksLikeServiceAccountToken(`Bearer ${jwt({ sub: 'alice', 'kubernetes.io/serviceaccount/namespace': 'a' })}`)).to.equal(true);
    expect(inferAuthkind(`Bearer ${saToken()}`)).to.equal('iam');
    expect(inferAuthkind(`Bearer ${jwt({ sub: 'alice', iss: 'https://idp' })}`)).to.equal('public');
    expect(inferAuthkind('Bearer garbage')).to.equal('public');
    expect(inferAuthkind('Proxy demo-admin')).to.equal('iam');
    expect(inferAuthkind(undefined)).to.equal('public');
  });
});

const ISSUER = 'https://kubernetes.default.svc.cluster.local';

/** An issuer key pair with its JWK (kid set), like the API server's service-account key. */
function issuerKey(kid: string): { privateKey: KeyObject; jwk: JWK } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { privateKey, jwk: { ...(publicKey.export({ format: 'jwk' }) as JWK), kid, alg: 'ES256', use: 'sig' } };
}

/** The API server's discovery as a source: its keys can change; `down` throws like an unreachable server. */
class IssuerSource {
  fetches = 0;
  down = false;
  constructor(public jwks: JWK[]) {}
  readonly fetch = async (): Promise<IssuerDocument> => {
    this.fetches++;
    if (this.down) throw new Error('connect ECONNREFUSED 127.0.0.1:6443');
    return { issuer: ISSUER, jwks: { keys: this.jwks } };
  };
}

const current = issuerKey('k1');
const forger = issuerKey('k1'); // same kid, another key: what a forger would try

/** A ServiceAccount token as the API server signs one (ES256 here; the verifier takes what the keys say). */
async function signed(claims: Record<string, unknown> = {}, key = current, header: Record<string, unknown> = {}): Promise<string> {
  return new SignJWT({ 'kubernetes.io': { namespace: 'team-a', serviceaccount: { name: 'reader' } }, aud: [AUD], iss: ISSUER, exp: NOW + 600, iat: NOW - 1, sub: 'system:serviceaccount:team-a:reader', ...claims })
    .setProtectedHeader({ alg: 'ES256', kid: key.jwk.kid, ...header })
    .sign(key.privateKey);
}

function verifierFor(reviewer: TokenReviewer, source: IssuerSource, options: ServiceAccountVerifierOptions & { now?: () => number } = {}) {
  const now = options.now ?? (() => NOW * 1000);
  const keys = new ServiceAccountIssuerKeys(source.fetch, { now });
  return new ServiceAccountVerifier(reviewer, keys, { now, ...options });
}

const refusalOf = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error('expected a refusal');
    },
    (e: AuthError) => e,
  );

describe('verified callers: local verification before any TokenReview', () => {
  it('forged tokens are refused locally, by reason, and remembered: no TokenReview, one key fetch', async () => {
    const source = new IssuerSource([current.jwk]);
    const reviewer = new RecordingReviewer(new Map());
    const verifier = verifierFor(reviewer, source);
    const cases: Array<[string, Promise<string>]> = [
      ['BAD_SIGNATURE', signed({}, forger)],
      ['WRONG_ISSUER', signed({ iss: 'https://elsewhere.example' })],
      ['WRONG_AUDIENCE', signed({ aud: ['https://kubernetes.default.svc'] })],
      ['TOKEN_EXPIRED', signed({ exp: NOW - 1 })],
      ['MISSING_CLAIM', signed({ exp: undefined })],
      ['TOKEN_NOT_YET_VALID', signed({ nbf: NOW + 3600 })],
      ['UNKNOWN_KEY', signed({}, forger, { kid: 'invented' })],
    ];
    for (const [code, token] of cases) {
      const verdict = await verifier.verify(await token, [AUD]);
      expect(verdict, code).to.include({ ok: false, code });
    }
    const tampered = await signed();
    expect(await verifier.verify(`${tampered.slice(0, tampered.lastIndexOf('.'))}.${'A'.repeat(86)}`, [AUD])).to.include({ ok: false, code: 'BAD_SIGNATURE' });
    expect(reviewer.reviews).to.equal(0);
    expect(source.fetches).to.equal(1); // the unknown kid came within the refetch cooldown of the first fetch
    // Every refusal except the unknown key (the cluster may add keys) and the expired one (refused by its own exp) is remembered.
    expect(verifier.refusals).to.equal(6);
  });

  it('2,000 distinct forged tokens cost no review, a bounded number of key fetches and bounded memory', async () => {
    const source = new IssuerSource([current.jwk]);
    const reviewer = new RecordingReviewer(new Map());
    let clock = NOW * 1000;
    const verifier = verifierFor(reviewer, source, { maxEntries: 500, now: () => clock });
    for (let i = 0; i < 2000; i++) {
      clock += 50; // 100 s in all: unknown kids may refetch the keys at most once per 30 s
      const token = await signed({ jti: String(i) }, forger, i % 2 ? { kid: `kid-${i}` } : {});
      expect((await verifier.verify(token, [AUD])).ok).to.equal(false);
    }
    expect(reviewer.reviews).to.equal(0);
    expect(source.fetches).to.be.within(1, 5);
    expect(verifier.refusals).to.be.at.most(500);
  });

  it('a token signed with a key the cluster added since is accepted after one refetch', async () => {
    const source = new IssuerSource([current.jwk]);
    const answers = new Map<string, TokenReviewStatus>();
    const reviewer = new RecordingReviewer(answers);
    let clock = NOW * 1000;
    const verifier = verifierFor(reviewer, source, { now: () => clock });
    const first = await signed();
    answers.set(first, authenticated('system:serviceaccount:team-a:reader'));
    expect((await verifier.verify(first, [AUD])).ok).to.equal(true);
    const rotated = issuerKey('k2');
    source.jwks = [current.jwk, rotated.jwk];
    clock += 31_000;
    const next = await signed({ jti: 'rotated' }, rotated);
    answers.set(next, authenticated('system:serviceaccount:team-a:reader'));
    expect((await verifier.verify(next, [AUD])).ok).to.equal(true);
    expect(source.fetches).to.equal(2);
  });

  it('keys that cannot be read: 503 naming no address, the cause in the log; recovers by itself', async () => {
    const source = new IssuerSource([current.jwk]);
    source.down = true;
    const logged: string[] = [];
    const token = await signed();
    let clock = NOW * 1000;
    const verifier = verifierFor(new RecordingReviewer(new Map([[token, authenticated('system:serviceaccount:team-a:reader')]])), source, { log: (m) => logged.push(m), now: () => clock });
    const err = await refusalOf(verifier.verify(token, [AUD]));
    expect([err.status, err.code]).to.deep.equal([503, 'TOKEN_REVIEW_UNAVAILABLE']);
    expect(err.message).to.not.match(/127\.0\.0\.1|ECONNREFUSED|6443/);
    expect(logged.join('\n')).to.include('ECONNREFUSED 127.0.0.1:6443');
    // Retried at a bounded rate, not once per token.
    for (let i = 0; i < 20; i++) await refusalOf(verifier.verify(await signed({ jti: String(i) }), [AUD]));
    expect(source.fetches).to.equal(1);
    source.down = false;
    clock += 1_000;
    expect((await verifier.verify(token, [AUD])).ok).to.equal(true);
  });
});

describe('verified callers: the verdict cache and the TokenReview cap', () => {
  let clock = NOW * 1000;
  const now = () => clock;

  it('asks once per token while the verdict holds, again after the bound; concurrent first requests share one review', async () => {
    const token = await signed();
    const reviewer = new RecordingReviewer(new Map([[token, authenticated('system:serviceaccount:team-a:reader')]]));
    const verifier = verifierFor(reviewer, new IssuerSource([current.jwk]), { maxAgeMs: 10_000, now });
    const first = await Promise.all([verifier.verify(token, [AUD]), verifier.verify(token, [AUD]), verifier.verify(token, [AUD])]);
    expect(first.every((v) => v.ok)).to.equal(true);
    expect(reviewer.reviews).to.equal(1);
    clock += 9_000;
    await verifier.verify(token, [AUD]);
    expect(reviewer.reviews).to.equal(1);
    clock += 2_000;
    await verifier.verify(token, [AUD]);
    expect(reviewer.reviews).to.equal(2);
  });

  it('never keeps a verdict beyond 5 minutes whatever it is configured to', async () => {
    const token = await signed({ exp: NOW + 86_400 });
    const reviewer = new RecordingReviewer(new Map([[token, authenticated('system:serviceaccount:team-a:reader')]]));
    let elapsed = 0;
    const verifier = verifierFor(reviewer, new IssuerSource([current.jwk]), { maxAgeMs: 3_600_000, now: () => NOW * 1000 + elapsed });
    await verifier.verify(token, [AUD]);
    elapsed = 5 * 60_000 + 1;
    await verifier.verify(token, [AUD]);
    expect(reviewer.reviews).to.equal(2);
  });

  it('is bounded in size: the least recently used verdict goes first; refusals do not push out acceptances', async () => {
    const tokens = await Promise.all([1, 2, 3].map((i) => signed({ jti: String(i) })));
    const reviewer = new RecordingReviewer(new Map(tokens.map((t) => [t, authenticated('system:serviceaccount:team-a:reader')])));
    const verifier = verifierFor(reviewer, new IssuerSource([current.jwk]), { maxEntries: 2 });
    await verifier.verify(tokens[0], [AUD]);
    await verifier.verify(tokens[1], [AUD]);
    await verifier.verify(tokens[0], [AUD]); // 0 is now the most recently used
    for (let i = 0; i < 5; i++) await verifier.verify(await signed({ jti: `f${i}` }, forger), [AUD]);
    expect(reviewer.reviews).to.equal(2);
    await verifier.verify(tokens[2], [AUD]); // evicts 1
    expect(verifier.size).to.equal(2);
    expect(verifier.refusals).to.equal(2);
    expect(reviewer.reviews).to.equal(3);
    await verifier.verify(tokens[0], [AUD]);
    expect(reviewer.reviews).to.equal(3);
    await verifier.verify(tokens[1], [AUD]);
    expect(reviewer.reviews).to.equal(4);
  });

  it('a TokenReview refusal (a genuine token whose Pod is gone) is remembered as long as an acceptance would be', async () => {
    const token = await signed({ jti: 'revoked' });
    const reviewer = new RecordingReviewer(new Map());
    let elapsed = 0;
    const verifier = verifierFor(reviewer, new IssuerSource([current.jwk]), { maxAgeMs: 10_000, now: () => NOW * 1000 + elapsed });
    for (let i = 0; i < 5; i++) expect(await verifier.verify(token, [AUD])).to.include({ ok: false, code: 'TOKEN_NOT_AUTHENTICATED' });
    expect(reviewer.reviews).to.equal(1);
    elapsed = 10_001;
    await verifier.verify(token, [AUD]);
    expect(reviewer.reviews).to.equal(2);
  });

  it('an unreachable API server is a 503 naming no address for a token without a verdict; a cached verdict keeps serving; nothing is cached from the outage', async () => {
    const token = await signed({ jti: 'known' });
    const other = await signed({ jti: 'other' });
    const reviewer = new RecordingReviewer(new Map([[token, authenticated('system:serviceaccount:team-a:reader')], [other, authenticated('system:serviceaccount:team-a:other')]]));
    const logged: string[] = [];
    const verifier = verifierFor(reviewer, new IssuerSource([current.jwk]), { log: (m) => logged.push(m) });
    await verifier.verify(token, [AUD]);
    reviewer.down = true;
    expect((await verifier.verify(token, [AUD])).ok).to.equal(true);
    const err = await refusalOf(verifier.verify(other, [AUD]));
    expect(err).to.be.instanceOf(AuthError);
    expect([err.status, err.code]).to.deep.equal([503, 'TOKEN_REVIEW_UNAVAILABLE']);
    expect(err.message).to.not.include(other).and.not.match(/127\.0\.0\.1|ECONNREFUSED|6443/);
    expect(logged.join('\n')).to.include('ECONNREFUSED');
    reviewer.down = false;
    expect((await verifier.verify(other, [AUD])).ok).to.equal(true);
  });

  it('reviews in flight are capped: a silent API server holds at most maxInFlight reviews, 4 × as many callers wait, the rest get 503 at once', async () => {
    const tokens = await Promise.all(Array.from({ length: 100 }, (_, i) => signed({ jti: `cap${i}` })));
    const release: Array<() => void> = [];
    let started = 0;
    const silent: TokenReviewer = {
      review: () => {
        started++;
        return new Promise((resolve) => release.push(() => resolve(authenticated('system:serviceaccount:team-a:reader'))));
      },
    };
    const verifier = verifierFor(silent, new IssuerSource([current.jwk]), { maxInFlight: 4 });
    let settled = 0;
    const outcomes = tokens.map((t) =>
      verifier
        .verify(t, [AUD])
        .then((v) => (v.ok ? 'ok' : v.code), (e: AuthError) => `${e.status} ${e.code}`)
        .finally(() => settled++),
    );
    // Everyone beyond the slots and the waiting places is answered without waiting for the API server.
    while (settled < 80) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(started).to.equal(4);
    while (release.length) release.shift()!(), await new Promise((resolve) => setImmediate(resolve));
    const results = await Promise.all(outcomes);
    expect(results.filter((r) => r === 'ok')).to.have.length(4 + 16);
    expect(results.filter((r) => r === '503 TOKEN_REVIEW_UNAVAILABLE')).to.have.length(80);
    expect(started).to.equal(20);
  });
});

describe('verified callers: the iam gateway with trust verified', () => {
  const env = environmentConfig({ gateways: { iam: { trust: 'verified', proxyFrom: ['10.1.0.0/16'], audiences: [AUD] } } });
  const dataset = datasetConfig({ auth: { iam: { principals: ['system:serviceaccount:team-a:*', 'front-asserted', 'service-local-function-service-gateway'] } }, caller: { super: ['system:serviceaccount:team-a:admin'] } });
  const principals: Record<string, string> = {
    reader: 'system:serviceaccount:team-a:reader',
    b: 'system:serviceaccount:team-b:reader',
    gw: 'system:serviceaccount:default:service-local-function-service-gateway',
    gw2: 'system:serviceaccount:elsewhere:service-local-function-service-gateway',
    admin: 'system:serviceaccount:team-a:admin',
  };
  const tok: Record<string, string> = {};
  const answers = new Map<string, TokenReviewStatus>();
  before(async () => {
    for (const [name, principal] of Object.entries(principals)) answers.set((tok[name] = await signed({ jti: name })), authenticated(principal));
  });
  const verifier = verifierFor(new RecordingReviewer(answers), new IssuerSource([current.jwk]));
  const authenticate = (authorization: string | undefined, address = '10.2.0.1') => authenticateVerifiedIam(authorization, address, env, dataset, verifier);
  const refusal = (p: Promise<unknown>) => p.then(() => { throw new Error('expected a refusal'); }, (e: AuthError) => e);

  it('matches the ServiceAccount principal against the dataset\'s patterns; caller.id and super as for any principal', async () => {
    const caller = await authenticate(`Bearer ${tok.reader}`);
    expect(caller).to.include({ schema: 'iam', id: 'system:serviceaccount:team-a:reader', super: false, anon: false });
    expect(caller.claims).to.deep.equal({ exp: NOW + 600 });
    expect((await authenticate(`Bearer ${tok.admin}`)).super).to.equal(true);
    const err = await refusal(authenticate(`Bearer ${tok.b}`));
    expect([err.status, err.code]).to.deep.equal([403, 'PRINCIPAL_NOT_ALLOWED']);
    expect(err.message).to.include('system:serviceaccount:team-b:reader').and.include('system:serviceaccount:team-b:*');
  });

  it('the Environment\'s own function gateway ServiceAccount also matches as the gateway\'s name; the same name elsewhere does not', async () => {
    expect((await authenticate(`Bearer ${tok.gw}`)).id).to.equal('system:serviceaccount:default:service-local-function-service-gateway');
    expect((await refusal(authenticate(`Bearer ${tok.gw2}`))).code).to.equal('PRINCIPAL_NOT_ALLOWED');
  });

  it('believes Proxy only from proxyFrom, naming the rule and the address otherwise', async () => {
    expect((await authenticate('Proxy front-asserted', '10.1.2.3')).id).to.equal('front-asserted');
    expect((await authenticate('Proxy front-asserted', '::ffff:10.1.2.3')).id).to.equal('front-asserted');
    const err = await refusal(authenticate('Proxy front-asserted', '10.2.0.1'));
    expect([err.status, err.code]).to.deep.equal([401, 'PROXY_NOT_TRUSTED']);
    expect(err.message).to.include('spec.gateways.iam.proxyFrom').and.include('10.1.0.0/16').and.include('10.2.0.1');
    const none = environmentConfig({ gateways: { iam: { trust: 'verified' } } });
    const closed = await refusal(authenticateVerifiedIam('Proxy front-asserted', '10.1.2.3', none, dataset, verifier));
    expect(closed.code).to.equal('PROXY_NOT_TRUSTED');
    expect(closed.message).to.include('(empty)');
  });

  it('a repeated token is served from memory until its verdict\'s bound, then asked about again (a revoked one is refused)', async () => {
    const token = await signed({ jti: 'memo', exp: Math.floor(Date.now() / 1000) + 600 });
    const reviewer = new RecordingReviewer(new Map([[token, authenticated('system:serviceaccount:team-a:reader')]]));
    const short = verifierFor(reviewer, new IssuerSource([current.jwk]), { maxAgeMs: 50, now: Date.now });
    const once = () => authenticateVerifiedIam(`Bearer ${token}`, '10.2.0.1', env, dataset, short);
    expect((await once()).id).to.equal('system:serviceaccount:team-a:reader');
    expect((await once()).id).to.equal('system:serviceaccount:team-a:reader');
    expect(reviewer.reviews).to.equal(1);
    reviewer.revoke(token);
    await new Promise((resolve) => setTimeout(resolve, 80));
    const err = await refusal(once());
    expect([err.status, err.code]).to.deep.equal([401, 'TOKEN_NOT_AUTHENTICATED']);
  });

  it('other schemes and missing credentials are 401 with the Bearer challenge', async () => {
    for (const header of [undefined, 'Basic dXNlcjpwYXNz', 'Bearer']) {
      const err = await refusal(authenticate(header));
      expect(err.status).to.equal(401);
      expect(err.challenge).to.equal('Bearer realm="iam"');
    }
  });
});
