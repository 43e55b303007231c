/**
 * The driver suite's list section: a driver's pages checked against the reference evaluator and
 * comparator of model/filter.ts and model/sort.ts. A few hundred varied records (numbers, upper-
 * and lower-case text, nulls, nested objects, links, dates, timestamps with different offsets) are
 * written through the driver; for a set of filters and sorts, paging through `list` (keyset, the
 * last row's sort values as `after`) must give every matching record exactly once, in the
 * reference order.
 */
import { expect } from 'chai';
import { compileFilter, fieldValue, matchesFilter, type RecordValues } from '../../model/filter.js';
import { compareRecords, compileSort } from '../../model/sort.js';
import type { DatasetConfig, RecordSchemaDef } from '../../model/types.js';
import type { LocationDriver } from '../src/engine/contract.js';

const ITEM = 'suite.ListItem';

export const LIST_ITEM_SCHEMA: RecordSchemaDef = {
  properties: {
    name: { type: 'string' },
    n: { type: 'integer' },
    x: { type: 'number' },
    flag: { type: 'boolean' },
    day: { type: 'date' },
    at: { type: 'timestamp' },
    address: { type: 'object', properties: { city: { type: 'string' }, zip: { type: 'string' } } },
    owner: { type: 'link', schema: 'suite.Company' },
  },
};

/** Deterministic variety (mulberry32 from a fixed seed), so a failure reproduces. */
function records(count: number): RecordValues[] {
  let seed = 20240531;
  const next = (m: number) => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) % m;
  };
  const pick = <T>(values: T[]) => values[next(values.length)];
  const NAMES = ['alice', 'Alice', 'ALICE', 'bob', 'Bob', '10', '9', 'zoe', 'Zoe', 'émile', 'Émile', '', 'a b', null, null];
  const TIMES = ['2024-01-01T10:00:00+02:00', '2024-01-01T08:00:00Z', '2024-01-01T08:00:00.5Z', '2023-12-31T23:59:59-05:00', '2024-06-30T12:00:00Z', null];
  const out: RecordValues[] = [];
  const ids = new Set<string>();
  while (out.length < count) {
    const id = `${pick(['a', 'B', '0', 'z', 'Z'])}${next(1000).toString().padStart(3, '0')}`;
    if (ids.has(id)) continue;
    ids.add(id);
    const data: Record<string, unknown> = {};
    const set = (key: string, value: unknown) => value !== null && (data[key] = value);
    set('name', pick(NAMES));
    set('n', pick([-3, 0, 1, 2, 3, 5, 10, 11, 42, 1000, null, null]));
    set('x', pick([-1.25, 0, 0.5, 0.25, 3.75, 1e6, null]));
    set('flag', pick([true, false, null]));
    set('day', pick(['2024-01-01', '2024-06-01', '2024-12-31', '1999-02-28', null]));
    set('at', pick(TIMES));
    const address: Record<string, unknown> = {};
    if (next(5)) {
      const city = pick(['Paris', 'paris', 'Oslo', null]);
      const zip = pick(['N1', 'n1', '75001', null]);
      if (city !== null) address.city = city;
      if (zip !== null) address.zip = zip;
      data.address = address;
    }
    set('owner', pick([{ id: 'lc1' }, { id: 'lc2' }, { id: 'LC3' }, null]));
    out.push({ id, version: 1, data });
  }
  return out;
}

export const LIST_FILTERS = [
  'n > 10',
  'n <= 0',
  'n != 5',
  'n in (1, 2, 3)',
  'n not in (1, 2)',
  'n is null',
  'x >= 0.5',
  "name == 'Alice'",
  "name < 'a'",
  "name >= 'B' and name < 'b'",
  "name is not null and not (name == 'bob' or name == 'Bob')",
  'flag == true',
  'flag != true',
  "day >= '2024-06-01'",
  "at > '2024-01-01T07:30:00Z'",
  "at == '2024-01-01T08:00:00Z'",
  "address.city == 'Paris' or address.zip is null",
  "address.zip in ('N1', 'n1')",
  "owner.id == 'lc1'",
  'owner is null',
  "id < 'a'",
  'version == 1',
];

export const LIST_SORTS: (string | undefined)[] = [
  undefined,
  'name',
  'name:desc',
  'n:asc:nulls-first',
  'n:desc:last',
  'x,name:desc',
  'flag,n',
  'day:desc,at',
  'at:nulls-first',
  'address.city:first,address.zip:desc',
  'owner.id',
  'id:desc',
];

/**
 * Adds the list section to a driver's suite. `get` gives the suite's driver and dataset once its
 * `before` has run; the section prepares its own schema (suite.ListItem) in a new config generation.
 */
export function describeListSection(get: () => { driver: LocationDriver; dataset: DatasetConfig }): void {
  describe('list pages match the reference evaluator and comparator (model/)', function () {
    this.timeout(120_000);
    const all = records(300);
    let driver: LocationDriver;
    let dataset: DatasetConfig;

    before(async function () {
      ({ driver } = get());
      if (!driver.list) this.skip();
      const base = get().dataset;
      dataset = { ...base, generation: base.generation + 1, schemas: { ...base.schemas, [ITEM]: LIST_ITEM_SCHEMA } };
      expect((await driver.prepare(dataset)).refused).to.deep.equal([]);
      const companies = ['lc1', 'lc2', 'LC3'].map((id) => ({ op: 'create' as const, schema: 'suite.Company', id, data: { name: id } }));
      for (const r of await driver.write(dataset, companies, 'ATOMIC')) expect(r.ok).to.equal(true);
      const chunk = Math.min(100, driver.capabilities.maxAtomicActions ?? 100);
      for (let i = 0; i < all.length; i += chunk) {
        const ops = all.slice(i, i + chunk).map((r) => ({ op: 'create' as const, schema: ITEM, id: r.id, data: r.data }));
        for (const r of await driver.write(dataset, ops, 'ATOMIC')) expect(r.ok).to.equal(true);
      }
    });

    /** Every page through the driver, as the engine asks for them. */
    async function pageThrough(filterText: string | undefined, sortText: string | undefined, limit: number): Promise<string[]> {
      const def = dataset.schemas[ITEM];
      const filter = filterText === undefined ? undefined : compileFilter(filterText, def);
      const sort = compileSort(sortText, def);
      const ids: string[] = [];
      let after: unknown[] | undefined;
      for (let pages = 0; pages < 1000; pages++) {
        const page = await driver.list!(dataset, ITEM, { filter, sort, limit, after });
        expect(page.length).to.be.at.most(limit);
        ids.push(...page.map((r) => r.id));
        if (page.length < limit) return ids;
        const last = page[page.length - 1];
        after = sort.map((key) => fieldValue(last, key.field));
      }
      throw new Error('paging did not end');
    }

    function reference(filterText: string | undefined, sortText: string | undefined): string[] {
      const def = LIST_ITEM_SCHEMA;
      const filter = filterText === undefined ? undefined : compileFilter(filterText, def);
      const sort = compileSort(sortText, def);
      return all.filter((r) => !filter || matchesFilter(filter, r)).sort((a, b) => compareRecords(sort, a, b)).map((r) => r.id);
    }

    it('the records vary: every filter matches some records and misses others', () => {
      for (const filter of LIST_FILTERS) {
        const n = reference(filter, undefined).length;
        expect(n, filter).to.be.greaterThan(0);
        if (filter !== 'version == 1') expect(n, filter).to.be.lessThan(all.length);
      }
    });

    for (const sort of LIST_SORTS) {
      it(`every record once, in the reference order: sort ${sort ?? '(none: by id)'}, pages of 37`, async () => {
        const ids = await pageThrough(undefined, sort, 37);
        expect(new Set(ids).size).to.equal(ids.length);
        expect(ids).to.deep.equal(reference(undefined, sort));
      });
    }

    LIST_FILTERS.forEach((filter, i) => {
      const sort = LIST_SORTS[i % LIST_SORTS.length];
      it(`filter ${filter}, sort ${sort ?? '(none)'}, pages of 7`, async () => {
        const ids = await pageThrough(filter, sort, 7);
        expect(new Set(ids).size).to.equal(ids.length);
        expect(ids).to.deep.equal(reference(filter, sort));
      });
    });
  });
}
