/**
 * Compiled queries (compiled.ts, graphql-jit) answer exactly as graphql-js's `execute`: the same
 * queries run both ways against a real engine on PostgreSQL, `{data, errors}` compared as the HTTP
 * answer serialises them (messages, paths, locations, extensions). Reads by id found and not
 * found, nulls, every scalar the schema maps, `__typename`, aliases, fragments, variables,
 * `@skip`/`@include`, introspection, links and nested objects, pages with limits, engine errors and the non-null
 * propagation they cause. Then the compile cache: per cached document (from its second use) and
 * operation, not for mutations, and its answers over HTTP.
 */
import { expect } from 'chai';
import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execute, getOperationAST, type ExecutionResult } from 'graphql';
import { adminClient, EXAMPLES_DIR, startTestDataPlane, type TestDataPlane } from '../../test-support/dataplane.js';
import type { DatasetConfig } from '../../../model/types.js';
import { datasetSchema, type GraphQLContext } from './schema.js';
import { DEFAULT_QUERY_LIMITS, prepareOperation } from './limits.js';
import { executeOperation } from './operation.js';
import { compiledQueryFor } from './compiled.js';

const DATASET = `apiVersion: dataaccess.dev/v1alpha1
kind: Dataset
metadata:
  name: kinds
spec:
  environment: local
  location: { kind: postgres, databaseSchema: kinds }
  auth:
    iam: { principals: [demo-admin] }
  caller: { super: [demo-admin], anon: false }
  schemas:
    kinds.Owner:
      properties:
        name: { type: string }
        things: { type: links, schema: kinds.Thing, property: owner }
    kinds.Thing:
      properties:
        label: { type: string, sortable: true }
        count: { type: integer }
        ratio: { type: number }
        flag: { type: boolean }
        day: { type: date }
        at: { type: timestamp }
        spec: { type: object, properties: { size: { type: integer }, tags: { type: string } } }
        owner: { type: link, schema: kinds.Owner }
`;

/** What the HTTP answer carries: errors as JSON (message, locations, path, extensions), data. */
const answer = (r: ExecutionResult) => JSON.parse(JSON.stringify({ ...(r.errors ? { errors: r.errors.map((e) => e.toJSON()) } : {}), ...('data' in r ? { data: r.data } : {}) }));

describe('GraphQL compiled queries answer as graphql-js', function () {
  this.timeout(120_000);
  let dp: TestDataPlane;
  let dataset: DatasetConfig;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'das-kinds-'));
    copyFileSync(join(EXAMPLES_DIR, 'environment.yaml'), join(dir, 'environment.yaml'));
    writeFileSync(join(dir, 'dataset-kinds.yaml'), DATASET);
    dp = await startTestDataPlane({ manifests: dir });
    const admin = adminClient(dp);
    const r = await admin({
      path: '/kinds',
      body: {
        batch: {
          actions: {
            acme: { create: { schema: 'kinds.Owner', id: 'acme', data: { name: 'Acme' } } },
            t1: {
              create: {
                schema: 'kinds.Thing',
                id: 't1',
                data: { label: 'one', count: 9007199254740991, ratio: 0.125, flag: true, day: '2026-11-28', at: '2026-11-28T23:59:59.123Z', spec: { size: 3, tags: 'a,b' }, owner: { id: 'acme' } },
              },
            },
            t2: { create: { schema: 'kinds.Thing', id: 't2', data: { label: 'two', count: -3, ratio: -1e21, flag: false, owner: { id: 'gone' } } } },
            t3: { create: { schema: 'kinds.Thing', id: 't3', data: { label: 'three' } } },
          },
        },
      },
    });
    expect(r.status, r.text).to.be.oneOf([200, 201]);
    dataset = dp.dataPlane.store.dataset('kinds')!.config;
  });
  after(async () => dp?.stop());

  /** Runs the query through graphql-js and through executeOperation (compiled); both answers must be equal and the compiled path must have been taken. */
  async function both(query: string, variables?: Record<string, unknown>, operationName?: string) {
    const schema = datasetSchema(dataset);
    prepareOperation(schema, query, variables, DEFAULT_QUERY_LIMITS, operationName); // compiled from its second use
    const prepared = prepareOperation(schema, query, variables, DEFAULT_QUERY_LIMITS, operationName);
    expect(prepared.errors, JSON.stringify(prepared.errors)).to.equal(undefined);
    const document = prepared.document!;
    expect(compiledQueryFor(schema, document, getOperationAST(document, operationName)!, operationName), 'compiled').to.not.equal(undefined);
    const contextValue: GraphQLContext = { engine: dp.dataPlane.engine, dataset };
    const args = { schema, document, variableValues: variables, operationName, contextValue };
    const reference = answer(await execute(args));
    const compiled = answer(await executeOperation(args));
    expect(compiled).to.deep.equal(reference);
    return compiled;
  }

  it('reads by id, found and not found, with every scalar, nulls, nested objects and __typename', async () => {
    const all = `query($id: ID!) { kinds_Thing(id: $id) { __typename id version label count ratio flag day at spec { __typename size tags } } }`;
    const one = await both(all, { id: 't1' });
    expect(one.data.kinds_Thing).to.deep.include({ __typename: 'kinds_Thing', id: 't1', count: 9007199254740991, ratio: 0.125, flag: true, day: '2026-11-28', spec: { __typename: 'kinds_Thing__spec', size: 3, tags: 'a,b' } });
    expect((await both(all, { id: 't3' })).data.kinds_Thing).to.deep.include({ count: null, ratio: null, flag: null, day: null, at: null, spec: null });
    expect((await both(all, { id: 't2' })).data.kinds_Thing).to.deep.include({ count: -3, ratio: -1e21, flag: false });
    expect((await both(all, { id: 'nobody' })).data).to.deep.equal({ kinds_Thing: null });
    expect((await both(`{ kinds_Thing(id: "t1", version: 7) { id } }`)).data).to.deep.equal({ kinds_Thing: null });
    await both(`{ __typename a: kinds_Thing(id: "t1") { id } }`);
  });

  it('aliases, inline and named fragments, @skip and @include from variables and literals, operationName', async () => {
    const q = `
      fragment Bits on kinds_Thing { label ... on kinds_Thing { count } spec { ...Size } }
      fragment Size on kinds_Thing__spec { size }
      query A($skip: Boolean!, $inc: Boolean = true) {
        first: kinds_Thing(id: "t1") { ...Bits the: label @skip(if: $skip) flag @include(if: $inc) ratio @include(if: false) }
        second: kinds_Thing(id: "t2") { ... @skip(if: $skip) { day } ... on kinds_Thing @include(if: $inc) { count } }
      }
      query B { kinds_Owner(id: "acme") { name } }`;
    const a = await both(q, { skip: true }, 'A');
    expect(a.data.first).to.deep.equal({ label: 'one', count: 9007199254740991, spec: { size: 3 }, flag: true });
    expect((await both(q, { skip: false, inc: false }, 'A')).data.first).to.have.property('the', 'one');
    expect((await both(q, {}, 'B')).data).to.deep.equal({ kinds_Owner: { name: 'Acme' } });
    // One field selected twice, skipped in one place only; a named spread under a directive; merged sub-selections.
    const merged = `
      fragment Owned on kinds_Thing { owner { name } }
      query($skip: Boolean!) {
        kinds_Thing(id: "t1") { label @skip(if: $skip) ... { label } ...Owned @include(if: $skip) owner { id } spec { size } spec @skip(if: $skip) { tags } }
      }`;
    expect((await both(merged, { skip: true })).data.kinds_Thing).to.deep.equal({ label: 'one', owner: { name: 'Acme', id: 'acme' }, spec: { size: 3 } });
    expect((await both(merged, { skip: false })).data.kinds_Thing).to.deep.equal({ label: 'one', owner: { id: 'acme' }, spec: { size: 3, tags: 'a,b' } });
  });

  it('introspection', async () => {
    await both(`{ __schema { queryType { name } } __type(name: "kinds_Thing") { name fields { name type { kind name ofType { kind name } } } } }`);
  });

  it('links, a link to a missing record, inverse links and pages with limits, filters and sort', async () => {
    const r = await both(`{
      kinds_Thing(id: "t1") { owner { __typename id name things(sort: "label", limit: 1) { items { id } nextToken } } }
      gone: kinds_Thing(id: "t2") { owner { id } }
      list_kinds_Thing(sort: "label:desc", limit: 2) { items { id label owner { name } } nextToken }
      filtered: list_kinds_Thing(filter: "count > 0") { items { id } }
      empty: list_kinds_Thing(filter: "label == 'none'") { items { id } nextToken }
    }`);
    expect(r.data.kinds_Thing.owner.things.items).to.deep.equal([{ id: 't1' }]);
    expect(r.data.gone).to.deep.equal({ owner: null });
    expect(r.data.list_kinds_Thing.items.map((t: { id: string }) => t.id)).to.deep.equal(['t2', 't3']);
  });

  it('engine errors with their code and status, and the nulls they propagate through non-null fields', async () => {
    const bad = await both(`{ ok: kinds_Thing(id: "t1") { id } list_kinds_Thing(filter: "count >") { items { id } } }`);
    expect(bad.data).to.equal(null); // list_ is non-null: the whole data goes
    expect(bad.errors[0].extensions).to.include({ code: 'INVALID_FILTER', status: 400 });
    const inner = await both(`{ kinds_Owner(id: "acme") { name things(sort: "nope") { items { id } } } }`);
    expect(inner.data).to.deep.equal({ kinds_Owner: null });
    expect(inner.errors[0].path).to.deep.equal(['kinds_Owner', 'things']);
    const tooMany = await both(`query($n: Int) { list_kinds_Thing(limit: $n) { items { id } } }`, { n: 5000 });
    expect(tooMany.errors[0].extensions.status).to.equal(400);
    await both(`{ a: list_kinds_Thing(nextToken: "garbage") { items { id } } }`);
  });

  it('variables: defaults, null for a nullable one, and integer ids', async () => {
    await both(`query($id: ID! = "t1", $v: Int) { kinds_Thing(id: $id, version: $v) { id version } }`, { v: null });
    expect((await both(`query($id: ID!) { kinds_Thing(id: $id) { id } }`, { id: 7 })).data).to.deep.equal({ kinds_Thing: null });
  });

  it('variables missing or of the wrong type are refused before execution, in graphql-js words, as before', async () => {
    const schema = datasetSchema(dataset);
    const q = `query($id: ID!, $v: Int) { kinds_Thing(id: $id, version: $v) { id } }`;
    const missing = prepareOperation(schema, q, { v: 1 });
    expect(missing.errors?.map((e) => e.message)).to.deep.equal(['Variable "$id" of required type "ID!" was not provided.']);
    const wrong = prepareOperation(schema, q, { id: 't1', v: 'x' });
    expect(wrong.errors?.map((e) => e.message)).to.deep.equal(['Variable "$v" got invalid value "x"; Int cannot represent non-integer value: "x"']);
  });

  it('compiles once per cached document and operation from its second use; mutations and uncached documents run through graphql-js', () => {
    const schema = datasetSchema(dataset);
    const text = `query One { kinds_Thing(id: "t1") { id } } query Two { kinds_Owner(id: "acme") { id } }`;
    const doc = prepareOperation(schema, text, {}, DEFAULT_QUERY_LIMITS, 'One').document!;
    // Sent once: not compiled.
    expect(compiledQueryFor(schema, doc, getOperationAST(doc, 'One')!, 'One')).to.equal(undefined);
    expect(prepareOperation(schema, text, {}, DEFAULT_QUERY_LIMITS, 'Two').document).to.equal(doc);
    const one = compiledQueryFor(schema, doc, getOperationAST(doc, 'One')!, 'One');
    expect(one).to.not.equal(undefined);
    expect(compiledQueryFor(schema, doc, getOperationAST(doc, 'One')!, 'One')).to.equal(one);
    expect(compiledQueryFor(schema, doc, getOperationAST(doc, 'Two')!, 'Two')).to.not.equal(one);
    prepareOperation(schema, `mutation { delete_kinds_Thing(id: "x") { id } }`, {});
    const mutation = prepareOperation(schema, `mutation { delete_kinds_Thing(id: "x") { id } }`, {}).document!;
    expect(compiledQueryFor(schema, mutation, getOperationAST(mutation)!, undefined)).to.equal(undefined);
    // Longer than the cache takes: parsed each time, never compiled.
    prepareOperation(schema, `{ kinds_Thing(id: "t1") { id } }${' '.repeat(3000)}`, {});
    const long = prepareOperation(schema, `{ kinds_Thing(id: "t1") { id } }${' '.repeat(3000)}`, {}).document!;
    expect(compiledQueryFor(schema, long, getOperationAST(long)!, undefined)).to.equal(undefined);
  });

  it('over HTTP: the same answer, a variable error still without data', async () => {
    const admin = adminClient(dp);
    const q = `query($id: ID!) { kinds_Thing(id: $id) { id label owner { name } } }`;
    const found = await admin({ path: '/kinds/graphql', body: { query: q, variables: { id: 't1' } } });
    expect(found.json).to.deep.equal({ data: { kinds_Thing: { id: 't1', label: 'one', owner: { name: 'Acme' } } } });
    const refused = await admin({ path: '/kinds/graphql', body: { query: q, variables: { id: 1.5 } } });
    expect(refused.json).to.deep.equal({ errors: [{ message: 'Variable "$id" got invalid value 1.5; ID cannot represent value: 1.5', locations: [{ line: 1, column: 7 }] }] });
  });
});
