/** Pages led by a sortable property come from its secondary index: checked against the reference order on DynamoDB Local. */
import { expect } from 'chai';
import { compileFilter, fieldValue, matchesFilter, type RecordValues } from '../../../../model/filter.js';
import { compareRecords, compileSort } from '../../../../model/sort.js';
import type { DatasetConfig, PropertyDef, RecordSchemaDef } from '../../../../model/types.js';
import { suiteDataset } from '../../../test-support/driver-suite.js';
import { LIST_FILTERS, LIST_ITEM_SCHEMA, LIST_SORTS } from '../../../test-support/driver-suite-lists.js';
import { dynamoDbUnderTest } from '../../../test-support/dynamodb.js';
import { DynamoDbDriver, MAX_ATOMIC_ACTIONS } from './driver.js';
import { encodeSortValue } from './sort-index.js';

const ITEM = 'suite.ListItem';

/** Every scalar and link property of the list section's schema, marked sortable. */
function sortableCopy(def: RecordSchemaDef, except: string[] = []): RecordSchemaDef {
  const mark = (props: Record<string, PropertyDef>): Record<string, PropertyDef> =>
    Object.fromEntries(
      Object.entries(props).map(([name, p]) => [name, p.type === 'object' ? { ...p, properties: mark(p.properties) } : p.type === 'links' || except.includes(name) ? p : { ...p, sortable: true }]),
    ) as Record<string, PropertyDef>;
  return { ...def, properties: mark(def.properties) };
}

function records(count: number): RecordValues[] {
  let seed = 7;
  const next = (m: number) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % m);
  const pick = <T>(values: T[]) => values[next(values.length)];
  return Array.from({ length: count }, (_, i) => {
    const data: Record<string, unknown> = {};
    const set = (key: string, value: unknown) => value !== null && (data[key] = value);
    set('name', pick(['alice', 'Alice', 'bob', '10', '9', 'émile', '', null]));
    set('n', pick([-3, 0, 1, 2, 3, 5, 10, 11, 42, 1000, null]));
    set('x', pick([-1.25, 0, 0.5, 0.25, 3.75, 1e6, -1e-9, null]));
    set('flag', pick([true, false, null]));
    set('day', pick(['2024-01-01', '2024-06-01', '1999-02-28', null]));
    set('at', pick(['2024-01-01T10:00:00+02:00', '2024-01-01T08:00:00Z', '2024-01-01T08:00:00.5Z', '2023-12-31T23:59:59-05:00', null]));
    const city = pick(['Paris', 'paris', 'Oslo', null]);
    const zip = pick(['N1', 'n1', '75001', null]);
    if (city !== null || zip !== null) data.address = { ...(city !== null ? { city } : {}), ...(zip !== null ? { zip } : {}) };
    set('owner', pick([{ id: 'lc1' }, { id: 'lc2' }, { id: 'LC3' }, null]));
    return { id: `${pick(['a', 'B', '0', 'z'])}${String(i).padStart(3, '0')}`, version: 1, data };
  });
}

describe('DynamoDB driver: sortable properties through secondary indexes', function () {
  this.timeout(120_000);
  let driver: DynamoDbDriver;
  let dataset: DatasetConfig;
  const all = records(260);
  const def = sortableCopy(LIST_ITEM_SCHEMA);

  before(async () => {
    const t = await dynamoDbUnderTest(100_000);
    driver = t.driver;
    const base = suiteDataset('dynamodb', t.location);
    // First with two properties not sortable (the table is created with the other indexes), records
    // written; then those two sortable too: their indexes added and filled with the records before.
    const plain = { ...base, schemas: { ...base.schemas, [ITEM]: sortableCopy(LIST_ITEM_SCHEMA, ['name', 'x']) } };
    await driver.prepare(plain);
    const half = all.length / 2;
    for (let i = 0; i < half; i += MAX_ATOMIC_ACTIONS) {
      const ops = all.slice(i, Math.min(i + MAX_ATOMIC_ACTIONS, half)).map((r) => ({ op: 'create' as const, schema: ITEM, id: r.id, data: r.data }));
      for (const r of await driver.write(plain, ops, 'ATOMIC')) expect(r.ok).to.equal(true);
    }
    dataset = { ...plain, generation: plain.generation + 1, schemas: { ...plain.schemas, [ITEM]: def } };
    const report = await driver.prepare(dataset);
    expect(report.applied.filter((a) => a.includes('create index'))).to.have.length(2);
    expect(report.applied.filter((a) => a.startsWith('backfill'))).to.have.length(2);
    for (let i = half; i < all.length; i += MAX_ATOMIC_ACTIONS) {
      const ops = all.slice(i, i + MAX_ATOMIC_ACTIONS).map((r) => ({ op: 'create' as const, schema: ITEM, id: r.id, data: r.data }));
      for (const r of await driver.write(dataset, ops, 'QUORUM')) expect(r.ok).to.equal(true);
    }
    expect((await driver.prepare(dataset)).applied, 'indexes exist: nothing to do').to.deep.equal([]);
  });
  after(() => driver?.close());

  async function pageThrough(filterText: string | undefined, sortText: string | undefined, limit: number): Promise<string[]> {
    const filter = filterText === undefined ? undefined : compileFilter(filterText, def);
    const sort = compileSort(sortText, def);
    const ids: string[] = [];
    let after: unknown[] | undefined;
    for (let pages = 0; pages < 1000; pages++) {
      const page = await driver.list(dataset, ITEM, { filter, sort, limit, after });
      ids.push(...page.map((r) => r.id));
      if (page.length < limit) return ids;
      after = sort.map((key) => fieldValue(page[page.length - 1], key.field));
    }
    throw new Error('paging did not end');
  }

  const reference = (filterText: string | undefined, sortText: string | undefined) => {
    const filter = filterText === undefined ? undefined : compileFilter(filterText, def);
    const sort = compileSort(sortText, def);
    return all.filter((r) => !filter || matchesFilter(filter, r)).sort((a, b) => compareRecords(sort, a, b)).map((r) => r.id);
  };

  it('encodes numbers so that text order is numeric order', () => {
    const numbers = [-1e300, -3, -1.25, -1e-9, 0, 1e-9, 0.25, 0.5, 3.75, 1000, 1e300];
    const encoded = numbers.map((n) => encodeSortValue('number', n));
    expect([...encoded].sort()).to.deep.equal(encoded);
    expect(encodeSortValue('number', -0)).to.equal(encodeSortValue('number', 0));
  });

  for (const sort of LIST_SORTS.filter((s) => s && !s.startsWith('id')).flatMap((s) => [s!, `${s!.split(',')[0].split(':')[0]}:desc:nulls-last`])) {
    it(`sort ${sort}: every record once, in the reference order, pages of 23`, async () => {
      const ids = await pageThrough(undefined, sort, 23);
      expect(ids).to.deep.equal(reference(undefined, sort));
    });
  }

  LIST_FILTERS.forEach((filter, i) => {
    const sort = LIST_SORTS.filter((s) => s && !s.startsWith('id'))[i % 10];
    it(`filter ${filter}, sort ${sort}, pages of 10`, async () => {
      expect(await pageThrough(filter, sort, 10)).to.deep.equal(reference(filter, sort));
    });
  });
});
