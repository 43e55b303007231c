import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { authenticate, TokenVerifierCache } from './authenticator.js';
import { loadOrCreateDevIssuer } from './dev-issuer.js';
import { AuthError } from './errors.js';
import { datasetConfig, environmentConfig } from '../../test-support/auth-fixtures.js';

describe('authenticate', () => {
  let dataDir: string;
  let verifiers: TokenVerifierCache;
  const idp = { issuer: 'http://localhost:8080/.well-known/dev-issuer', audiences: ['data-access-local'], development: true };
  const env = environmentConfig({ identityProvider: idp });
  const dataset = datasetConfig({ auth: { iam: { principals: ['demo-admin'] } }, caller: { super: ['demo-admin'] } });

  before(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'das-auth-'));
    verifiers = new TokenVerifierCache({ dataDir });
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  async function failure(promise: Promise<unknown>): Promise<AuthError> {
    try {
      await promise;
    } catch (err) {
      expect(err).to.be.instanceOf(AuthError);
      return err as AuthError;
    }
    throw new Error('expected an AuthError');
  }

  it('authenticates iam requests by principal', async () => {
    expect(await authenticate({ authkind: 'iam', authorization: 'Proxy demo-admin' }, env, dataset, verifiers)).to.deep.equal({
      anon: false,
      schema: 'iam',
      id: 'demo-admin',
      claims: {},
      super: true,
    });
  });

  it('authenticates public requests with a token of the development issuer', async () => {
    const issuer = await loadOrCreateDevIssuer(dataDir, { issuer: idp.issuer, audience: idp.audiences[0] });
    const token = await issuer.sign({ sub: 'alice', email: 'alice@example.com' });
    const caller = await authenticate({ authkind: 'public', authorization: `Bearer ${token}` }, env, dataset, verifiers);
    expect(caller).to.deep.include({ anon: false, schema: 'public', id: 'alice', super: false });
    expect(caller.claims).to.include({ email: 'alice@example.com', token_use: 'id' });
  });

  it('answers 403 GATEWAY_DISABLED for a disabled gateway', async () => {
    const closed = environmentConfig({ identityProvider: idp, gateways: { iam: { enabled: false }, public: { enabled: false } } });
    for (const authkind of ['iam', 'public'] as const) {
      const err = await failure(authenticate({ authkind, authorization: 'Proxy demo-admin' }, closed, dataset, verifiers));
      expect([err.status, err.code]).to.deep.equal([403, 'GATEWAY_DISABLED']);
      expect(err.message).to.include(authkind);
    }
  });

  it('answers 403 IDENTITY_PROVIDER_NOT_CONFIGURED on the public gateway of an environment without one', async () => {
    const err = await failure(authenticate({ authkind: 'public', authorization: 'Bearer a.b.c' }, environmentConfig(), dataset, verifiers));
    expect([err.status, err.code]).to.deep.equal([403, 'IDENTITY_PROVIDER_NOT_CONFIGURED']);
  });

  it('keeps one verifier per environment and replaces it when the identity provider changes', async () => {
    const a = await verifiers.get(env);
    expect(await verifiers.get(environmentConfig({ identityProvider: idp }))).to.equal(a);
    const changed = await verifiers.get(environmentConfig({ identityProvider: { ...idp, audiences: ['other'] } }));
    expect(changed).not.to.equal(a);
    expect(await verifiers.get(environmentConfig())).to.equal(undefined);
  });
});
