/**
 * GET /{dataset}/openapi through HTTP on a real data plane and PostgreSQL: authentication as on
 * every dataset endpoint, a valid OpenAPI 3.1 document whose servers are the data plane's own
 * addresses (never the request's Host), and components that accept the records, pages and errors the same data plane answers.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { expect } from 'chai';
import { loadOrCreateDevIssuer } from '../src/auth/dev-issuer.js';
import { adminClient, startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { call, client } from '../test-support/http.js';
import { componentValidator, unresolvedRefs } from '../test-support/openapi.js';

const ISSUER = 'http://localhost:8080/.well-known/dev-issuer';
const AUDIENCE = 'data-access-local';

describe('GET /{dataset}/openapi', function () {
  this.timeout(60000);
  let dp: TestDataPlane;
  let admin: ReturnType<typeof client>;
  let demoDoc: Record<string, any>;

  before(async () => {
    dp = await startTestDataPlane();
    admin = adminClient(dp);
    const res = await admin({ path: '/demo/openapi' });
    expect(res.status, res.text).to.equal(200);
    demoDoc = res.json;
  });
  after(async () => dp?.stop());

  it("answers a valid OpenAPI 3.1 document of the dataset, its servers the data plane's own addresses (listening address first)", async () => {
    const result = await new Validator().validate(structuredClone(demoDoc));
    expect(result.valid, JSON.stringify(result.errors)).to.equal(true);
    expect(unresolvedRefs(demoDoc)).to.deep.equal([]);
    expect(demoDoc.openapi).to.equal('3.1.0');
    const port = new URL(dp.url).port;
    expect(demoDoc.servers).to.deep.equal([
      { url: `http://127.0.0.1:${port}/demo`, description: 'where this data plane listens; no gateway label, so the Authorization scheme picks the gateway (Proxy: iam, otherwise public)' },
      { url: `http://iam.localhost:${port}/demo`, description: 'iam gateway (curl and browsers resolve *.localhost)' },
      { url: `http://public.localhost:${port}/demo`, description: 'public gateway (curl and browsers resolve *.localhost)' },
    ]);
    expect(demoDoc.paths).to.include.keys('/', '/echo', '/openapi', '/raw-query', '/demo.Person', '/demo.Person/{id}', '/demo.Person/{id}/employer', '/demo.Company/{id}/employees');

    // The dataset as a host label: the same document.
    const byHost = await admin({ path: '/openapi', host: 'demo.iam.localhost:8080' });
    expect(byHost.status, byHost.text).to.equal(200);
    expect(byHost.json).to.deep.equal(demoDoc);
  });

  it('never repeats a foreign Host or X-Forwarded-Proto, and says how it may be cached', async () => {
    const foreign = await call(dp.url, { path: '/demo/openapi', host: 'evil.example:1234', headers: { authorization: 'Proxy demo-admin', 'x-forwarded-proto': 'https' } });
    expect(foreign.status, foreign.text).to.equal(200);
    expect(foreign.text).not.to.contain('evil.example');
    expect(foreign.json.servers).to.deep.equal(demoDoc.servers);
    expect(foreign.headers['cache-control']).to.equal('private, no-cache');
    expect(foreign.headers.vary).to.match(/Authorization/i);
    const adminDoc = await call(dp.url, { path: '/_admin/openapi', host: 'iam.evil.example:1234', headers: { authorization: 'Proxy demo-admin' } });
    expect(adminDoc.status, adminDoc.text).to.equal(200);
    expect(adminDoc.text).not.to.contain('evil.example');
    expect(adminDoc.headers['cache-control']).to.equal('private, no-cache');
  });

  it('needs the same credentials as every dataset endpoint: 401 without, 403 for a principal the dataset does not allow', async () => {
    const none = await call(dp.url, { path: '/demo/openapi', host: 'iam.localhost' });
    expect(none.status, none.text).to.equal(401);
    expect(none.json.error.code).to.equal('MISSING_CREDENTIALS');
    expect(none.headers['www-authenticate']).to.equal('Proxy realm="iam"');
    const publicNone = await call(dp.url, { path: '/demo/openapi', host: 'public.localhost' });
    expect(publicNone.status, publicNone.text).to.equal(401);
    const stranger = await call(dp.url, { path: '/demo/openapi', host: 'iam.localhost', headers: { authorization: 'Proxy mallory' } });
    expect(stranger.status, stranger.text).to.equal(403);
    expect(stranger.json.error.code).to.equal('PRINCIPAL_NOT_ALLOWED');
    // Error answers have the document's Error shape.
    const check = componentValidator(demoDoc);
    for (const res of [none, publicNone, stranger]) expect(check('Error', res.json)).to.deep.equal([]);
  });

  it('is served on the public gateway to a valid token', async () => {
    const issuer = await loadOrCreateDevIssuer(dp.dataDir, { issuer: ISSUER, audience: AUDIENCE });
    const token = await issuer.sign({ sub: 'alice' });
    const res = await call(dp.url, { path: '/demo/openapi', host: 'public.localhost', headers: { authorization: `Bearer ${token}` } });
    expect(res.status, res.text).to.equal(200);
    expect(res.json.servers).to.deep.equal(demoDoc.servers);
    expect(res.json.paths).to.deep.equal(demoDoc.paths);
  });

  it('documents raw-query only for a dataset that enables it', async () => {
    const sealed = await admin({ path: '/sealed/openapi' });
    expect(sealed.status, sealed.text).to.equal(200);
    expect(sealed.json.paths).to.not.have.property('/raw-query');
    expect(demoDoc.paths).to.have.property('/raw-query');
    expect((await new Validator().validate(sealed.json)).valid).to.equal(true);
    // And the data plane agrees: raw-query on sealed is refused.
    const refused = await admin({ path: '/sealed/raw-query', body: { sql: 'SELECT 1' } });
    expect(refused.status).to.equal(403);
  });

  it('has components that accept the records, pages and results the data plane answers, and refuse a wrong type', async () => {
    const check = componentValidator(demoDoc);
    const requests = [
      { create: { schema: 'demo.Company', id: 'oa-acme', data: { name: 'Acme' } } },
      { create: { schema: 'demo.Person', id: 'oa-ada', data: { name: 'Ada', age: 36, address: { street: '1 Main St', postcode: 'N1' }, employer: { id: 'oa-acme' } } } },
      { update: { schema: 'demo.Person', id: 'oa-ada', mode: 'merge', data: { age: 37 } } },
    ];
    for (const body of requests) {
      expect(check('StructuredRequest', body), JSON.stringify(body)).to.deep.equal([]);
      const res = await admin({ path: '/demo', body });
      expect(res.status, res.text).to.be.oneOf([200, 201]);
      const action = Object.values(body)[0];
      expect(check(action.schema.replace('.', '_'), res.json)).to.deep.equal([]);
    }

    const read = await admin({ path: '/demo/demo.Person/oa-ada' });
    expect(read.status, read.text).to.equal(200);
    expect(read.json).to.include({ id: 'oa-ada', version: 2, age: 37 });
    expect(check('demo_Person', read.json)).to.deep.equal([]);
    expect(check('demo_Person', { ...read.json, age: '37' })).to.not.deep.equal([]);
    expect(check('demo_Person', { ...read.json, address: { ...read.json.address, postcode: 1 } })).to.not.deep.equal([]);

    const expanded = await admin({ path: '/demo/demo.Person/oa-ada?expand=employer&version=1' });
    expect(expanded.status, expanded.text).to.equal(200);
    expect(expanded.json.employer).to.deep.include({ id: 'oa-acme', version: 1, name: 'Acme' });
    expect(check('demo_Person', expanded.json)).to.deep.equal([]);
    expect(check('demo_Person', { ...expanded.json, employer: { ...expanded.json.employer, name: false } })).to.not.deep.equal([]);

    const company = await admin({ path: '/demo/demo.Company/oa-acme' });
    expect(check('demo_Company', company.json)).to.deep.equal([]);
    expect(check('demo_Company', { ...company.json, name: 42 })).to.not.deep.equal([]);
    expect(check('demo_Company', { ...company.json, version: 0 })).to.not.deep.equal([]);

    const projected = await admin({ path: '/demo/demo.Person/oa-ada?projection=address.postcode' });
    expect(projected.json).to.deep.equal({ id: 'oa-ada', version: 2, address: { postcode: 'N1' } });
    expect(check('demo_Person', projected.json)).to.deep.equal([]);

    // Pages: list, a to-one link, an inverse link, and the structured list.
    const pageOf = (path: string) => demoDoc.paths[path].get.responses['200'].content['application/json'].schema.$ref.split('/').pop();
    const list = await admin({ path: "/demo/demo.Person?filter=age%20%3E%3D%2030&sort=name&expand=employer" });
    expect(list.status, list.text).to.equal(200);
    expect(list.json.items).to.have.length(1);
    expect(check(pageOf('/demo.Person'), list.json)).to.deep.equal([]);
    const employer = await admin({ path: '/demo/demo.Person/oa-ada/employer' });
    expect(employer.status, employer.text).to.equal(200);
    expect(check(pageOf('/demo.Person/{id}/employer'), employer.json)).to.deep.equal([]);
    expect(check(pageOf('/demo.Person/{id}/employer'), { items: [{ ...employer.json.items[0], name: [] }] })).to.not.deep.equal([]);
    const employees = await admin({ path: '/demo/demo.Company/oa-acme/employees?limit=1' });
    expect(employees.status, employees.text).to.equal(200);
    expect(employees.json.items.map((r: { id: string }) => r.id)).to.deep.equal(['oa-ada']);
    expect(check(pageOf('/demo.Company/{id}/employees'), employees.json)).to.deep.equal([]);
    const structuredList = { list: { schema: 'demo.Company', limit: 10 } };
    expect(check('StructuredRequest', structuredList)).to.deep.equal([]);
    const listed = await admin({ path: '/demo', body: structuredList });
    expect(check('demo_Company-Page', listed.json)).to.deep.equal([]);

    const batch = { batch: { actions: { a: { create: { schema: 'demo.Company', id: 'oa-b', data: { name: 'B' } } }, d: { delete: { schema: 'demo.Company', id: 'oa-b' } } } } };
    expect(check('StructuredRequest', batch)).to.deep.equal([]);
    const batched = await admin({ path: '/demo', body: batch });
    expect(batched.status, batched.text).to.equal(200);
    expect(check('BatchResult', batched.json)).to.deep.equal([]);

    // What the data plane refuses, the document refuses too; and its error answer is an Error.
    const bad = { create: { schema: 'demo.Person', data: { age: 'old' } } };
    expect(check('StructuredRequest', bad)).to.not.deep.equal([]);
    const refused = await admin({ path: '/demo', body: bad });
    expect(refused.status).to.equal(400);
    expect(check('Error', refused.json)).to.deep.equal([]);
    const echo = await admin({ path: '/demo/echo' });
    expect(check('Echo', echo.json)).to.deep.equal([]);
  });

  it('documents the named queries: GET /queries/{name} with its arguments, and the structured query action', async () => {
    const check = componentValidator(demoDoc);
    const people = demoDoc.paths['/queries/demo.PeopleInPostcode'].get;
    expect(people.parameters.filter((p: { name?: string }) => p.name === 'postcode')).to.deep.equal([
      { name: 'postcode', in: 'query', required: true, description: 'Argument "postcode" (string).', schema: { type: 'string' } },
    ]);
    expect(demoDoc.paths['/queries/demo.HeadcountByEmployer'].get.parameters.map((p: { name?: string; $ref?: string }) => p.name ?? p.$ref)).to.include('minAge');

    await admin({ path: '/demo', body: { create: { schema: 'demo.Person', id: 'oa-q', data: { name: 'Q', age: 50, address: { postcode: 'Q1' } } } } });
    const page = await admin({ path: '/demo/queries/demo.PeopleInPostcode?postcode=Q1' });
    expect(page.status, page.text).to.equal(200);
    expect(page.json.items.map((r: { id: string }) => r.id)).to.deep.equal(['oa-q']);
    const pageComponent = people.responses['200'].content['application/json'].schema.$ref.split('/').pop();
    expect(check(pageComponent, page.json)).to.deep.equal([]);

    const structured = { query: { schema: 'demo.HeadcountByEmployer', arguments: { minAge: 18 }, limit: 10 } };
    expect(check('StructuredRequest', structured)).to.deep.equal([]);
    const rows = await admin({ path: '/demo', body: structured });
    expect(rows.status, rows.text).to.equal(200);
    // What the data plane refuses (an undeclared argument), the document refuses too.
    const bad = { query: { schema: 'demo.PeopleInPostcode', arguments: { postcode: 'N1', extra: 1 } } };
    expect(check('StructuredRequest', bad)).to.not.deep.equal([]);
    expect((await admin({ path: '/demo', body: bad })).status).to.equal(400);
  });

  it('answers HEAD, refuses other methods (405 with Allow) and unknown query parameters (400)', async () => {
    const head = await admin({ path: '/demo/openapi', method: 'HEAD' });
    expect(head.status).to.equal(200);
    expect(Number(head.headers['content-length'])).to.be.greaterThan(1000);
    const post = await admin({ path: '/demo/openapi', body: {} });
    expect(post.status, post.text).to.equal(405);
    expect(post.headers.allow).to.equal('GET,HEAD');
    const query = await admin({ path: '/demo/openapi?format=yaml' });
    expect(query.status, query.text).to.equal(400);
    expect(query.json.error.details[0].path).to.equal('query:format');
    const unknown = await admin({ path: '/nope/openapi' });
    expect(unknown.status).to.equal(404);
  });
});
