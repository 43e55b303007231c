/**
 * list and link through HTTP on a real data plane (examples/: demo.Person, demo.Company with the
 * inverse link employees): sort rules and shorthands, filters, paging through 1,000+ records with
 * each sort while records are inserted, page tokens, to-one and inverse links, and the same
 * through the function gateway and the structured endpoint.
 */
import { expect } from 'chai';
import pino from 'pino';
import { compileFilter, matchesFilter } from '../../model/filter.js';
import { compareRecords, compileSort } from '../../model/sort.js';
import type { RecordSchemaDef } from '../../model/types.js';
import { startFunctionGateway } from '../src/function-gateway/server.js';
import { adminClient, startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { call } from '../test-support/http.js';

type Rec = { id: string; version: number; [k: string]: any };

describe('list and link (REST, structured, function gateway)', function () {
  this.timeout(180_000);
  let dp: TestDataPlane;
  let api: ReturnType<typeof adminClient>;
  let gateway: Awaited<ReturnType<typeof startFunctionGateway>>;
  const people: Rec[] = [];
  let personSchema: RecordSchemaDef;

  const get = (path: string, query: Record<string, string | number> = {}) => {
    const search = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString();
    return api({ path: `/demo/${path}${search ? `?${search}` : ''}` });
  };
  const post = (body: unknown) => api({ path: '/demo', body });
  const invoke = async (payload: Record<string, unknown>) => {
    const res = await call(gateway.url, { path: '/', body: { dataset: { id: 'demo' }, ...payload } });
    expect(res.status).to.equal(200);
    return res.json as { data: any; status: { code: number; message?: string } };
  };

  async function batchCreate(schema: string, records: Rec[]): Promise<void> {
    for (let i = 0; i < records.length; i += 500) {
      const chunk = records.slice(i, i + 500);
      const actions = Object.fromEntries(chunk.map(({ id, version: _v, ...data }) => [id, { create: { schema, id, data } }]));
      const res = await post({ batch: { actions } });
      expect(res.status, res.text).to.equal(200);
    }
  }

  // Names with digits, upper and lower case, repeats and nulls; ages with repeats and nulls.
  const NAMES = ['alice', 'Alice', 'bob', 'Bob', 'BOB', '10', '9', 'Zoe', 'zoe', 'émile', 'Émile', null];
  function person(i: number): Rec {
    const name = NAMES[(i * 7) % NAMES.length];
    const postcode = ['N1', 'n1', 'E2', null][(i * 3) % 4];
    return {
      id: `p${String((i * 7919) % 100_000).padStart(5, '0')}`,
      version: 1,
      ...(name !== null ? { name } : {}),
      ...(i % 6 ? { age: (i * 13) % 90 } : {}),
      address: { street: `${i} Road`, ...(postcode ? { postcode } : {}) },
      ...(i % 5 ? { employer: { id: `c${i % 3}` } } : {}),
    };
  }

  before(async () => {
    dp = await startTestDataPlane();
    api = adminClient(dp);
    gateway = await startFunctionGateway({ upstreamUrl: dp.url, principal: 'service-local-function-service-gateway', logger: pino({ level: 'silent' }), port: 0, host: '127.0.0.1' });
    personSchema = dp.dataPlane.store.dataset('demo')!.config.schemas['demo.Person'];
    await batchCreate('demo.Company', [0, 1, 2, 3].map((i) => ({ id: `c${i}`, version: 1, name: `Company ${i}` })));
    for (let i = 0; i < 1100; i++) people.push(person(i));
    await batchCreate('demo.Person', people);
  });
  after(async () => {
    await gateway?.stop();
    await dp?.stop();
  });

  /** Follows nextToken to the end; asserts each page's size and that no token comes with the last page. */
  async function pageAll(fetchPage: (token?: string) => Promise<{ items: Rec[]; nextToken?: string }>, limit: number, between?: (n: number) => Promise<void>) {
    const seen: Rec[] = [];
    let token: string | undefined;
    for (let n = 0; n < 10_000; n++) {
      const page = await fetchPage(token);
      seen.push(...page.items);
      if (!page.nextToken) {
        expect(page.items.length).to.be.at.most(limit);
        return seen;
      }
      expect(page.items.length).to.equal(limit);
      token = page.nextToken;
      await between?.(n);
    }
    throw new Error('paging did not end');
  }
  const restPage = (path: string, query: Record<string, string | number>) => async (token?: string) => {
    const res = await get(path, { ...query, ...(token ? { nextToken: token } : {}) });
    expect(res.status, res.text).to.equal(200);
    return res.json;
  };
  const expectedOrder = (sort: string | undefined, filter?: string, from: Rec[] = people) => {
    const keys = compileSort(sort, personSchema);
    const typed = filter ? compileFilter(filter, personSchema) : undefined;
    const asStored = (r: Rec) => ({ id: r.id, version: r.version, data: r });
    return from.filter((r) => !typed || matchesFilter(typed, asStored(r))).sort((a, b) => compareRecords(keys, asStored(a), asStored(b))).map((r) => r.id);
  };

  describe('sort rules 1–5 (numbers, upper- and lower-case text, nulls)', () => {
    const small = () => people.filter((p) => p.address.postcode === 'E2' && (p.employer?.id === 'c1' || !p.employer));
    const filter = "address.postcode == 'E2' and (employer.id == 'c1' or employer is null)";
    const cases: [string, string][] = [
      ['rule 1: field:direction:nulls', 'name:desc:nulls-last'],
      ['rule 2: no direction is ascending', 'name'],
      ['rule 3: ascending puts nulls last', 'name:asc'],
      ['rule 3: descending puts nulls first', 'name:desc'],
      ['rule 4: the shorthand :first', 'name:first'],
      ['rule 4: the shorthand :last', 'name:desc:last'],
      ['rule 5: numbers ascending, nulls last', 'age'],
      ['several keys', 'name:desc:first,age:asc:first'],
    ];
    for (const [title, sort] of cases) {
      it(`${title} (${sort})`, async () => {
        const res = await get('demo.Person', { filter, sort, limit: 1000 });
        expect(res.status, res.text).to.equal(200);
        const ids = res.json.items.map((r: Rec) => r.id);
        expect(ids).to.deep.equal(expectedOrder(sort, filter, small()));
        expect(res.json).not.to.have.property('nextToken');
      });
    }

    it('rule 5 spelled out: numbers, then A–Z, then a–z, then nulls; descending the reverse', async () => {
      const names = (await pageAll(restPage('demo.Person', { sort: 'name', limit: 1000 }), 1000)).map((r) => r.name ?? null);
      const distinct = names.filter((n, i) => n !== names[i - 1]);
      expect(distinct).to.deep.equal(['10', '9', 'Alice', 'BOB', 'Bob', 'Zoe', 'alice', 'bob', 'zoe', 'Émile', 'émile', null]);
      const descNames = (await pageAll(restPage('demo.Person', { sort: 'name:desc', limit: 1000 }), 1000)).map((r) => r.name ?? null);
      expect(descNames.filter((n, i) => n !== descNames[i - 1])).to.deep.equal([...distinct].reverse());
    });
  });

  describe('filters', () => {
    const filters = [
      "address.postcode == 'N1'",
      'address.postcode == "n1"',
      "address.postcode != 'N1'",
      "employer.id == 'c2'",
      'employer is null',
      'employer.id is not null and age < 10',
      'age > 80',
      'age >= 80 or age <= 2',
      "name < 'B'",
      "name in ('Bob', 'bob', '9')",
      "name not in ('Bob', 'bob')",
      "not (age > 10 or name == 'Alice')",
      "id >= 'p90000'",
      "age == '33'",
    ];
    for (const filter of filters) {
      it(`${filter}`, async () => {
        const ids = (await pageAll(restPage('demo.Person', { filter, sort: 'age:desc,name', limit: 250 }), 250)).map((r) => r.id);
        const expected = expectedOrder('age:desc,name', filter);
        expect(ids).to.deep.equal(expected);
        expect(expected.length).to.be.within(1, people.length - 1);
      });
    }

    it('bad syntax is a 400 naming the position', async () => {
      const res = await get('demo.Person', { filter: "age >> 3" });
      expect(res.status).to.equal(400);
      expect(res.json.error.code).to.equal('INVALID_FILTER');
      expect(res.json.error.message).to.match(/at position 6/);
      expect(res.json.error.details).to.deep.equal([{ path: 'query:filter', position: 6, message: res.json.error.details[0].message }]);
    });

    it('an unknown property, a literal of the wrong type and a bad sort are 400s naming them', async () => {
      const unknown = await get('demo.Person', { filter: "nickname == 'x'" });
      expect(unknown.status).to.equal(400);
      expect(unknown.json.error.message).to.match(/unknown property "nickname".*at position 1/);
      const wrongType = await get('demo.Person', { filter: "age == 'old'" });
      expect(wrongType.status).to.equal(400);
      expect(wrongType.json.error.message).to.match(/'old' is not a valid value for age \(integer\).*at position 8/);
      const sort = await get('demo.Person', { sort: 'age:sideways' });
      expect(sort.status).to.equal(400);
      expect(sort.json.error.code).to.equal('INVALID_SORT');
      expect(sort.json.error.details[0]).to.include({ path: 'query:sort', position: 5 });
    });

    it('limit: 100 by default, at most 1000; unknown parameters are refused', async () => {
      const page = await get('demo.Person');
      expect(page.json.items).to.have.length(100);
      expect(page.json.nextToken).to.be.a('string');
      expect(page.json.items.map((r: Rec) => r.id)).to.deep.equal(expectedOrder(undefined).slice(0, 100));
      for (const limit of ['0', '1001', 'ten', '-1']) {
        const res = await get('demo.Person', { limit });
        expect(res.status, limit).to.equal(400);
        expect(res.json.error.code).to.equal('INVALID_LIMIT');
      }
      const unknown = await get('demo.Person', { order: 'name' });
      expect(unknown.status).to.equal(400);
      expect(unknown.json.error.code).to.equal('UNKNOWN_PARAMETER');
      expect((await get('demo.Nobody')).status).to.equal(404);
    });

    it('expand on a list page', async () => {
      const res = await get('demo.Person', { filter: "employer.id == 'c1'", limit: 3, expand: 'employer' });
      expect(res.json.items).to.have.length(3);
      for (const r of res.json.items) expect(r.employer).to.deep.equal({ id: 'c1', version: 1, name: 'Company 1' });
    });
  });

  describe('paging through 1,000+ records', () => {
    const SORTS = [undefined, 'name', 'name:desc', 'age:first', 'age:desc:last,name:desc', 'address.postcode:desc,employer.id:last'];
    for (const sort of SORTS) {
      it(`sort ${sort ?? '(by id)'}: every record exactly once, in order, nulls included`, async () => {
        const ids = (await pageAll(restPage('demo.Person', { ...(sort ? { sort } : {}), limit: 97 }), 97)).map((r) => r.id);
        expect(ids).to.have.length(people.length);
        expect(new Set(ids).size).to.equal(people.length);
        expect(ids).to.deep.equal(expectedOrder(sort));
      });
    }

    it('while records are inserted between pages: each record that existed throughout is seen exactly once', async () => {
      const before = expectedOrder('age:desc,name');
      let added = 0;
      const seen = await pageAll(restPage('demo.Person', { sort: 'age:desc,name', limit: 150 }), 150, async (n) => {
        // New records land before, inside and after the pages already read.
        const fresh = [0, 45, 89].map((age, j) => ({ id: `new-${n}-${j}`, version: 1, name: ['Aa', 'mm', 'zz'][j], age }));
        added += fresh.length;
        await batchCreate('demo.Person', fresh);
      });
      const ids = seen.map((r) => r.id);
      expect(new Set(ids).size).to.equal(ids.length);
      const old = ids.filter((id) => !id.startsWith('new-'));
      expect(old).to.deep.equal(before);
      expect(added).to.be.greaterThan(10);
      // Clean up, so other tests keep seeing `people` only.
      const deletes = Object.fromEntries(
        Array.from({ length: added / 3 }, (_, n) => [0, 1, 2].map((j) => [`d-${n}-${j}`, { delete: { schema: 'demo.Person', id: `new-${n}-${j}` } }])).flat(),
      );
      expect((await post({ batch: { actions: deletes } })).status).to.equal(200);
    });
  });

  describe('page tokens', () => {
    let token: string;
    before(async () => {
      token = (await get('demo.Person', { sort: 'name', filter: 'age > 10', limit: 5 })).json.nextToken;
    });

    it('tampered, mismatched or not a token: 400 INVALID_NEXT_TOKEN', async () => {
      const tampered = token.slice(0, 10) + (token[10] === 'A' ? 'B' : 'A') + token.slice(11);
      for (const [query, why] of [
        [{ sort: 'name', filter: 'age > 10', nextToken: tampered }, /signature|not a page token/],
        [{ sort: 'name:desc', filter: 'age > 10', nextToken: token }, /another dataset, schema, link, filter, sort/],
        [{ sort: 'name', filter: 'age > 11', nextToken: token }, /another/],
        [{ sort: 'name', nextToken: token }, /another/],
        [{ sort: 'name', filter: 'age > 10', nextToken: 'hello' }, /not a page token/],
      ] as const) {
        const res = await get('demo.Person', query);
        expect(res.status).to.equal(400);
        expect(res.json.error.code).to.equal('INVALID_NEXT_TOKEN');
        expect(res.json.error.message).to.match(why);
      }
      const company = await get('demo.Company', { sort: 'name', filter: 'age > 10', nextToken: token });
      expect(company.status).to.equal(400); // age is no property of demo.Company: refused before the token
      const otherSchema = await get('demo.Company', { sort: 'name', nextToken: token });
      expect(otherSchema.json.error.code).to.equal('INVALID_NEXT_TOKEN');
    });

    it('the same filter written differently and another limit keep the token valid', async () => {
      const res = await get('demo.Person', { sort: 'name:asc:nulls-last', filter: '(age>10)', limit: 7, nextToken: token });
      expect(res.status, res.text).to.equal(200);
      expect(res.json.items.map((r: Rec) => r.id)).to.deep.equal(expectedOrder('name', 'age > 10').slice(5, 12));
    });

    it('an expired token is refused', async () => {
      const tokens = dp.dataPlane.engine.pageTokens!;
      const realNow = Date.now;
      Date.now = () => realNow() + 25 * 3600 * 1000;
      try {
        expect(() => tokens.open(token, { dataset: 'demo', target: 'list:demo.Person', filter: '', sort: '' })).to.throw(/expired|another/);
        const res = await get('demo.Person', { sort: 'name', filter: 'age > 10', nextToken: token });
        expect(res.status).to.equal(400);
        expect(res.json.error.message).to.match(/expired/);
      } finally {
        Date.now = realNow;
      }
    });
  });

  describe('links', () => {
    it('to-one: a page of at most one record, the target; none when the link is unset', async () => {
      const withEmployer = people.find((p) => p.employer)!;
      const res = await get(`demo.Person/${withEmployer.id}/employer`);
      expect(res.status, res.text).to.equal(200);
      expect(res.json).to.deep.equal({ items: [{ id: withEmployer.employer.id, version: 1, name: `Company ${withEmployer.employer.id.slice(1)}` }] });
      const without = people.find((p) => !p.employer)!;
      expect((await get(`demo.Person/${without.id}/employer`)).json).to.deep.equal({ items: [] });
      expect((await get(`demo.Person/${withEmployer.id}/employer`, { filter: "name == 'nope'" })).json).to.deep.equal({ items: [] });
    });

    it('inverse (demo.Company.employees): pages over the people whose employer is the company, with filter and sort', async () => {
      const employees = people.filter((p) => p.employer?.id === 'c2');
      const all = await pageAll(restPage('demo.Company/c2/employees', { sort: 'age:desc:last,name', limit: 50 }), 50);
      expect(all.map((r) => r.id)).to.deep.equal(expectedOrder('age:desc:last,name', undefined, employees));
      const filtered = await pageAll(restPage('demo.Company/c2/employees', { filter: "address.postcode == 'N1'", sort: 'name:desc', limit: 20 }), 20);
      expect(filtered.map((r) => r.id)).to.deep.equal(expectedOrder('name:desc', "address.postcode == 'N1'", employees));
      expect(filtered.length).to.be.greaterThan(20);
      expect((await get('demo.Company/c3/employees')).json).to.deep.equal({ items: [] });
    });

    it('a token of one link page is refused for another record', async () => {
      const first = await get('demo.Company/c1/employees', { limit: 2 });
      const other = await get('demo.Company/c2/employees', { limit: 2, nextToken: first.json.nextToken });
      expect(other.status).to.equal(400);
      expect(other.json.error.code).to.equal('INVALID_NEXT_TOKEN');
    });

    it('unknown link, unknown record: 404', async () => {
      const link = await get('demo.Person/p00000/boss');
      expect(link.status).to.equal(404);
      expect(link.json.error.code).to.equal('LINK_NOT_FOUND');
      expect(link.json.error.message).to.contain('links: employer');
      const record = await get('demo.Company/nobody/employees');
      expect(record.status).to.equal(404);
      expect(record.json.error.code).to.equal('RECORD_NOT_FOUND');
    });

    it('an inverse link is not data: a create that carries it is refused', async () => {
      const res = await post({ create: { schema: 'demo.Company', data: { name: 'X', employees: [] } } });
      expect(res.status).to.equal(400);
      expect(res.json.error.code).to.equal('INVALID_RECORD');
    });
  });

  describe('structured requests and the function gateway', () => {
    it('{"list": …} and {"link": …} answer as the GET endpoints do; errors name JSON paths', async () => {
      const rest = await get('demo.Person', { filter: 'age < 20', sort: 'name:desc', limit: 10 });
      const structured = await post({ list: { schema: 'demo.Person', filter: 'age < 20', sort: 'name:desc', limit: 10 } });
      expect(structured.status).to.equal(200);
      expect(structured.json.items).to.deep.equal(rest.json.items);
      const next = await post({ list: { schema: 'demo.Person', filter: 'age < 20', sort: 'name:desc', limit: 10, nextToken: structured.json.nextToken } });
      expect(next.json.items.map((r: Rec) => r.id)).to.deep.equal(expectedOrder('name:desc', 'age < 20').slice(10, 20));
      const link = await post({ link: { schema: 'demo.Company', id: 'c0', link: 'employees', sort: 'name', limit: 1000 } });
      expect(link.json.items.map((r: Rec) => r.id)).to.deep.equal(expectedOrder('name', "employer.id == 'c0'"));
      const bad = await post({ list: { schema: 'demo.Person', filter: 'age <' } });
      expect(bad.status).to.equal(400);
      expect(bad.json.error.details[0]).to.include({ path: '$.list.filter', position: 6 });
      const limit = await post({ list: { schema: 'demo.Person', limit: 5000 } });
      expect(limit.json.error.details[0].path).to.equal('$.list.limit');
      expect((await post({ list: { schema: 'demo.Person', order: 'x' } })).json.error.details[0].path).to.equal('$.list.order');
    });

    it('the function gateway serves list and link, pages with nextToken, and names payload paths', async () => {
      const first = await invoke({ operation: 'list', schema: 'demo.Person', filter: "address.postcode == 'N1'", sort: 'age:desc', limit: 40 });
      expect(first.status.code).to.equal(200);
      const expected = expectedOrder('age:desc', "address.postcode == 'N1'");
      const ids = first.data.items.map((r: Rec) => r.id);
      let token = first.data.nextToken;
      while (token) {
        const page = await invoke({ operation: 'list', schema: 'demo.Person', filter: "address.postcode == 'N1'", sort: 'age:desc', limit: 40, nextToken: token });
        ids.push(...page.data.items.map((r: Rec) => r.id));
        token = page.data.nextToken;
      }
      expect(ids).to.deep.equal(expected);
      const link = await invoke({ operation: 'link', schema: 'demo.Company', id: 'c1', link: 'employees', filter: 'age >= 50', sort: 'name:last', limit: 1000, expand: ['employer'] });
      expect(link.status.code).to.equal(200);
      expect(link.data.items.map((r: Rec) => r.id)).to.deep.equal(expectedOrder('name:last', "employer.id == 'c1' and age >= 50"));
      expect(link.data.items[0].employer).to.deep.equal({ id: 'c1', version: 1, name: 'Company 1' });
      const toOne = await invoke({ operation: 'link', schema: 'demo.Person', id: people[1].id, link: 'employer' });
      expect(toOne.data.items.map((r: Rec) => r.id)).to.deep.equal([people[1].employer.id]);
      const bad = await invoke({ operation: 'list', schema: 'demo.Person', filter: 'age == x' });
      expect(bad.status.code).to.equal(400);
      expect(bad.data.details[0]).to.include({ path: '$.filter', position: 8 });
      const limit = await invoke({ operation: 'list', schema: 'demo.Person', limit: '5' });
      expect(limit.status.code).to.equal(400);
      expect(limit.data.details[0].path).to.equal('$.limit');
      const token2 = await invoke({ operation: 'list', schema: 'demo.Person', nextToken: 'forged' });
      expect(token2.status.code).to.equal(400);
      expect(token2.data.code).to.equal('INVALID_NEXT_TOKEN');
      const unknown = await invoke({ operation: 'link', schema: 'demo.Person', id: 'x', link: 'employer', consistency: 'ATOMIC' });
      expect(unknown.status.code).to.equal(400);
      expect(unknown.data.details[0].path).to.equal('$.consistency');
    });
  });
});
