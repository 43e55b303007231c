/**
 * The pure rules of verified callers: early refusals and the verdict of a TokenReview status
 * (audience, ServiceAccount principal), the cache bound, the routing of ServiceAccount tokens, and
 * the verified iam gateway's rules (proxyFrom, principal patterns, the function gateway's alias).
 * The verdict cache is driven by a recording TokenReviewer here; the real API server is in
 * e2e/operator/verified-callers.test.ts.
 */
import { expect } from 'chai';
import { inferAuthkind } from '../front-door/gateway.js';
import { AuthError } from './errors.js';
import { cacheUntil, earlyRefusal, looksLikeServiceAccountToken, verdictOf, type TokenReviewStatus } from './service-account.js';
import { datasetConfig, environmentConfig } from '../../test-support/auth-fixtures.js';
import { ServiceAccountVerifier, type TokenReviewer } from './token-review.js';
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

describe('verified callers: the verdict cache', () => {
  const token = saToken();
  let clock = NOW * 1000;
  const now = () => clock;

  it('asks once per token while the verdict holds, again after the bound; concurrent first requests share one review', async () => {
    const reviewer = new RecordingReviewer(new Map([[token, authenticated('system:serviceaccount:team-a:reader')]]));
    const verifier = new ServiceAccountVerifier(reviewer, { maxAgeMs: 10_000, now });
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
    const reviewer = new RecordingReviewer(new Map([[saToken({ exp: NOW + 86_400 }), authenticated('system:serviceaccount:team-a:reader')]]));
    let elapsed = 0;
    const verifier = new ServiceAccountVerifier(reviewer, { maxAgeMs: 3_600_000, now: () => NOW * 1000 + elapsed });
    await verifier.verify(saToken({ exp: NOW + 86_400 }), [AUD]);
    elapsed = 5 * 60_000 + 1;
    await verifier.verify(saToken({ exp: NOW + 86_400 }), [AUD]);
    expect(reviewer.reviews).to.equal(2);
  });

  it('is bounded in size: the least recently used verdict goes first', async () => {
    const tokens = [1, 2, 3].map((i) => saToken({ jti: String(i) }));
    const reviewer = new RecordingReviewer(new Map(tokens.map((t) => [t, authenticated('system:serviceaccount:team-a:reader')])));
    const verifier = new ServiceAccountVerifier(reviewer, { maxEntries: 2, now: () => NOW * 1000 });
    await verifier.verify(tokens[0], [AUD]);
    await verifier.verify(tokens[1], [AUD]);
    await verifier.verify(tokens[0], [AUD]); // 0 is now the most recently used
    await verifier.verify(tokens[2], [AUD]); // evicts 1
    expect(verifier.size).to.equal(2);
    expect(reviewer.reviews).to.equal(3);
    await verifier.verify(tokens[0], [AUD]);
    expect(reviewer.reviews).to.equal(3);
    await verifier.verify(tokens[1], [AUD]);
    expect(reviewer.reviews).to.equal(4);
  });

  it('an unreachable API server is a 503 for a token without a verdict; a cached verdict keeps serving; nothing is cached from the outage', async () => {
    const other = saToken({ jti: 'other' });
    const reviewer = new RecordingReviewer(new Map([[token, authenticated('system:serviceaccount:team-a:reader')], [other, authenticated('system:serviceaccount:team-a:other')]]));
    const verifier = new ServiceAccountVerifier(reviewer, { now: () => NOW * 1000 });
    await verifier.verify(token, [AUD]);
    reviewer.down = true;
    expect((await verifier.verify(token, [AUD])).ok).to.equal(true);
    const err = await verifier.verify(other, [AUD]).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(AuthError);
    expect((err as AuthError).status).to.equal(503);
    expect((err as AuthError).code).to.equal('TOKEN_REVIEW_UNAVAILABLE');
    expect((err as AuthError).message).to.not.include(other);
    reviewer.down = false;
    expect((await verifier.verify(other, [AUD])).ok).to.equal(true);
  });
});

describe('verified callers: the iam gateway with trust verified', () => {
  const env = environmentConfig({ gateways: { iam: { trust: 'verified', proxyFrom: ['10.1.0.0/16'], audiences: [AUD] } } });
  const dataset = datasetConfig({ auth: { iam: { principals: ['system:serviceaccount:team-a:*', 'front-asserted', 'service-local-function-service-gateway'] } }, caller: { super: ['system:serviceaccount:team-a:admin'] } });
  const answers = new Map<string, TokenReviewStatus>([
    [saToken(), authenticated('system:serviceaccount:team-a:reader')],
    [saToken({ sub: 'b' }), authenticated('system:serviceaccount:team-b:reader')],
    [saToken({ sub: 'gw' }), authenticated('system:serviceaccount:default:service-local-function-service-gateway')],
    [saToken({ sub: 'gw2' }), authenticated('system:serviceaccount:elsewhere:service-local-function-service-gateway')],
    [saToken({ sub: 'admin' }), authenticated('system:serviceaccount:team-a:admin')],
  ]);
  const verifier = new ServiceAccountVerifier(new RecordingReviewer(answers), { now: () => NOW * 1000 });
  const authenticate = (authorization: string | undefined, address = '10.2.0.1') => authenticateVerifiedIam(authorization, address, env, dataset, verifier);
  const refusal = (p: Promise<unknown>) => p.then(() => { throw new Error('expected a refusal'); }, (e: AuthError) => e);

  it('matches the ServiceAccount principal against the dataset\'s patterns; caller.id and super as for any principal', async () => {
    const caller = await authenticate(`Bearer ${saToken()}`);
    expect(caller).to.include({ schema: 'iam', id: 'system:serviceaccount:team-a:reader', super: false, anon: false });
    expect(caller.claims).to.deep.equal({ exp: NOW + 600 });
    expect((await authenticate(`Bearer ${saToken({ sub: 'admin' })}`)).super).to.equal(true);
    const err = await refusal(authenticate(`Bearer ${saToken({ sub: 'b' })}`));
    expect([err.status, err.code]).to.deep.equal([403, 'PRINCIPAL_NOT_ALLOWED']);
    expect(err.message).to.include('system:serviceaccount:team-b:reader').and.include('system:serviceaccount:team-b:*');
  });

  it('the Environment\'s own function gateway ServiceAccount also matches as the gateway\'s name; the same name elsewhere does not', async () => {
    expect((await authenticate(`Bearer ${saToken({ sub: 'gw' })}`)).id).to.equal('system:serviceaccount:default:service-local-function-service-gateway');
    expect((await refusal(authenticate(`Bearer ${saToken({ sub: 'gw2' })}`))).code).to.equal('PRINCIPAL_NOT_ALLOWED');
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
    const token = saToken({ jti: 'memo' });
    const reviewer = new RecordingReviewer(new Map([[token, authenticated('system:serviceaccount:team-a:reader')]]));
    const short = new ServiceAccountVerifier(reviewer, { maxAgeMs: 50 });
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
