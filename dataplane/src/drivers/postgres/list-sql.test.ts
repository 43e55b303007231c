/**
 * List SQL: the statement's shape (bound values only, binary order, explicit nulls, keyset without
 * OFFSET), and on a real PostgreSQL every sort and filter against the reference order and evaluator
 * in model/, paging with small pages so every keyset branch (nulls, ties, mixed directions) runs.
 */
import { apiErrorOf, StoreError } from '../../engine/store-outcomes.js';
import { expect } from 'chai';
import pg from 'pg';
import pino from 'pino';
import { compileFilter, fieldValue, matchesFilter } from '../../../../model/filter.js';
import type { DatasetConfig, PropertyDef } from '../../../../model/types.js';
import { compareRecords, compileSort, type SortKey } from '../../../../model/sort.js';
import { suiteDataset } from '../../../test-support/driver-suite.js';
import { freshDatabase } from '../../../test-support/postgres.js';
import type { StoredRecord, WriteOp } from '../../engine/contract.js';
import { PostgresDriver } from './driver.js';
import { listSql, orderBySql } from './list-sql.js';
import { tableLayout } from './sql.js';
import { dataPlaneSettings } from '../../../../model/settings/dataplane.js';

const dataset = suiteDataset('postgres');
const schema = dataset.schemas['suite.Person'];
const layout = tableLayout(dataset, 'suite.Person', schema);

/** The suite's dataset with every stored property of suite.Person sortable (indexed: index-led pages). */
function sortableDataset(): DatasetConfig {
  const copy = structuredClone(suiteDataset('postgres'));
  const mark = (props: Record<string, PropertyDef>) => {
    for (const prop of Object.values(props)) {
      if (prop.type === 'object') mark(prop.properties);
      else if (prop.type !== 'links') prop.sortable = true;
    }
  };
  mark(copy.schemas['suite.Person'].properties);
  return copy;
}

describe('postgres list SQL (pure)', () => {
  const indexed = sortableDataset();
  const people = indexed.schemas['suite.Person'];
  const table = tableLayout(indexed, 'suite.Person', people);

  it('pages a sortable property by index ranges: a row comparison for the values, the nulls apart, each limited', () => {
    const statement = listSql(table, { sort: compileSort('name', people), limit: 11, after: ['Bob', 'p-1'] });
    expect(statement.text).to.contain('WHERE ("name" COLLATE "C", "id" COLLATE "C") > ($1::text, $2::text) ORDER BY "name" COLLATE "C" ASC NULLS LAST, "id" COLLATE "C" ASC NULLS LAST LIMIT $3::integer) UNION ALL (');
    expect(statement.text).to.contain('WHERE "name" IS NULL ORDER BY');
    expect(statement.text).to.match(/\) AS page ORDER BY "name" COLLATE "C" ASC NULLS LAST, "id" COLLATE "C" ASC NULLS LAST LIMIT \$3::integer$/);
    expect(statement.values).to.deep.equal(['Bob', 'p-1', 11]);
  });

  it('one range when the index order is the sort order; a bound and the exact ties when directions differ', () => {
    expect(listSql(table, { sort: compileSort('name', people), limit: 5 }).text).not.to.match(/UNION|WHERE/);
    expect(listSql(table, { sort: compileSort(undefined, people), limit: 5, after: ['p-7'] }).text).to.contain('WHERE "id" COLLATE "C" > $1::text ORDER BY "id" COLLATE "C" ASC');
    const desc = listSql(table, { sort: compileSort('name:desc', people), limit: 5, after: ['Bob', 'p-1'] });
    expect(desc.text).not.to.contain('UNION'); // nulls come first descending: none are left after a name
    expect(desc.text).to.contain('WHERE ("name" COLLATE "C" <= $1::text AND ("name" COLLATE "C" < $1::text OR ("name" = $1::text AND ("id" COLLATE "C" > $2::text))))');
    const afterNull = listSql(table, { sort: compileSort('name:first', people), limit: 5, after: [null, 'p-1'] });
    expect(afterNull.text).to.contain('WHERE ("name" IS NULL AND ("id" COLLATE "C" > $1::text)) ORDER BY');
    expect(afterNull.text).to.contain('WHERE "name" IS NOT NULL ORDER BY "name" COLLATE "C" ASC NULLS LAST');
    expect(afterNull.text).to.contain('AS page ORDER BY "name" COLLATE "C" ASC NULLS FIRST');
  });

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
    expect(statement.values).to.deep.equal(['N1', ["x'; DROP", 'b'], 3, 'Bob', 'Bob', 'Bob', 'p-1', 11]);
  });

  it('has no keyset branch past a null that sorts last (only the ties continue)', () => {
    const statement = listSql(layout, { sort: compileSort('age', schema), limit: 5, after: [null, 'p-9'] });
    expect(statement.text).to.contain('WHERE (("age" IS NULL AND "id" COLLATE "C" > $1::text))');
    const first = listSql(layout, { sort: compileSort('age:desc', schema), limit: 5, after: [null, 'p-9'] });
    expect(first.text).to.contain('WHERE ("age" IS NOT NULL OR ("age" IS NULL AND "id" COLLATE "C" > $1::text))');
  });
});

for (const [variant, dataset] of [
  ['no sortable property', suiteDataset('postgres')],
  ['every property sortable', sortableDataset()],
] as const) {
  describe(`postgres list (real PostgreSQL, ${variant}): every sort and filter against the reference`, function () {
    this.timeout(120_000);
    let driver: PostgresDriver;
    const records: StoredRecord[] = [];

    // Names mix digits, upper and lower case, non-ASCII and nulls; ages repeat and have nulls.
    const NAMES = ['alice', 'Alice', 'bob', 'Bob', 'BOB', '10', '9', 'Zoe', 'zoe', 'émile', 'Émile', '_x', null];
    const POSTCODES = ['N1', 'n1', 'E2', null];

    before(async () => {
      driver = new PostgresDriver({ logger: pino({ level: 'silent' }), settings: dataPlaneSettings({ DATABASE_URL: await freshDatabase() }) });
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
        if (!r.ok) throw new Error(JSON.stringify(r.failure));
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
      'name:desc,id:desc',
      'age:first,id:desc',
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

    it('reports a value the column cannot hold as an invalid query (the API\'s 400 INVALID_FILTER), not a server error', async () => {
      const filter = compileFilter('version == 9999999999', schema);
      try {
        await driver.list(dataset, 'suite.Person', { filter, sort: compileSort(undefined, schema), limit: 5 });
        expect.fail('expected a refusal');
      } catch (err) {
        expect((err as StoreError).failure?.kind).to.equal('invalid-query');
        const api = apiErrorOf((err as StoreError).failure);
        expect([api.status, api.code]).to.deep.equal([400, 'INVALID_FILTER']);
      }
    });
  });
}

describe('postgres list (real PostgreSQL, 20,000 records): a page led by a sortable property reads about as many rows as it returns', function () {
  this.timeout(120_000);
  // name and age sortable, as in examples/dataset-demo.yaml; score is not.
  const indexed = structuredClone(suiteDataset('postgres'));
  for (const name of ['name', 'age']) (indexed.schemas['suite.Person'].properties[name] as { sortable?: boolean }).sortable = true;
  const people = indexed.schemas['suite.Person'];
  const table = tableLayout(indexed, 'suite.Person', people);
  const ROWS = 20_000;
  const LIMIT = 101; // the engine's page of 100, plus one
  let driver: PostgresDriver;
  let pool: pg.Pool;

  before(async () => {
    const url = await freshDatabase();
    driver = new PostgresDriver({ logger: pino({ level: 'silent' }), settings: dataPlaneSettings({ DATABASE_URL: url }) });
    const report = await driver.prepare(indexed);
    expect(report.applied).to.include(`CREATE INDEX IF NOT EXISTS "suite_person_name_sort" ON "suite"."suite_person" ("name" COLLATE "C", "id" COLLATE "C")`);
    expect(report.applied).to.include(`CREATE INDEX IF NOT EXISTS "suite_person_id_sort" ON "suite"."suite_person" ("id" COLLATE "C")`);
    pool = new pg.Pool({ connectionString: url, max: 1 });
    // Unique names but one in 200 null; ages 20-69, so `age >= 30` keeps four in five.
    await pool.query(
      `INSERT INTO ${table.table} (id, version, created_at, updated_at, name, age)
       SELECT 'p' || i, 1, now(), now(), CASE WHEN i % 200 = 0 THEN NULL ELSE 'Person ' || lpad(((i * 7919) % $1)::text, 6, '0') END, 20 + i % 50
       FROM generate_series(1, $1) AS i`,
      [ROWS],
    );
    await pool.query(`ANALYZE ${table.table}`);
  });
  after(async () => {
    await pool?.end();
    await driver?.close();
  });

  interface PlanNode {
    'Node Type': string;
    'Index Name'?: string;
    'Actual Rows': number;
    'Actual Loops': number;
    'Rows Removed by Filter'?: number;
    Plans?: PlanNode[];
  }
  const nodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodes)];

  /** The plan's scans, and the table rows they read (returned or filtered out). */
  async function explain(sortText: string, position: 'first' | number | 'a null'): Promise<{ scans: PlanNode[]; rowsRead: number; returned: number }> {
    const sort = compileSort(sortText, people);
    const filter = compileFilter('age >= 30', people);
    let after: unknown[] | undefined;
    if (position !== 'first') {
      // The keyset position of the row at that place in the sort's order (or of some record without a name).
      const where = position === 'a null' ? 'WHERE name IS NULL AND age >= 30' : 'WHERE age >= 30';
      const at = await pool.query({ text: `SELECT ${sort.map((k) => (k.field.system ? k.field.system : k.field.path.join('_'))).join(', ')} FROM ${table.table} ${where} ORDER BY ${orderBySql(table, sort)} OFFSET $1 LIMIT 1`, values: [position === 'a null' ? 3 : position], rowMode: 'array' });
      after = at.rows[0];
    }
    const statement = listSql(table, { filter, sort, limit: LIMIT, after });
    const { rows } = await pool.query({ text: `EXPLAIN (ANALYZE, FORMAT JSON) ${statement.text}`, values: statement.values });
    const plan = (rows[0]['QUERY PLAN'] as [{ Plan: PlanNode }])[0].Plan;
    const scans = nodes(plan).filter((n) => /Scan/.test(n['Node Type']) && n['Node Type'] !== 'Subquery Scan'); // the ones reading the table
    const rowsRead = scans.reduce((sum, n) => sum + (n['Actual Rows'] + (n['Rows Removed by Filter'] ?? 0)) * n['Actual Loops'], 0);
    return { scans, rowsRead, returned: plan['Actual Rows'] };
  }

  for (const sortText of ['name', 'name:desc', 'name:first', 'name:desc:last', 'age:desc,name']) {
    for (const position of ['first', 1_000, 10_000, 'a null'] as const) {
      it(`sort ${sortText}, filter age >= 30, page at ${position === 'first' ? 'the start' : position === 'a null' ? 'a record without a name' : `row ${position}`}: index scans only, a few pages' worth of rows read`, async () => {
        const { scans, rowsRead, returned } = await explain(sortText, position);
        const lead = sortText.startsWith('age') ? 'suite_person_age_sort' : 'suite_person_name_sort';
        // Index scans, or for a small range (the nulls) a bitmap of the same index and a sort of that range.
        const shape = JSON.stringify(scans.map((s) => [s['Node Type'], s['Index Name']]));
        expect(scans.every((s) => s['Index Name'] === lead || s['Node Type'] === 'Bitmap Heap Scan'), shape).to.equal(true);
        expect(scans.some((s) => s['Node Type'] === 'Index Scan'), shape).to.equal(true);
        expect(returned).to.equal(LIMIT);
        // Names are unique, so ties are single rows; ages tie in groups of 400, which an index on (age, id) reads whole.
        expect(rowsRead).to.be.at.most(sortText.startsWith('age') ? 2_000 : 4 * LIMIT);
      });
    }
  }

  it('sort id (the default): an index scan from the position, whatever the primary key collation', async () => {
    const { scans, rowsRead } = await explain('id', 12_345);
    expect(scans.map((s) => s['Index Name'])).to.deep.equal(['suite_person_id_sort']);
    expect(rowsRead).to.be.at.most(2 * LIMIT);
  });

  it('a sort led by a property that is not sortable reads every row (documented)', async () => {
    const statement = listSql(table, { filter: compileFilter('age >= 30', people), sort: compileSort('score', people), limit: LIMIT, after: [0.5, 'p1'] });
    const { rows } = await pool.query({ text: `EXPLAIN (FORMAT JSON) ${statement.text}`, values: statement.values });
    expect(JSON.stringify(rows[0]['QUERY PLAN'])).to.match(/"Sort Key"/);
  });

  it('a second prepare creates no index again', async () => {
    const again = await driver.prepare(indexed);
    expect(again.applied.filter((s) => s.includes('INDEX'))).to.deep.equal([]);
  });
});
