/**
 * The per-dataset OpenAPI document (openapi.ts): valid OpenAPI 3.1 (the official schema, through
 * @seriousme/openapi-schema-validator, offline), every $ref resolves, every component schema is
 * valid JSON Schema 2020-12, the structured request schemas accept what the service accepts and
 * refuse what it refuses, deterministic, raw-query only where enabled, servers from the data plane's own addresses.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { expect } from 'chai';
import { resolve } from 'node:path';
import { SCHEMA_NAME_PATTERN } from '../../../model/json-schema.js';
import { loadManifests } from '../../../model/manifests.js';
import { renderDatasetConfig, renderEnvironmentConfig } from '../../../model/render.js';
import type { DatasetConfig, EnvironmentConfig } from '../../../model/types.js';
import { cachedOpenApiBody, openApiBody, openApiDocument, serversFor } from './openapi.js';
import { adminOpenApiDocument, adminServers } from './admin-openapi.js';
import { componentValidator, unresolvedRefs } from '../../test-support/openapi.js';

const EXAMPLES = resolve(import.meta.dirname, '../../../examples');
const manifests = loadManifests(EXAMPLES);
const env: EnvironmentConfig = renderEnvironmentConfig(manifests.environments[0]);
const datasets = Object.fromEntries(manifests.datasets.map((d) => [d.metadata.name, renderDatasetConfig(d)]));
const demo: DatasetConfig = datasets.demo;
const sealed: DatasetConfig = datasets.sealed;
/** sealed with the public gateway closed to it. */
const iamOnlyDataset: DatasetConfig = { ...sealed, auth: { ...sealed.auth, public: { enabled: false, subjects: [] } } };
const SERVERS = { servers: [{ url: 'http://iam.localhost:8080/demo' }] };

type Json = Record<string, any>;
const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v));

async function validate(doc: unknown) {
  return new Validator().validate(clone(doc) as Json);
}

describe('OpenAPI document (openapi.ts)', () => {
  it('is valid OpenAPI 3.1 for every example dataset, and the validator does reject a broken one', async () => {
    for (const dataset of [demo, sealed]) {
      const doc = openApiDocument(dataset, env, SERVERS);
      expect(doc.openapi).to.equal('3.1.0');
      const result = await validate(doc);
      expect(result.valid, `${dataset.id}: ${JSON.stringify(result.errors)}`).to.equal(true);
    }
    // The validator is no rubber stamp: a response without its required description, a parameter
    // in a place that does not exist.
    const broken = clone(openApiDocument(demo, env, SERVERS)) as Json;
    delete broken.paths['/echo'].get.responses['200'].description;
    expect((await validate(broken)).valid).to.equal(false);
    const wrongIn = clone(openApiDocument(demo, env, SERVERS)) as Json;
    wrongIn.components.parameters.filter.in = 'body';
    expect((await validate(wrongIn)).valid).to.equal(false);
  });

  it('is valid with the Transaction paths (a location that takes bulk loads), and so is the admin API’s document', async () => {
    const doc = openApiDocument(demo, env, SERVERS, { transactions: true }) as Json;
    expect((await validate(doc)).valid, JSON.stringify((await validate(doc)).errors)).to.equal(true);
    expect(unresolvedRefs(doc)).to.deep.equal([]);
    expect(doc.paths).to.include.keys('/Transaction', '/Transaction/{id}');
    const check = componentValidator(doc);
    // A generated client can start a bulk load: the create action takes the Transaction schema.
    const load = { create: { schema: 'Transaction', data: { actions: [{ locationUri: 's3://b/people.parquet', operation: 'UPSERT', format: 'PARQUET', schema: 'demo.Person' }] } } };
    expect(check('StructuredRequest', load)).to.deep.equal([]);
    expect(check('StructuredRequest', { create: { schema: 'Transaction', data: { actions: [{ locationUri: 's3://b/x', operation: 'MERGE', format: 'PARQUET', schema: 'demo.Person' }] } } })).to.not.deep.equal([]);
    const progress = { id: 't1', status: 'RUNNING', dataset: { id: 'demo' }, actions: [{ ...load.create.data.actions[0], rowsRead: 10, rowsWritten: 9, rowsRejected: 1, bytesRead: 100, errors: [{ row: 3, message: 'bad age' }] }], context: {}, createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:01Z' };
    expect(check('Transaction', progress)).to.deep.equal([]);
    expect(check('Transaction', { ...progress, status: 'DONE' })).to.not.deep.equal([]);
    // Without bulk loads the document does not offer them.
    expect(openApiDocument(demo, env, SERVERS).paths).to.not.have.keys('/Transaction');

    const admin = adminOpenApiDocument(adminServers({ listening: 'http://127.0.0.1:8080' }));
    const result = await validate(admin);
    expect(result.valid, JSON.stringify(result.errors)).to.equal(true);
    expect(unresolvedRefs(admin)).to.deep.equal([]);
    expect(Object.keys(admin.paths as Json)).to.deep.equal(['/datasets', '/datasets/{id}', '/datasets/{id}/pause', '/datasets/{id}/resume', '/openapi', '/docs']);
    expect((admin.servers as Json[]).map((s) => s.url)).to.deep.equal(['http://127.0.0.1:8080/_admin', 'http://iam.localhost:8080/_admin']);
  });

  it('resolves every $ref (and the check finds a dangling one)', () => {
    for (const dataset of [demo, sealed]) expect(unresolvedRefs(openApiDocument(dataset, env, SERVERS))).to.deep.equal([]);
    const dangling = clone(openApiDocument(demo, env, SERVERS)) as Json;
    delete dangling.components.schemas.demo_Company;
    expect(unresolvedRefs(dangling)).to.include('#/components/schemas/demo_Company');
  });

  it('has a record component per schema (dots become _), with id/version, nested objects and links', () => {
    const doc = openApiBody(demo, env) as Json;
    const schemas = doc.components.schemas;
    const person = schemas.demo_Person;
    expect(person.required).to.deep.equal(['id', 'version']);
    expect(Object.keys(person.properties)).to.deep.equal(['id', 'version', 'name', 'email', 'age', 'address', 'employer']);
    expect(person.properties.age.type).to.deep.equal(['integer', 'null']);
    expect(Object.keys(person.properties.address.properties)).to.deep.equal(['street', 'postcode']);
    expect(person.properties.employer.anyOf).to.deep.include({ $ref: '#/components/schemas/demo_Company' });
    // The inverse link is no record property, but a path and an annotation.
    expect(schemas.demo_Company.properties).to.not.have.property('employees');
    expect(schemas.demo_Company['x-inverse-links']).to.deep.equal({ employees: { schema: 'demo.Person', property: 'employer', path: '/demo.Company/{id}/employees' } });
    expect(doc.paths['/demo.Company/{id}/employees'].get.responses['200'].content['application/json'].schema).to.deep.equal({ $ref: '#/components/schemas/demo_Person-Page' });
  });

  it('accepts records of the right shape and refuses a wrong type, per record component', () => {
    const check = componentValidator(openApiDocument(demo, env, SERVERS));
    const ada = { id: 'ada', version: 1, name: 'Ada', age: 36, address: { street: '1 Main St', postcode: 'N1' }, employer: { id: 'acme' } };
    expect(check('demo_Person', ada)).to.deep.equal([]);
    expect(check('demo_Person', { ...ada, employer: { id: 'acme', version: 2, name: 'Acme' } })).to.deep.equal([]);
    expect(check('demo_Person', { ...ada, age: '36' })).to.not.deep.equal([]);
    expect(check('demo_Person', { ...ada, address: { postcode: 7 } })).to.not.deep.equal([]);
    expect(check('demo_Person', { ...ada, employer: { id: 'acme', name: 3 } })).to.not.deep.equal([]);
    expect(check('demo_Person', { name: 'no id' })).to.not.deep.equal([]);
    expect(check('demo_Company-Page', { items: [{ id: 'acme', version: 1, name: 'Acme' }], nextToken: 't' })).to.deep.equal([]);
  });

  it('describes the structured requests the service accepts, and not the ones it refuses', () => {
    const check = componentValidator(openApiDocument(demo, env, SERVERS));
    const ok = [
      { read: { schema: 'demo.Person', id: 'ada', version: 1, expand: ['employer'] } },
      { read: { schema: 'demo.Person', id: 'ada', expand: 'employer', projection: 'name,address.postcode' } },
      { create: { schema: 'demo.Company', id: 'acme', data: { name: 'Acme' } } },
      { create: { schema: 'demo.Person', data: { name: 'Ada', address: { postcode: 'N1' }, employer: { id: 'acme' } }, consistency: 'ASYNC' } },
      { update: { schema: 'demo.Person', id: 'ada', mode: 'merge', data: { age: 37 } } },
      { delete: { schema: 'demo.Person', id: 'bo' } },
      { batch: { actions: { co: { create: { schema: 'demo.Company', id: 'c2', data: { name: 'Two' } } }, p: { delete: { schema: 'demo.Person', id: 'x' } } } } },
      { list: { schema: 'demo.Person', filter: "age >= 30", sort: 'name:desc', limit: 10 } },
      { link: { schema: 'demo.Company', id: 'acme', link: 'employees', limit: 5 } },
    ];
    for (const body of ok) expect(check('StructuredRequest', body), JSON.stringify(body)).to.deep.equal([]);
    const refused = [
      {},
      { read: { schema: 'demo.Person', id: 'ada' }, delete: { schema: 'demo.Person', id: 'ada' } },
      { read: { schema: 'demo.Nope', id: 'ada' } },
      { read: { schema: 'demo.Person', id: '' } },
      { read: { schema: 'demo.Person', id: 'ada', version: 0 } },
      { create: { schema: 'demo.Person', data: { age: 'old' } } },
      { create: { schema: 'demo.Person', data: { id: 'ada' } } },
      { create: { schema: 'demo.Company', data: { name: 'X', employees: [] } } },
      { create: { schema: 'demo.Person', data: {}, consistency: 'STRONG' } },
      { update: { schema: 'demo.Person', id: 'ada', mode: 'upsert', data: {} } },
      { batch: { actions: {} } },
      { batch: { actions: { a: { read: { schema: 'demo.Person', id: 'ada' } } } } },
      { list: { schema: 'demo.Person', limit: 1001 } },
      { link: { schema: 'demo.Company', id: 'acme' } },
    ];
    for (const body of refused) expect(check('StructuredRequest', body), JSON.stringify(body)).to.not.deep.equal([]);
  });

  it('needs the required properties on create and replace, but not on a merge', () => {
    const strict: DatasetConfig = { ...demo, schemas: { ...demo.schemas, 'demo.Company': { ...demo.schemas['demo.Company'], required: ['name'] } } };
    const check = componentValidator(openApiDocument(strict, env, SERVERS));
    expect(check('StructuredRequest', { create: { schema: 'demo.Company', data: {} } })).to.not.deep.equal([]);
    expect(check('StructuredRequest', { create: { schema: 'demo.Company', data: { name: null } } })).to.not.deep.equal([]);
    expect(check('StructuredRequest', { update: { schema: 'demo.Company', id: 'a', data: {} } })).to.not.deep.equal([]);
    expect(check('StructuredRequest', { update: { schema: 'demo.Company', id: 'a', mode: 'replace', data: {} } })).to.not.deep.equal([]);
    expect(check('StructuredRequest', { update: { schema: 'demo.Company', id: 'a', mode: 'merge', data: {} } })).to.deep.equal([]);
  });

  it('lists every endpoint the data plane serves for a dataset, with its errors', () => {
    const doc = openApiBody(demo, env) as Json;
    expect(Object.keys(doc.paths)).to.deep.equal([
      '/', '/echo', '/openapi', '/raw-query', '/graphql', '/docs',
      '/queries/demo.HeadcountByEmployer', '/queries/demo.PeopleInPostcode',
      '/demo.Company', '/demo.Company/{id}', '/demo.Company/{id}/employees',
      '/demo.Person', '/demo.Person/{id}', '/demo.Person/{id}/employer',
    ]);
    const post = doc.paths['/'].post;
    expect(Object.keys(post.responses)).to.deep.equal(['200', '201', '202', '207', '400', '401', '403', '404', '405', '408', '409', '413', '415', '421', '431', '503', 'default']);
    const read = doc.paths['/demo.Person/{id}'].get;
    expect(read.parameters.map((p: Json) => p.name ?? p.$ref)).to.include.members(['expand', 'projection', '#/components/parameters/version', '#/components/parameters/id']);
    expect(Object.keys(read.responses)).to.deep.equal(['200', '400', '401', '403', '404', '405', '408', '421', '431', '503', 'default']);
    expect(doc.components.responses.ServiceUnavailable.headers).to.have.property('Retry-After');
    expect(doc.components.responses.Unauthorized.headers).to.have.property('WWW-Authenticate');
    expect(doc.components.securitySchemes.iam).to.deep.include({ type: 'apiKey', in: 'header', name: 'Authorization' });
    expect(doc.components.securitySchemes.bearer).to.deep.include({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
    expect(doc.security).to.deep.equal([{ iam: [] }, { bearer: [] }]);
    // expand is offered only where there are links: demo.Company has none stored.
    expect(doc.paths['/demo.Company/{id}'].get.parameters.map((p: Json) => p.name)).to.not.include('expand');
  });

  it('documents raw-query only where auth.iam.rawSqlEndpointEnabled, and the public gateway only where enabled', () => {
    const open = openApiBody(demo, env) as Json;
    const closed = openApiBody(sealed, env) as Json;
    expect(sealed.auth.iam.rawSqlEndpointEnabled).to.equal(false);
    expect(open.paths).to.have.property('/raw-query');
    expect(open.paths['/raw-query'].post.security).to.deep.equal([{ iam: [] }]);
    expect(closed.paths).to.not.have.property('/raw-query');
    expect(closed.components.schemas).to.not.have.property('RawQueryRequest');
    expect(closed.security).to.deep.equal([{ iam: [] }, { bearer: [] }]); // auth.public.enabled defaults to true
    const iamOnly = openApiBody(iamOnlyDataset, env) as Json;
    expect(iamOnly.security).to.deep.equal([{ iam: [] }]);
    const anon = openApiBody({ ...demo, caller: { ...demo.caller, anon: true } }, env) as Json;
    expect(anon.security).to.deep.equal([{ iam: [] }, { bearer: [] }, {}]);
  });

  it('is deterministic: the same config gives the same bytes, whatever order the schemas were declared in', () => {
    const a = JSON.stringify(openApiDocument(demo, env, SERVERS));
    expect(JSON.stringify(openApiDocument(demo, env, SERVERS))).to.equal(a);
    const reversed: DatasetConfig = { ...demo, schemas: Object.fromEntries(Object.entries(demo.schemas).reverse()) };
    expect(JSON.stringify(openApiDocument(reversed, env, SERVERS))).to.equal(a);
    expect(Object.keys(openApiDocument(demo, env, SERVERS))).to.deep.equal(['openapi', 'info', 'jsonSchemaDialect', 'servers', 'security', 'tags', 'paths', 'components']);
  });

  it('keeps schema names that collide once dots become _ apart', async () => {
    const def = { properties: { n: { type: 'string' as const } } };
    const odd: DatasetConfig = { ...sealed, schemas: { 'a.b_c': def, 'a_b.c': { properties: { to: { type: 'link' as const, schema: 'a.b_c' } } } } };
    const doc = openApiDocument(odd, env, SERVERS) as Json;
    expect(Object.keys(doc.components.schemas)).to.include.members(['a_b_c', 'a_b_c-2', 'a_b_c-Data', 'a_b_c-2-Data']);
    expect(doc.components.schemas['a_b_c-2'].properties.to.anyOf[1]).to.deep.equal({ $ref: '#/components/schemas/a_b_c' });
    expect((await validate(doc)).valid).to.equal(true);
    expect(unresolvedRefs(doc)).to.deep.equal([]);
  });

  it('relies on schema names having a dot: no schema can be named like a dataset endpoint', () => {
    const pattern = new RegExp(SCHEMA_NAME_PATTERN);
    for (const endpoint of ['openapi', 'echo', 'raw-query']) expect(pattern.test(endpoint), endpoint).to.equal(false);
    expect(pattern.test('demo.Person')).to.equal(true);
  });

  it('caches the body per dataset config object and environment', () => {
    const first = cachedOpenApiBody(demo, env);
    expect(cachedOpenApiBody(demo, env)).to.equal(first);
    expect(cachedOpenApiBody({ ...demo, generation: demo.generation + 1 }, env)).to.not.equal(first);
    expect(cachedOpenApiBody(demo, { ...env })).to.not.equal(first);
  });

  describe("servers: the data plane's own addresses, never the request's Host", () => {
    it('the listening address first (every client resolves it), then the *.localhost gateways that serve the dataset', () => {
      expect(serversFor({ listening: 'http://127.0.0.1:8080' }, demo, env)).to.deep.equal([
        { url: 'http://127.0.0.1:8080/demo', description: 'where this data plane listens; no gateway label, so the Authorization scheme picks the gateway (Proxy: iam, otherwise public)' },
        { url: 'http://iam.localhost:8080/demo', description: 'iam gateway (curl and browsers resolve *.localhost)' },
        { url: 'http://public.localhost:8080/demo', description: 'public gateway (curl and browsers resolve *.localhost)' },
      ]);
    });

    it('leaves out a gateway that does not serve the dataset', () => {
      expect(serversFor({ listening: 'http://127.0.0.1:9090' }, iamOnlyDataset, env).map((s) => s.url)).to.deep.equal(['http://127.0.0.1:9090/sealed', 'http://iam.localhost:9090/sealed']);
      const noPublicGateway = { ...env, gateways: { ...env.gateways, public: { enabled: false } } };
      expect(serversFor({ listening: 'http://127.0.0.1:8080' }, demo, noPublicGateway).map((s) => s.url)).to.deep.equal(['http://127.0.0.1:8080/demo', 'http://iam.localhost:8080/demo']);
    });

    it('spec.domain: the published gateways first (https://iam.<domain>, https://public.<domain>, those that serve the dataset), then the own addresses, in a cluster too', () => {
      const published = { ...env, domain: 'data.example.com' };
      expect(serversFor({ listening: 'http://127.0.0.1:8080' }, demo, published).map((s) => s.url)).to.deep.equal([
        'https://iam.data.example.com/demo',
        'https://public.data.example.com/demo',
        'http://127.0.0.1:8080/demo',
        'http://iam.localhost:8080/demo',
        'http://public.localhost:8080/demo',
      ]);
      expect(serversFor({ listening: 'http://127.0.0.1:8080', inCluster: true }, iamOnlyDataset, { ...published, type: 'public' }).map((s) => s.url)).to.deep.equal(['https://iam.data.example.com/sealed', '/sealed']);
      expect(adminServers({ inCluster: true }, 'data.example.com').map((s) => s.url)).to.deep.equal(['https://iam.data.example.com/_admin', '/_admin']);
    });

    it('a relative URL when nothing is known; in a cluster the internal Service’s DNS name (internal environments), never *.localhost', () => {
      expect(serversFor({}, demo, env)).to.deep.equal([{ url: '/demo', description: 'this host' }]);
      const internal = { ...env, id: 'orders', namespace: 'data', type: 'internal' as const };
      expect(serversFor({ listening: 'http://127.0.0.1:8080', inCluster: true }, demo, internal).map((s) => s.url)).to.deep.equal(['http://orders-internal.data.svc.cluster.local/demo']);
      expect(serversFor({ listening: 'http://127.0.0.1:8080', inCluster: true }, demo, { ...internal, type: 'public' }).map((s) => s.url)).to.deep.equal(['/demo']);
    });
  });
});
