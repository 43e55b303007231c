/**
 * The OpenAPI documents against the data plane that serves them: a request is generated for
 * every path and method the document lists (path and required query parameters filled in, a body
 * for each request body), sent three ways — as a client that follows the document, without
 * credentials, and with an undeclared query parameter — and each answer must be one the document
 * lists for that operation, with a body its schema (ajv, draft 2020-12) accepts.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { expect } from 'chai';
import { startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { call, type CallResult } from '../test-support/http.js';

type Json = Record<string, any>;
const ADMIN = { authorization: 'Proxy demo-admin' };
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const METHODS = ['get', 'post', 'put', 'patch', 'delete', 'head', 'options'];

/** What the generated client sends: a known record for `{id}`, typed values for required parameters, a body per operation. */
const IDS: Record<string, string> = { 'demo.Company': 'acme', 'demo.Person': 'ada', Transaction: 'no-such-transaction', datasets: 'demo' };
const BODIES: Record<string, unknown> = {
  structured: { read: { schema: 'demo.Company', id: 'acme' } },
  rawQuery: { sql: 'SELECT @{c.name} AS name FROM @{c}', using: { c: 'demo.Company' } },
  graphql: { query: '{ demo_Company(id: "acme") { id name } }' },
  createDataset: { metadata: { name: 'conformance' }, spec: { location: { kind: 'postgres' }, schemas: { 'c.Thing': { properties: { name: { type: 'string' } } } } } },
};

function sample(schema: Json): string {
  if (schema.type === 'integer' || schema.type === 'number') return String(schema.minimum ?? 30);
  return 'N1';
}

interface Generated {
  label: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: unknown;
  operation: Json;
}

function generate(doc: Json, base: string): Generated[] {
  const out: Generated[] = [];
  const deref = (p: Json) => (p.$ref ? p.$ref.split('/').slice(1).reduce((n: Json, k: string) => n[k], doc) : p);
  for (const [template, item] of Object.entries<Json>(doc.paths)) {
    for (const method of METHODS.filter((m) => item[m])) {
      const operation = item[method];
      const schemaName = template.split('/')[1];
      let path = template.replace('{id}', encodeURIComponent(IDS[schemaName] ?? 'x'));
      const query = (operation.parameters ?? [])
        .map(deref)
        .filter((p: Json) => p.in === 'query' && p.required)
        .map((p: Json) => `${p.name}=${encodeURIComponent(sample(p.schema))}`);
      if (query.length) path += `?${query.join('&')}`;
      const html = Object.keys(operation.responses['200']?.content ?? {}).includes('text/html');
      const headers: Record<string, string> = { ...ADMIN, ...(html ? { accept: 'text/html' } : {}) };
      const body = operation.requestBody ? BODIES[operation.operationId] : undefined;
      if (operation.requestBody && body === undefined) throw new Error(`no sample body for ${operation.operationId}`);
      out.push({ label: `${method.toUpperCase()} ${template}`, method: method.toUpperCase(), path: `${base}${path === '/' ? '' : path}`, headers, body, operation });
    }
  }
  return out;
}

/** Checks answers against the document: the status is listed, the body fits the listed schema. */
function conformance(doc: Json) {
  const ajv = addFormats(new Ajv2020({ allErrors: true, strict: false, validateFormats: true }));
  const id = `https://conformance.test/${Math.random()}`;
  ajv.addSchema({ $id: id, components: doc.components });
  const deref = (r: Json) => (r.$ref ? r.$ref.split('/').slice(1).reduce((n: Json, k: string) => n[k], doc) : r);
  return (g: Generated, res: CallResult): string[] => {
    const listed = g.operation.responses[String(res.status)];
    if (!listed) return [`${g.label}: ${res.status} is not a documented answer (${Object.keys(g.operation.responses).join(', ')}): ${res.text.slice(0, 300)}`];
    const response = deref(listed);
    const types = Object.keys(response.content ?? {});
    const type = String(res.headers['content-type'] ?? '').split(';')[0];
    if (!types.includes(type)) return [`${g.label}: ${res.status} answered ${type}, documented ${types.join(', ')}`];
    if (type !== 'application/json') return [];
    const schema = response.content[type].schema;
    const validate = ajv.compile({ $id: `${id}/r${Math.random()}`, ...rebase(schema, id) });
    return validate(res.json) ? [] : [`${g.label}: ${res.status} body does not fit its schema: ${ajv.errorsText(validate.errors)}; ${res.text.slice(0, 300)}`];
  };
}

/** Local `#/components/…` references point into the schema registered under `id`. */
function rebase(schema: unknown, id: string): any {
  if (Array.isArray(schema)) return schema.map((s) => rebase(s, id));
  if (!schema || typeof schema !== 'object') return schema;
  return Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, k === '$ref' && typeof v === 'string' && v.startsWith('#/') ? `${id}${v}` : rebase(v, id)]));
}

describe('the OpenAPI documents against the service (every path and method)', function () {
  this.timeout(60_000);
  let dp: TestDataPlane;

  before(async () => {
    dp = await startTestDataPlane();
    for (const create of [
      { schema: 'demo.Company', id: 'acme', data: { name: 'Acme' } },
      { schema: 'demo.Person', id: 'ada', data: { name: 'Ada', age: 36, address: { street: '1 Main St', postcode: 'N1' }, employer: { id: 'acme' } } },
    ]) {
      const res = await call(dp.url, { path: '/demo', host: 'iam.localhost', headers: ADMIN, body: { create } });
      expect(res.status, res.text).to.equal(201);
    }
  });
  after(async () => dp?.stop());

  /** `succeeds`: which documented calls must answer 2xx. */
  async function check(documentPath: string, base: string, succeeds: (g: Generated) => boolean): Promise<Json> {
    const res = await call(dp.url, { path: documentPath, host: 'iam.localhost', headers: ADMIN });
    expect(res.status, res.text).to.equal(200);
    const doc = res.json;
    const fits = conformance(doc);
    const generated = generate(doc, base);
    const problems: string[] = [];
    const statuses = new Map<string, number[]>();
    for (const g of generated) {
      const variants: [string, Generated][] = [
        ['as documented', g],
        ['without credentials', { ...g, headers: Object.fromEntries(Object.entries(g.headers).filter(([k]) => k !== 'authorization')) }],
        ['with an undeclared parameter', { ...g, path: `${g.path}${g.path.includes('?') ? '&' : '?'}undeclared=1` }],
      ];
      for (const [how, v] of variants) {
        const answer = await call(dp.url, { method: v.method, path: v.path, host: 'iam.localhost', headers: v.headers, body: v.body });
        problems.push(...fits(v, answer).map((p) => `${how}: ${p}`));
        statuses.set(`${g.label} ${how}`, [answer.status]);
      }
    }
    expect(problems).to.deep.equal([]);
    // The documented call succeeds where it can.
    for (const g of generated.filter(succeeds)) expect(statuses.get(`${g.label} as documented`)![0], g.label).to.be.within(200, 299);
    return doc;
  }

  it('the dataset document: records, lists, links, queries, batch, raw SQL, transactions, GraphQL and the pages', async () => {
    const doc = await check('/demo/openapi', '/demo', (g) => !g.path.includes('no-such'));
    expect(doc.paths).to.include.keys('/', '/raw-query', '/graphql', '/docs', '/Transaction', '/Transaction/{id}', '/demo.Person/{id}/employer', '/queries/demo.PeopleInPostcode');
  });

  it('the administrative API’s document', async () => {
    // demo comes from the example manifests, which the admin API does not manage: changing it is a 409.
    await check('/_admin/openapi', '/_admin', (g) => g.method === 'GET' || g.label === 'POST /datasets');
  });
});
