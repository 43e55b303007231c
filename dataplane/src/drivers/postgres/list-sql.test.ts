/**
 * List SQL: the statement's shape (bound values only, binary order, explicit nulls, keyset without
 * OFFSET), and on a real PostgreSQL every sort and filter against the reference order and evaluator
 * in model/, paging with small pages so every keyset branch (nulls, ties, mixed directions) runs.
 */
import { expect } from 'chai';
import pino from 'pino';
import { compileFilter, fieldValue, matchesFilter } from '../../../../model/filter.js';
import { compareRecords, compileSort, type SortKey } from '../../../../model/sort.js';
import { suiteDataset } from '../../../test-support/driver-suite.js';
import { freshDatabase } from '../../../test-support/postgres.js';
import type { StoredRecord, WriteOp } from '../driver.js';
import { PostgresDriver } from './driver.js';
import { listSql } from './list-sql.js';
import { tableLayout } from './sql.js';

const dataset = suiteDataset('postgres');
const schema = dataset.schemas['suite.Person'];
const layout = tableLayout(dataset, 'suite.Person', schema);

describe('postgres list SQL (pure)', () => {
  it('binds every value, orders text with COLLATE "C" and explicit nulls, pages by keyset with LIMIT', () => {
    const statement = listSql(layout, {
      filter: compileFilter("address.postcode == 'N1' or (name in ('x\\'; DROP', 'b') and age >= 3)", schema),
      sort: compileSort('name:desc,age:first', schema),
      limit: 11,
      after: ['Bob', null, 'p-1'],
    });
    expect(statement.text).not.to.match(/N1|DROP|Bob|p-1|OFFSET/);
    expect(statement.text).to.contain('ORDER BY "name" COLLATE "C" DESC NULLS FIRST, "age" ASC NULLS FIRST, "id" COLLATE "C" ASC NULLS LAST LIMIT $');
    expect(statement.text).to.contain('"address_postcode" = $1::text');
    expect(statement.text).to.contain('"name" = ANY($2::text[])');
    expect(statement.text).to.contain('"age" >= $3::bigint');
    expect(statement.values).to.deep.equal(['N1', ["x'; DROP", 'b'], 3, 'Bob', 'Bob', 'p-1', 'Bob', 11]);
  });

  it('has no keyset branch past a null that sorts last (only the ties continue)', () => {
    const statement = listSql(layout, { sort: compileSort('age', schema), limit: 5, after: [null, 'p-9'] });
    expect(statement.text).to.contain('WHERE (("age" IS NULL AND "id" COLLATE "C" > $1::text))');
    const first = listSql(layout, { sort: compileSort('age:desc', schema), limit: 5, after: [null, 'p-9'] });
    expect(first.text).to.contain('WHERE ("age" IS NOT NULL OR ("age" IS NULL AND "id" COLLATE "C" > $1::text))');
  });
});

describe('postgres list (real PostgreSQL): every sort and filter against the reference', function () {
  this.timeout(120_000);
  let driver: PostgresDriver;
  const records: StoredRecord[] = [];

  // Names mix digits, upper and lower case, non-ASCII and nulls; ages repeat and have nulls.
  const NAMES = ['alice', 'Alice', 'bob', 'Bob', 'BOB', '10', '9', 'Zoe', 'zoe', 'émile', 'Émile', '_x', null];
  const POSTCODES = ['N1', 'n1', 'E2', null];

  before(async () => {
    driver = new PostgresDriver({ logger: pino({ level: 'silent' }), env: { DATABASE_URL: await freshDatabase() } });
    await driver.prepare(dataset);
    const ops: WriteOp[] = [];
    for (let i = 0; i < 157; i++) {
      const name = NAMES[(i * 7) % NAMES.length];
      const age = i % 5 === 0 ? null : (i * 13) % 17;
      const postcode = POSTCODES[(i * 3) % POSTCODES.length];
      ops.push({
        op: 'create',
        schema: 'suite.Person',
        id: `p-${String((i * 37) % 1000).padStart(3, '0')}`,
        data: {
          ...(name !== null ? { name } : {}),
          ...(age !== null ? { age } : {}),
          ...(i % 3 ? { score: (i % 7) / 4 - 0.5 } : {}),
          active: i % 2 === 0,
          ...(i % 4 ? { born: `19${String(50 + (i % 40)).padStart(2, '0')}-0${1 + (i % 9)}-1${i % 10}` } : {}),
          ...(i % 6 ? { seen: `2024-05-31T12:00:0${i % 10}.${String(i).padStart(6, '0')}Z` } : {}),
          address: { street: `${i} Road`, ...(postcode !== null ? { postcode } : {}) },
          ...(i % 4 === 1 ? {} : { employer: { id: `c-${i % 3}` } }),
        },
      });
    }
    const results = await driver.write(dataset, ops, 'ATOMIC');
    for (const r of results) {
      if (!r.ok) throw r.error;
      records.push(r.record);
    }
  });
  after(() => driver?.close());

  async function pageThrough(sort: SortKey[], filterText: string | undefined, limit: number): Promise<StoredRecord[]> {
    const filter = filterText === undefined ? undefined : compileFilter(filterText, schema);
    const seen: StoredRecord[] = [];
    let after: unknown[] | undefined;
    for (let pages = 0; pages < 1000; pages++) {
      const page = await driver.list(dataset, 'suite.Person', { filter, sort, limit, after });
      seen.push(...page);
      if (page.length < limit) return seen;
      const last = page[page.length - 1];
      after = sort.map((key) => fieldValue(last, key.field));
    }
    throw new Error('did not finish');
  }

  const SORTS = [
    undefined,
    'name',
    'name:desc',
    'name:asc:nulls-first',
    'name:desc:nulls-last',
    'name:first',
    'name:desc:last',
    'age',
    'age:desc',
    'age:desc:last,name:first',
    'age:first,name:desc',
    'score:desc,address.postcode,name:last',
    'employer.id:desc,age',
    'born:desc:last',
    'seen:first',
    'active,seen:desc',
    'id:desc',
    'version,address.postcode:desc:first',
  ];
  for (const sortText of SORTS) {
    it(`sort ${sortText ?? '(none: by id)'}: pages of 7 give every record once, in the reference order`, async () => {
      const sort = compileSort(sortText, schema);
      const expected = [...records].sort((a, b) => compareRecords(sort, a, b)).map((r) => r.id);
      const got = (await pageThrough(sort, undefined, 7)).map((r) => r.id);
      expect(new Set(got).size).to.equal(got.length);
      expect(got).to.deep.equal(expected);
    });
  }

  const FILTERS = [
    "address.postcode == 'N1'",
    "address.postcode != 'N1'",
    "name < 'B'",
    "name >= 'a' and name <= 'z'",
    "name > 'Zoe'",
    'age > 8',
    'age <= 8 or age is null',
    'not age > 8',
    'age in (1, 3, 5, 16)',
    'age not in (1, 3)',
    'age is not null and name is null',
    "employer.id == 'c-1'",
    "employer is null or employer.id in ('c-2')",
    'score >= 0.25',
    'score < 0',
    'active == true',
    'active != false and score is not null',
    "born >= '1970-01-01' and born < '1980-01-01'",
    "seen > '2024-05-31T12:00:05Z'",
    "seen <= '2024-05-31T14:00:03.000070+02:00'",
    "id >= 'p-500'",
    'version == 1 and age == 3',
    "not (name in ('alice', 'Alice') or (age < 5 and address.postcode != 'E2'))",
  ];
  for (const filterText of FILTERS) {
    it(`filter ${filterText}: the SQL selects what the reference evaluator does`, async () => {
      const sort = compileSort('age:desc,name', schema);
      const filter = compileFilter(filterText, schema);
      const expected = records.filter((r) => matchesFilter(filter, r)).sort((a, b) => compareRecords(sort, a, b)).map((r) => r.id);
      const got = (await pageThrough(sort, filterText, 10)).map((r) => r.id);
      expect(got).to.deep.equal(expected);
      expect(expected.length, 'a filter that selects nothing (or everything) proves little').to.be.within(1, records.length - 1);
    });
  }

  it('answers a value the column cannot hold with 400 INVALID_FILTER, not a 500', async () => {
    const filter = compileFilter('version == 9999999999', schema);
    try {
      await driver.list(dataset, 'suite.Person', { filter, sort: compileSort(undefined, schema), limit: 5 });
      expect.fail('expected a refusal');
    } catch (err) {
      expect((err as { status?: number }).status).to.equal(400);
      expect((err as { code?: string }).code).to.equal('INVALID_FILTER');
    }
  });
});
