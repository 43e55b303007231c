/**
 * Query schemas (spec.queries) through HTTP on a real data plane and PostgreSQL: the structured
 * `query`, `GET /{dataset}/queries/{name}` and the function gateway's `query`; arguments missing,
 * extra and of the wrong type; paging with tokens bound to the arguments; optional arguments; SQL
 * queries (one page, limit as the row limit) with the raw SQL endpoint switched off.
 */
import { expect } from 'chai';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { parse, stringify } from 'yaml';
import { compileFilter, matchesFilter } from '../../model/filter.js';
import { compareRecords, compileSort } from '../../model/sort.js';
import type { RecordSchemaDef } from '../../model/types.js';
import { startFunctionGateway } from '../src/function-gateway/server.js';
import { adminClient, EXAMPLES_DIR, startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { call } from '../test-support/http.js';

type Rec = { id: string; version: number; [k: string]: any };

/** The example manifests with more queries, and the raw SQL endpoint off (SQL queries do not need it). */
function manifests(): string {
  const dir = mkdtempSync(join(tmpdir(), 'das-queries-'));
  cpSync(EXAMPLES_DIR, dir, { recursive: true });
  const file = join(dir, 'dataset-demo.yaml');
  const doc = parse(readFileSync(file, 'utf8'));
  doc.spec.auth.iam.rawSqlEndpointEnabled = false;
  Object.assign(doc.spec.queries, {
    'demo.Adults': {
      schema: 'demo.Person',
      arguments: { minAge: { type: 'integer', required: true }, employer: { type: 'string' } },
      filter: 'age >= ${minAge} and employer.id == ${employer}',
      sort: 'age:desc,name',
    },
    'demo.PeopleSql': {
      sql: 'SELECT @{p.id} AS "id", @{p.name} AS "name" FROM @{p} WHERE @{p.address.postcode} = ${pc} ORDER BY @{p.id}',
      using: { p: 'demo.Person' },
      arguments: { pc: { type: 'string', required: true } },
    },
  });
  writeFileSync(file, stringify(doc));
  return dir;
}

describe('query schemas (structured, GET, function gateway)', function () {
  this.timeout(120_000);
  let dp: TestDataPlane;
  let api: ReturnType<typeof adminClient>;
  let gateway: Awaited<ReturnType<typeof startFunctionGateway>>;
  let personSchema: RecordSchemaDef;
  const people: Rec[] = [];

  const post = (body: unknown) => api({ path: '/demo', body });
  const query = (args: Record<string, unknown>) => post({ query: args });
  const get = (name: string, params: Record<string, string | number> = {}) => {
    const search = new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)])).toString();
    return api({ path: `/demo/queries/${name}${search ? `?${search}` : ''}` });
  };
  const invoke = async (payload: Record<string, unknown>) => {
    const res = await call(gateway.url, { path: '/', body: { dataset: { id: 'demo' }, operation: 'query', ...payload } });
    expect(res.status).to.equal(200);
    return res.json as { data: any; status: { code: number; message?: string } };
  };
  const expectProblem = (res: { status: number; json: any; text: string }, status: number, code: string, path: string) => {
    expect(res.status, res.text).to.equal(status);
    expect(res.json.error.code, res.text).to.equal(code);
    expect(res.json.error.details.map((d: { path: string }) => d.path)).to.include(path);
  };
  /** Ids in the reference order: the in-memory evaluator and comparator of model/. */
  const reference = (filter: string, sort: string) => {
    const typed = compileFilter(filter, personSchema);
    const keys = compileSort(sort, personSchema);
    const stored = people.map((r) => ({ id: r.id, version: r.version, data: r }));
    return stored.filter((r) => matchesFilter(typed, r)).sort((a, b) => compareRecords(keys, a, b)).map((r) => r.id);
  };
  async function pageAll(fetchPage: (token?: string) => Promise<{ items: Rec[]; nextToken?: string }>, limit: number): Promise<string[]> {
    const ids: string[] = [];
    let token: string | undefined;
    for (let n = 0; n < 1000; n++) {
      const page = await fetchPage(token);
      ids.push(...page.items.map((r) => r.id));
      if (!page.nextToken) return ids;
      expect(page.items).to.have.length(limit);
      token = page.nextToken;
    }
    throw new Error('paging did not end');
  }

  before(async () => {
    dp = await startTestDataPlane({ manifests: manifests() });
    api = adminClient(dp);
    gateway = await startFunctionGateway({ upstreamUrl: dp.url, principal: 'service-local-function-service-gateway', logger: pino({ level: 'silent' }), port: 0, host: '127.0.0.1' });
    personSchema = dp.dataPlane.store.dataset('demo')!.config.schemas['demo.Person'];
    const names = ['ada', 'Ada', 'bo', 'Bo', '7', null];
    for (let i = 0; i < 60; i++) {
      const name = names[i % names.length];
      people.push({
        id: `q${String(i).padStart(2, '0')}`,
        version: 1,
        ...(name === null ? {} : { name }),
        ...(i % 7 ? { age: 20 + ((i * 11) % 50) } : {}),
        address: { postcode: ['N1', 'E2', 'n1'][i % 3] },
        ...(i % 4 ? { employer: { id: `c${i % 2}` } } : {}),
      });
    }
    const actions: Record<string, unknown> = {
      c0: { create: { schema: 'demo.Company', id: 'c0', data: { name: 'Zeta' } } },
      c1: { create: { schema: 'demo.Company', id: 'c1', data: { name: 'Alpha' } } },
    };
    for (const { id, version: _v, ...data } of people) actions[id] = { create: { schema: 'demo.Person', id, data } };
    const res = await post({ batch: { actions } });
    expect(res.status, res.text).to.equal(200);
  });
  after(async () => {
    await gateway?.stop();
    await dp?.stop();
  });

  describe('filter-based queries', () => {
    it('pages through demo.PeopleInPostcode in the reference order, each record once', async () => {
      const ids = await pageAll(async (token) => {
        const res = await query({ schema: 'demo.PeopleInPostcode', arguments: { postcode: 'N1' }, limit: 3, ...(token ? { nextToken: token } : {}) });
        expect(res.status, res.text).to.equal(200);
        return res.json;
      }, 3);
      expect(ids).to.deep.equal(reference("address.postcode == 'N1'", 'name'));
      expect(ids).to.have.length(20);
    });

    it('a nextToken is bound to the query and its arguments', async () => {
      const first = (await query({ schema: 'demo.PeopleInPostcode', arguments: { postcode: 'N1' }, limit: 2 })).json;
      expect(first.nextToken).to.be.a('string');
      expectProblem(await query({ schema: 'demo.PeopleInPostcode', arguments: { postcode: 'E2' }, limit: 2, nextToken: first.nextToken }), 400, 'INVALID_NEXT_TOKEN', 'nextToken');
      expectProblem(await query({ schema: 'demo.Adults', arguments: { minAge: 1 }, limit: 2, nextToken: first.nextToken }), 400, 'INVALID_NEXT_TOKEN', 'nextToken');
      const list = (await post({ list: { schema: 'demo.Person', filter: "address.postcode == 'N1'", sort: 'name', limit: 2 } })).json;
      expectProblem(await query({ schema: 'demo.PeopleInPostcode', arguments: { postcode: 'N1' }, limit: 2, nextToken: list.nextToken }), 400, 'INVALID_NEXT_TOKEN', 'nextToken');
    });

    it('missing, extra and wrong-typed arguments are 400s naming $.query.arguments.<name>', async () => {
      expectProblem(await query({ schema: 'demo.PeopleInPostcode' }), 400, 'MISSING_ARGUMENT', '$.query.arguments.postcode');
      expectProblem(await query({ schema: 'demo.PeopleInPostcode', arguments: { postcode: null } }), 400, 'MISSING_ARGUMENT', '$.query.arguments.postcode');
      expectProblem(await query({ schema: 'demo.PeopleInPostcode', arguments: { postcode: 'N1', zip: 'x' } }), 400, 'UNKNOWN_ARGUMENT', '$.query.arguments.zip');
      const wrong = await query({ schema: 'demo.PeopleInPostcode', arguments: { postcode: 5 } });
      expectProblem(wrong, 400, 'INVALID_ARGUMENT', '$.query.arguments.postcode');
      expect(wrong.json.error.message).to.equal('argument "postcode" of query "demo.PeopleInPostcode" (string): 5 is not a string; expected a string');
      expectProblem(await query({ schema: 'demo.Adults', arguments: { minAge: 'forty' } }), 400, 'INVALID_ARGUMENT', '$.query.arguments.minAge');
      expectProblem(await query({ schema: 'demo.Adults', arguments: { minAge: 1.5 } }), 400, 'INVALID_ARGUMENT', '$.query.arguments.minAge');
      expectProblem(await query({ schema: 'demo.Adults', arguments: { 'odd key': 1, minAge: 1 } }), 400, 'UNKNOWN_ARGUMENT', '$.query.arguments["odd key"]');
      expectProblem(await query({ schema: 'demo.Adults', arguments: [1] }), 400, 'INVALID_FIELD', '$.query.arguments');
      expectProblem(await query({ schema: 'demo.Adults', arguments: { minAge: 1 }, limit: 1001 }), 400, 'INVALID_LIMIT', '$.query.limit');
      expectProblem(await query({ schema: 'demo.Adults', arguments: { minAge: 1 }, sort: 'age' }), 400, 'UNKNOWN_FIELD', '$.query.sort');
      expectProblem(await query({ schema: 'demo.Nope' }), 404, 'QUERY_NOT_FOUND', '$.query.schema');
      expectProblem(await query({ schema: 'demo.Person' }), 404, 'QUERY_NOT_FOUND', '$.query.schema');
    });

    it('an optional argument that is not given leaves its predicate out', async () => {
      const all = (await query({ schema: 'demo.Adults', arguments: { minAge: 50 }, limit: 1000 })).json;
      expect(all.items.map((r: Rec) => r.id)).to.deep.equal(reference('age >= 50', 'age:desc,name'));
      const c1 = (await query({ schema: 'demo.Adults', arguments: { minAge: 50, employer: 'c1' }, limit: 1000 })).json;
      expect(c1.items.map((r: Rec) => r.id)).to.deep.equal(reference("age >= 50 and employer.id == 'c1'", 'age:desc,name'));
      expect(c1.items.length).to.be.greaterThan(0).and.lessThan(all.items.length);
    });

    it('GET /{dataset}/queries/{name}: arguments as query parameters, with limit and nextToken', async () => {
      const ids = await pageAll(async (token) => {
        const res = await get('demo.Adults', { minAge: 30, employer: 'c0', limit: 4, ...(token ? { nextToken: token } : {}) });
        expect(res.status, res.text).to.equal(200);
        return res.json;
      }, 4);
      expect(ids).to.deep.equal(reference("age >= 30 and employer.id == 'c0'", 'age:desc,name'));
      expectProblem(await get('demo.Adults', { minAge: 'old' }), 400, 'INVALID_ARGUMENT', 'query:minAge');
      expectProblem(await get('demo.Adults', { minAge: 3, zip: 'x' }), 400, 'UNKNOWN_ARGUMENT', 'query:zip');
      expectProblem(await get('demo.Adults'), 400, 'MISSING_ARGUMENT', 'query:minAge');
      expectProblem(await get('demo.Adults', { minAge: 3, limit: 'many' }), 400, 'INVALID_LIMIT', 'query:limit');
      expectProblem(await get('demo.Nope'), 404, 'QUERY_NOT_FOUND', 'path:name');
    });
  });

  describe('SQL-based queries', () => {
    it('run on the read-only connection while the raw SQL endpoint is off', async () => {
      const raw = await api({ path: '/demo/raw-query', body: { sql: 'SELECT 1 AS one' } });
      expect(raw.status).to.equal(403);
      const res = await query({ schema: 'demo.HeadcountByEmployer', arguments: { minAge: 40 } });
      expect(res.status, res.text).to.equal(200);
      const expected = ['c0', 'c1']
        .map((c) => ({ company: c === 'c0' ? 'Zeta' : 'Alpha', people: people.filter((p) => p.employer?.id === c && (p.age ?? -1) >= 40).length }))
        .sort((a, b) => b.people - a.people || (a.company < b.company ? -1 : 1));
      expect(res.json).to.deep.equal({ items: expected });
    });

    it('answer one page: more rows than limit is a 400 naming $.query.limit; no nextToken', async () => {
      const n1 = people.filter((p) => p.address.postcode === 'N1');
      const page = await query({ schema: 'demo.PeopleSql', arguments: { pc: 'N1' }, limit: n1.length });
      expect(page.status, page.text).to.equal(200);
      expect(page.json.items).to.deep.equal(n1.map((p) => ({ id: p.id, name: p.name ?? null })));
      expect(page.json).not.to.have.property('nextToken');
      expectProblem(await query({ schema: 'demo.PeopleSql', arguments: { pc: 'N1' }, limit: n1.length - 1 }), 400, 'ROW_LIMIT_EXCEEDED', '$.query.limit');
      expectProblem(await query({ schema: 'demo.PeopleSql', arguments: { pc: 'N1' }, nextToken: 'abc' }), 400, 'INVALID_NEXT_TOKEN', '$.query.nextToken');
      expectProblem(await query({ schema: 'demo.PeopleSql', arguments: {} }), 400, 'MISSING_ARGUMENT', '$.query.arguments.pc');
      expectProblem(await query({ schema: 'demo.PeopleSql', arguments: { pc: ['N1'] } }), 400, 'INVALID_ARGUMENT', '$.query.arguments.pc');
      const viaGet = await get('demo.PeopleSql', { pc: 'E2', limit: 100 });
      expect(viaGet.json.items.map((r: Rec) => r.id)).to.deep.equal(people.filter((p) => p.address.postcode === 'E2').map((p) => p.id));
    });
  });

  describe('the function gateway\'s query operation', () => {
    it('pages a filter-based query with data {schema, arguments}, limit and nextToken', async () => {
      const ids: string[] = [];
      let token: string | undefined;
      do {
        const result = await invoke({ data: { schema: 'demo.PeopleInPostcode', arguments: { postcode: 'E2' } }, limit: 7, ...(token ? { nextToken: token } : {}) });
        expect(result.status.code).to.equal(200);
        ids.push(...result.data.items.map((r: Rec) => r.id));
        token = result.data.nextToken;
      } while (token);
      expect(ids).to.deep.equal(reference("address.postcode == 'E2'", 'name'));
    });

    it('reports missing, extra and wrong-typed arguments with the payload\'s JSON paths', async () => {
      const expectInvalid = (result: { data: any; status: { code: number } }, code: string, path: string) => {
        expect(result.status.code).to.equal(400);
        expect(result.data.code).to.equal(code);
        expect(result.data.details.map((d: { path: string }) => d.path)).to.include(path);
      };
      expectInvalid(await invoke({ data: { schema: 'demo.PeopleInPostcode' } }), 'MISSING_ARGUMENT', '$.data.arguments.postcode');
      expectInvalid(await invoke({ data: { schema: 'demo.PeopleInPostcode', arguments: { postcode: 'N1', zip: 1 } } }), 'UNKNOWN_ARGUMENT', '$.data.arguments.zip');
      expectInvalid(await invoke({ data: { schema: 'demo.Adults', arguments: { minAge: true } } }), 'INVALID_ARGUMENT', '$.data.arguments.minAge');
      expectInvalid(await invoke({ data: { schema: 'demo.Adults', arguments: { minAge: 1 } }, limit: 0 }), 'INVALID_LIMIT', '$.limit');
      expectInvalid(await invoke({ data: { schema: 'demo.Adults', arguments: { minAge: 1 } }, sort: 'age' }), 'UNKNOWN_FIELD', '$.sort');
      expectInvalid(await invoke({ data: { schema: 'demo.Adults', bogus: 1 } }), 'UNKNOWN_FIELD', '$.data.bogus');
      expectInvalid(await invoke({ data: { arguments: {} } }), 'MISSING_FIELD', '$.data.schema');
      expectInvalid(await invoke({ data: { schema: 'demo.Adults', arguments: 'minAge=1' } }), 'INVALID_FIELD', '$.data.arguments');
      const missing = await invoke({ data: { schema: 'demo.Nope' } });
      expect(missing.status.code).to.equal(404);
      expect(missing.data.details[0].path).to.equal('$.data.schema');
    });

    it('runs an SQL query', async () => {
      const result = await invoke({ data: { schema: 'demo.PeopleSql', arguments: { pc: 'n1' } }, limit: 100 });
      expect(result.status.code).to.equal(200);
      expect(result.data.items.map((r: Rec) => r.id)).to.deep.equal(people.filter((p) => p.address.postcode === 'n1').map((p) => p.id));
    });
  });
});

describe('query schemas: npm start refuses an invalid one', () => {
  it('an SQL query on a DynamoDB dataset stops the start, naming the JSON path', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'das-badquery-'));
    cpSync(join(EXAMPLES_DIR, 'environment.yaml'), join(dir, 'environment.yaml'));
    writeFileSync(
      join(dir, 'dataset.yaml'),
      stringify({
        apiVersion: 'dataaccess.dev/v1alpha1',
        kind: 'Dataset',
        metadata: { name: 'kv' },
        spec: {
          environment: 'local',
          location: { kind: 'dynamodb', tablePrefix: 'kv', region: 'eu-west-1' },
          schemas: { 'kv.Item': { properties: { name: { type: 'string' } } } },
          queries: { 'kv.All': { sql: 'SELECT * FROM @{i}', using: { i: 'kv.Item' } } },
        },
      }),
    );
    let failure: Error | undefined;
    try {
      const dp = await startTestDataPlane({ manifests: dir });
      await dp.stop();
    } catch (err) {
      failure = err as Error;
    }
    expect(failure?.message).to.contain('$.spec.queries["kv.All"].sql: SQL queries run only on SQL locations');
  });
});
