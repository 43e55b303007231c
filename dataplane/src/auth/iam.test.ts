import { expect } from 'chai';
import { AuthError } from './errors.js';
import { authenticateIam } from './iam.js';
import { datasetConfig } from '../../test-support/auth-fixtures.js';

function failure(fn: () => unknown): AuthError {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(AuthError);
    return err as AuthError;
  }
  throw new Error('expected an AuthError');
}

describe('iam authentication', () => {
  const dataset = datasetConfig({
    auth: { iam: { principals: ['demo-admin', 'arn:aws:iam::123456789012:role/*'] } },
    caller: { super: ['demo-admin'] },
  });

  it('rejects a request without credentials with 401 MISSING_CREDENTIALS', () => {
    for (const header of [undefined, '', '   ']) {
      const err = failure(() => authenticateIam(header, dataset));
      expect(err.status).to.equal(401);
      expect(err.code).to.equal('MISSING_CREDENTIALS');
      expect(err.challenge).to.equal('Proxy realm="iam"');
      expect(err.message).to.match(/Authorization: Proxy/);
    }
  });

  it('serves an anonymous caller when the dataset allows it', () => {
    const anon = datasetConfig({ auth: { iam: { principals: [] } }, caller: { anon: true, super: ['*'] } });
    expect(authenticateIam(undefined, anon)).to.deep.equal({ anon: true, schema: 'anonymous', id: 'anonymous', claims: {}, super: false });
    // Credentials that are given are still checked: no silent downgrade to anonymous.
    expect(failure(() => authenticateIam('Bearer x.y.z', anon)).code).to.equal('WRONG_SCHEME');
    expect(failure(() => authenticateIam('Proxy someone', anon)).code).to.equal('PRINCIPAL_NOT_ALLOWED');
  });

  it('rejects another scheme with 401 WRONG_SCHEME, without echoing the credential', () => {
    const bearer = failure(() => authenticateIam('Bearer eyJhbGciOiJSUzI1NiJ9.e30.c2ln', dataset));
    expect([bearer.status, bearer.code]).to.deep.equal([401, 'WRONG_SCHEME']);
    expect(bearer.message).to.include('public gateway');
    expect(bearer.message).not.to.include('eyJ');
    const basic = failure(() => authenticateIam('Basic ZGVtbzpzZWNyZXQ=', dataset));
    expect(basic.code).to.equal('WRONG_SCHEME');
    expect(basic.message).not.to.include('ZGVtbzpzZWNyZXQ');
    // A bare token where the scheme belongs is not echoed either.
    const bare = failure(() => authenticateIam('secretvalue', dataset));
    expect(bare.code).to.equal('WRONG_SCHEME');
    expect(bare.message).not.to.include('secretvalue');
  });

  it('rejects malformed credentials with 401 MALFORMED_CREDENTIALS', () => {
    for (const header of ['Proxy', 'Proxy    ', 'Proxy demo admin', 'Proxy demo\u0001admin', 'Proxy dém', `Proxy ${'a'.repeat(2049)}`, '"Proxy" demo-admin', 'Pro(xy demo-admin']) {
      const err = failure(() => authenticateIam(header, dataset));
      expect([err.status, err.code], header).to.deep.equal([401, 'MALFORMED_CREDENTIALS']);
    }
  });

  it('accepts the scheme in any letter case and a principal of 2048 characters', () => {
    expect(authenticateIam('proxy demo-admin', dataset).id).to.equal('demo-admin');
    expect(authenticateIam('PROXY\tdemo-admin', dataset).id).to.equal('demo-admin');
    const long = `arn:aws:iam::123456789012:role/${'r'.repeat(2048 - 31)}`;
    expect(long.length).to.equal(2048);
    expect(authenticateIam(`Proxy ${long}`, dataset).id).to.equal(long);
  });

  it('a remembered acceptance ends with the config: a principal removed from a new config is refused at once', () => {
    const before = datasetConfig({ auth: { iam: { principals: ['svc-a', 'svc-b'] } } });
    const first = authenticateIam('Proxy svc-a', before);
    expect(authenticateIam('Proxy svc-a', before)).to.equal(first); // same request again: remembered
    expect(Object.isFrozen(first)).to.equal(true);
    expect(authenticateIam('Proxy svc-b', before).id).to.equal('svc-b');
    const after = datasetConfig({ auth: { iam: { principals: ['svc-b'] } } });
    expect(failure(() => authenticateIam('Proxy svc-a', after)).code).to.equal('PRINCIPAL_NOT_ALLOWED');
    expect(authenticateIam('Proxy svc-b', after).id).to.equal('svc-b');
    // A refusal is not remembered either: the same header after the principal is added succeeds.
    const readded = datasetConfig({ auth: { iam: { principals: ['svc-a'] } } });
    expect(authenticateIam('Proxy svc-a', readded).id).to.equal('svc-a');
  });

  it('rejects a principal the dataset does not list with 403 PRINCIPAL_NOT_ALLOWED', () => {
    const err = failure(() => authenticateIam('Proxy arn:aws:iam::999999999999:role/reader', dataset));
    expect([err.status, err.code]).to.deep.equal([403, 'PRINCIPAL_NOT_ALLOWED']);
    expect(err.message).to.include('auth.iam.principals');
    const none = datasetConfig({ auth: { iam: {} } });
    expect(failure(() => authenticateIam('Proxy demo-admin', none)).code).to.equal('PRINCIPAL_NOT_ALLOWED');
  });

  it('authenticates an allowed principal, exact or by pattern', () => {
    expect(authenticateIam('Proxy arn:aws:iam::123456789012:role/reader', dataset)).to.deep.equal({
      anon: false,
      schema: 'iam',
      id: 'arn:aws:iam::123456789012:role/reader',
      claims: {},
      super: false,
    });
  });

  it('marks principals matching caller.super as super', () => {
    expect(authenticateIam('Proxy demo-admin', dataset)).to.deep.equal({ anon: false, schema: 'iam', id: 'demo-admin', claims: {}, super: true });
    const patterned = datasetConfig({ auth: { iam: { principals: ['*'] } }, caller: { super: ['arn:aws:iam::*:role/admin-*'] } });
    expect(authenticateIam('Proxy arn:aws:iam::1:role/admin-ops', patterned).super).to.equal(true);
    expect(authenticateIam('Proxy arn:aws:iam::1:role/ops', patterned).super).to.equal(false);
  });
});
