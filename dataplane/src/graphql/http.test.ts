/**
 * GraphQL over HTTP on a real data plane (the example dataset): the generated schema as
 * introspection shows it, queries of a record, a version, a list page with filter and sort, links
 * and inverse links resolved through the engine, the same authentication as REST, and bad input.
 */
import { expect } from 'chai';
import { buildClientSchema, getIntrospectionQuery, printSchema, type IntrospectionQuery } from 'graphql';
import { adminClient, startTestDataPlane, type TestDataPlane } from '../../test-support/dataplane.js';
import { client } from '../../test-support/http.js';
import { buildDatasetSchema, typeNames } from './schema.js';
import { renderDatasetConfig } from '../../../model/render.js';

describe('GraphQL over HTTP', function () {
  this.timeout(60000);
  let dp: TestDataPlane;
  let admin: ReturnType<typeof adminClient>;
  const gql = (query: string, variables?: Record<string, unknown>) => admin({ path: '/demo/graphql', body: { query, variables } });

  before(async () => {
    dp = await startTestDataPlane();
    admin = adminClient(dp);
    const r = await admin({
      path: '/demo',
      body: {
        batch: {
          actions: {
            acme: { create: { schema: 'demo.Company', id: 'acme', data: { name: 'Acme' } } },
            ada: { create: { schema: 'demo.Person', id: 'ada', data: { name: 'Ada', age: 36, address: { postcode: 'N1' }, employer: { id: 'acme' } } } },
            bob: { create: { schema: 'demo.Person', id: 'bob', data: { name: 'Bob', age: 41, address: { postcode: 'E2' }, employer: { id: 'acme' } } } },
          },
        },
      },
    });
    expect(r.status, r.text).to.be.oneOf([200, 201]);
    const patched = await admin({ path: '/demo', body: { update: { schema: 'demo.Person', id: 'ada', data: { age: 37 }, mode: 'merge' } } });
    expect(patched.status, patched.text).to.equal(200);
  });
  after(async () => dp?.stop());

  it('introspection gives the schema docs/architecture.md describes', async () => {
    const r = await gql(getIntrospectionQuery());
    expect(r.status, r.text).to.equal(200);
    expect(r.json.errors).to.equal(undefined);
    const sdl = printSchema(buildClientSchema(r.json.data as IntrospectionQuery));
    expect(sdl).to.contain('type demo_Person {');
    expect(sdl).to.match(/type demo_Person \{[^}]*id: ID![^}]*version: Int![^}]*name: String[^}]*age: Long[^}]*address: demo_Person__address[^}]*employer: demo_Company/s);
    // Argument descriptions print on their own lines: compare without them.
    const bare = sdl.replace(/\s*"""[^"]*"""/g, '').replace(/\s+/g, ' ');
    expect(bare).to.match(/type demo_Company \{[^}]*employees\( filter: String sort: String limit: Int nextToken: String \): demo_PersonPage!/);
    expect(bare).to.contain('demo_Person(id: ID!, version: Int): demo_Person');
    expect(bare).to.contain('list_demo_Person( filter: String sort: String limit: Int nextToken: String ): demo_PersonPage!');
    expect(bare).to.contain('demo_Person( filter: String ids: [ID!] after: String ): demo_PersonEvent');
    expect(sdl).to.match(/type demo_PersonEvent \{\s+op: ChangeOp!\s+"""[^"]*"""\s+cursor: String!\s+"""[^"]*"""\s+record: demo_Person\s+\}/);
    expect(sdl).to.match(/enum ChangeOp \{[^}]*CREATE[^}]*UPDATE[^}]*DELETE/s);
  });

  it('reads a record with its link, a past version, and null for an unknown id', async () => {
    const r = await gql(`{ demo_Person(id: "ada") { id version name address { postcode } employer { id name } } old: demo_Person(id: "ada", version: 1) { version age } none: demo_Person(id: "nobody") { id } }`);
    expect(r.status, r.text).to.equal(200);
    expect(r.json.errors).to.equal(undefined);
    expect(r.json.data.demo_Person).to.deep.include({ id: 'ada', name: 'Ada', address: { postcode: 'N1' }, employer: { id: 'acme', name: 'Acme' } });
    expect(r.json.data.old).to.deep.equal({ version: 1, age: 36 });
    expect(r.json.data.none).to.equal(null);
  });

  it('lists with filter (nested property), sort and pages; follows an inverse link', async () => {
    const r = await gql(`query($f: String) { list_demo_Person(filter: $f, sort: "name:desc", limit: 1) { items { id } nextToken } all: list_demo_Person(sort: "name") { items { name } } }`, { f: "address.postcode == 'E2' or address.postcode == 'N1'" });
    expect(r.json.errors, r.text).to.equal(undefined);
    expect(r.json.data.list_demo_Person.items).to.deep.equal([{ id: 'bob' }]);
    expect(r.json.data.list_demo_Person.nextToken).to.be.a('string');
    expect(r.json.data.all.items.map((p: { name: string }) => p.name)).to.deep.equal(['Ada', 'Bob']);
    const next = await gql(`query($f: String, $t: String) { list_demo_Person(filter: $f, sort: "name:desc", limit: 1, nextToken: $t) { items { id } nextToken } }`, {
      f: "address.postcode == 'E2' or address.postcode == 'N1'",
      t: r.json.data.list_demo_Person.nextToken,
    });
    expect(next.json.data.list_demo_Person).to.deep.equal({ items: [{ id: 'ada' }], nextToken: null });
    const inverse = await gql(`{ demo_Company(id: "acme") { name employees(filter: "age > 40") { items { id employer { name } } } } }`);
    expect(inverse.json.errors, inverse.text).to.equal(undefined);
    expect(inverse.json.data.demo_Company).to.deep.equal({ name: 'Acme', employees: { items: [{ id: 'bob', employer: { name: 'Acme' } }] } });
  });

  it('an engine error is a GraphQL error with its code and JSON path; a GraphQL syntax or validation error names the position', async () => {
    const bad = await gql(`{ list_demo_Person(filter: "age >") { items { id } } }`);
    expect(bad.status).to.equal(200);
    expect(bad.json.errors[0].extensions.code).to.equal('INVALID_FILTER');
    expect(bad.json.errors[0].path).to.deep.equal(['list_demo_Person']);
    const syntax = await gql(`{ demo_Person(id: "ada") { `);
    expect(syntax.json.errors[0].locations[0]).to.have.property('line', 1);
    const unknown = await gql(`{ demo_Person(id: "ada") { salary } }`);
    expect(unknown.json.errors[0].message).to.contain('salary');
    // Link after inverse link after link…: bounded depth, refused before any read.
    const deep = `{ demo_Company(id: "acme") { ${'employees { items { employer { '.repeat(5)}name${' } } }'.repeat(5)} } }`;
    const tooDeep = await gql(deep);
    expect(tooDeep.status).to.equal(400);
    expect(tooDeep.json.error.code).to.equal('QUERY_TOO_DEEP');
    expect(tooDeep.json.data).to.equal(undefined);
  });

  it('refuses bodies that are no GraphQL request and subscriptions over HTTP, with 400s naming the field', async () => {
    const cases: Array<[unknown, string]> = [
      [[], '$'],
      [{}, '$.query'],
      [{ query: 42 }, '$.query'],
      [{ query: '{ __typename }', variables: [1] }, '$.variables'],
      [{ query: '{ __typename }', operationName: 1 }, '$.operationName'],
      [{ query: '{ __typename }', extra: 1 }, '$.extra'],
      [JSON.parse('{"query": "{ __typename }", "__proto__": {}}'), '$.__proto__'],
      [{ query: '{ __typename }', constructor: 1 }, '$.constructor'],
      [{ query: 'subscription { demo_Person { op } }' }, '$.query'],
    ];
    for (const [body, path] of cases) {
      const r = await admin({ path: '/demo/graphql', body });
      expect(r.status, JSON.stringify(body)).to.equal(400);
      expect(r.json.error.details[0].path, JSON.stringify(body)).to.equal(path);
    }
    // GET is GraphiQL's page, for browsers only: an API client asking for JSON is told to POST.
    const get = await admin({ method: 'GET', path: '/demo/graphql' });
    expect(get.status, get.text).to.equal(406);
    expect(get.json.error.code).to.equal('NOT_ACCEPTABLE');
  });

  it('authenticates like REST: no credentials 401, another principal 403; the dataset host label works', async () => {
    const anon = client(dp.url, { host: 'iam.localhost' });
    expect((await anon({ path: '/demo/graphql', body: { query: '{ __typename }' } })).status).to.equal(401);
    const other = client(dp.url, { host: 'iam.localhost', headers: { authorization: 'Proxy someone-else' } });
    expect((await other({ path: '/demo/graphql', body: { query: '{ __typename }' } })).status).to.equal(403);
    const byHost = await admin({ path: '/graphql', host: 'demo.iam.localhost', body: { query: '{ __typename }' } });
    expect(byHost.status, byHost.text).to.equal(200);
    expect(byHost.json.data).to.deep.equal({ __typename: 'Query' });
  });

  it('type names: dots become _, a collision gets a suffix; the schema is built for any config', () => {
    expect([...typeNames(['a.b_c', 'a_b.c', 'x.Query'])]).to.deep.equal([
      ['a.b_c', 'a_b_c'],
      ['a_b.c', 'a_b_c_2'],
      ['x.Query', 'x_Query'],
    ]);
    const config = renderDatasetConfig({
      apiVersion: 'dataaccess.dev/v1alpha1',
      kind: 'Dataset',
      metadata: { name: 'odd', generation: 1 },
      spec: { environment: 'local', location: { kind: 'postgres' }, schemas: { 'a.b_c': { properties: { x: { type: 'object', properties: { y: { type: 'date' } } } } }, 'a_b.c': { properties: { t: { type: 'timestamp' } } } } },
    });
    const sdl = printSchema(buildDatasetSchema(config));
    expect(sdl).to.contain('type a_b_c_2 {');
    expect(sdl).to.contain('y: Date');
    expect(sdl).to.contain('t: DateTime');
  });
});
