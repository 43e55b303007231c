/** DynamoDB-specific behaviour on DynamoDB Local: concurrency, item and transaction limits, list bounds and paging, outages. */
import { expect } from 'chai';
import { createServer } from 'node:net';
import pino from 'pino';
import { compileFilter } from '../../../../model/filter.js';
import { compareRecords, compileSort, type SortKey } from '../../../../model/sort.js';
import { fieldValue, matchesFilter } from '../../../../model/filter.js';
import type { DatasetConfig } from '../../../../model/types.js';
import { suiteDataset } from '../../../test-support/driver-suite.js';
import type { OpResult, StoredRecord, WriteOp } from '../../engine/contract.js';
import { StoreError } from '../../engine/store-outcomes.js';
import { dynamoDbUnderTest } from '../../../test-support/dynamodb.js';
import { DynamoDbDriver, MAX_ATOMIC_ACTIONS } from './driver.js';
import { dataPlaneSettings } from '../../../../model/settings/dataplane.js';

const ok = (r: OpResult) => {
  if (!r.ok) throw new Error(`expected success, got ${JSON.stringify(r.failure)}`);
  return r.record;
};

describe('DynamoDB driver: limits, concurrency and paging on DynamoDB Local', function () {
  this.timeout(120_000);
  let driver: DynamoDbDriver;
  let dataset: DatasetConfig;
  const company = 'suite.Company';

  before(async () => {
    const t = await dynamoDbUnderTest(1100);
    driver = t.driver;
    dataset = suiteDataset('dynamodb', t.location);
    expect((await driver.prepare(dataset)).applied).to.have.length(4);
    expect((await driver.prepare(dataset)).applied, 'tables exist: nothing to do').to.deep.equal([]);
  });
  after(() => driver?.close());

  it('concurrent updates of one record never lose a version: 20 merges at once give versions 2..21, each in the history', async () => {
    ok((await driver.write(dataset, [{ op: 'create', schema: company, id: 'race', data: { name: 'v1' } }], 'QUORUM'))[0]);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => driver.write(dataset, [{ op: 'update', schema: company, id: 'race', data: { name: `w${i}` }, merge: true }], 'QUORUM')),
    );
    const versions = results.map(([r]) => ok(r).version).sort((a, b) => a - b);
    expect(versions).to.deep.equal(Array.from({ length: 20 }, (_, i) => i + 2));
    const names = new Set<unknown>();
    for (let v = 2; v <= 21; v++) names.add((await driver.read(dataset, { schema: company, id: 'race', version: v }))?.data.name);
    expect(names.size, 'every writer\'s value is one version').to.equal(20);
    expect((await driver.read(dataset, { schema: company, id: 'race' }))?.version).to.equal(21);
  });

  it('concurrent creates of one id: exactly one wins, the others are exists', async () => {
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => driver.write(dataset, [{ op: 'create', schema: company, id: 'one-id', data: { name: `c${i}` } }], 'EVENTUAL')));
    const outcomes = results.map(([r]) => (r.ok ? 'ok' : r.failure.kind)).sort();
    expect(outcomes).to.deep.equal(['exists', 'exists', 'exists', 'exists', 'exists', 'exists', 'exists', 'ok']);
  });

  it(`an atomic write of ${MAX_ATOMIC_ACTIONS} actions (100 items with their history) commits whole`, async () => {
    const ops: WriteOp[] = Array.from({ length: MAX_ATOMIC_ACTIONS }, (_, i) => ({ op: 'create', schema: company, id: `bulk-${i}`, data: { name: `b${i}` } }));
    const results = await driver.write(dataset, ops, 'ATOMIC_ALL');
    expect(results.every((r) => r.ok)).to.equal(true);
    expect(await driver.readMany(dataset, company, ops.map((o) => o.id))).to.have.length(MAX_ATOMIC_ACTIONS);
  });

  it('a record over 400 KB is too-large, names the record, and nothing of its write is stored', async () => {
    const big = 'x'.repeat(410 * 1024);
    const [alone] = await driver.write(dataset, [{ op: 'create', schema: company, id: 'huge', data: { name: big } }], 'QUORUM');
    expect(!alone.ok && alone.failure).to.deep.include({ kind: 'too-large', schema: company, id: 'huge' });
    const results = await driver.write(
      dataset,
      [
        { op: 'create', schema: company, id: 'small-with-huge', data: { name: 'fine' } },
        { op: 'create', schema: company, id: 'huge', data: { name: big } },
      ],
      'ATOMIC',
    );
    expect(results.map((r) => (r.ok ? 'ok' : r.failure.kind))).to.deep.equal(['aborted', 'too-large']);
    expect(await driver.read(dataset, { schema: company, id: 'huge' })).to.equal(undefined);
    expect(await driver.read(dataset, { schema: company, id: 'small-with-huge' })).to.equal(undefined);
    // Just under the limit is stored.
    ok((await driver.write(dataset, [{ op: 'create', schema: company, id: 'large', data: { name: 'y'.repeat(390 * 1024) } }], 'QUORUM'))[0]);
  });

  it('numbers outside DynamoDB\'s range and lone surrogates are invalid values, not store errors', async () => {
    const outcomes = await driver.write(
      dataset,
      [
        { op: 'create', schema: 'suite.Person', id: 'big-number', data: { score: 1e200 } },
        { op: 'create', schema: 'suite.Person', id: 'tiny-number', data: { score: 1e-200 } },
        { op: 'create', schema: 'suite.Person', id: 'lone-surrogate', data: { name: 'a\ud800b' } },
        { op: 'create', schema: 'suite.Person', id: 'fine-number', data: { score: 1e100 } },
      ],
      'EVENTUAL',
    );
    expect(outcomes.map((r) => (r.ok ? 'ok' : `${r.failure.kind}:${(r.failure as { reason?: string }).reason}`))).to.deep.equal(['invalid-value:range', 'invalid-value:range', 'invalid-value:text', 'ok']);
    expect((await driver.read(dataset, { schema: 'suite.Person', id: 'fine-number' }))?.data).to.deep.equal({ score: 1e100 });
  });

  describe('lists over 1,000+ records', () => {
    const item = 'suite.Person';
    const written: { id: string; version: number; data: Record<string, unknown> }[] = [];
    before(async () => {
      for (let i = 0; i < 1200; i += MAX_ATOMIC_ACTIONS) {
        const ops: WriteOp[] = Array.from({ length: Math.min(MAX_ATOMIC_ACTIONS, 1200 - i) }, (_, j) => {
          const n = i + j;
          return { op: 'create', schema: item, id: `p${String(n).padStart(4, '0')}`, data: { name: `n${n % 37}`, age: n % 90, ...(n % 7 ? { score: n / 10 } : {}) } };
        });
        for (const r of await driver.write(dataset, ops, 'ATOMIC')) written.push(ok(r));
      }
    });

    async function pageThrough(filter: string | undefined, sort: string | undefined, limit: number): Promise<StoredRecord[]> {
      const def = dataset.schemas[item];
      const keys: SortKey[] = compileSort(sort, def);
      const query = { filter: filter ? compileFilter(filter, def) : undefined, sort: keys, limit };
      const all: StoredRecord[] = [];
      let after: unknown[] | undefined;
      for (;;) {
        const page = await driver.list(dataset, item, { ...query, after });
        all.push(...page);
        if (page.length < limit) return all;
        after = keys.map((k) => fieldValue(page[page.length - 1], k.field));
      }
    }

    it('pages of 100 by a sort key with ties and nulls: each record once, in the reference order', async () => {
      const def = dataset.schemas[item];
      const expected = written
        .filter((r) => matchesFilter(compileFilter('age >= 10', def), r))
        .sort((a, b) => compareRecords(compileSort('score:desc,name', def), a, b))
        .map((r) => r.id);
      const ids = (await pageThrough('age >= 10', 'score:desc,name', 100)).map((r) => r.id);
      expect(ids.length).to.equal(1060);
      expect(ids).to.deep.equal(expected);
    });

    it('past the in-memory sort bound: sort-too-large, never a partial page', async () => {
      try {
        await driver.list(dataset, item, { sort: compileSort('name', dataset.schemas[item]), limit: 10 });
        expect.fail('expected sort-too-large');
      } catch (err) {
        expect(err).to.be.instanceOf(StoreError);
        expect((err as StoreError).failure).to.deep.include({ kind: 'sort-too-large', schema: item, bound: 1100 });
      }
    });
  });

  it('a store that cannot be reached is unavailable: thrown for reads and atomic writes, reported per action otherwise', async () => {
    const port = await new Promise<number>((done) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const { port } = s.address() as { port: number };
        s.close(() => done(port));
      });
    });
    const down = new DynamoDbDriver({ logger: pino({ level: 'silent' }), settings: dataPlaneSettings({ AWS_ACCESS_KEY_ID: 'x', AWS_SECRET_ACCESS_KEY: 'y' }) });
    const gone = { ...dataset, location: { ...dataset.location, endpoint: `http://127.0.0.1:${port}`, credentialsSecretRef: undefined } };
    try {
      const kind = async (run: () => Promise<unknown>) => run().then(() => 'ok', (err) => (err instanceof StoreError ? err.failure.kind : String(err)));
      expect(await kind(() => down.read(gone, { schema: company, id: 'x' }))).to.equal('unavailable');
      expect(await kind(() => down.write(gone, [{ op: 'create', schema: company, id: 'x', data: {} }], 'ATOMIC'))).to.equal('unavailable');
      const [r] = await down.write(gone, [{ op: 'create', schema: company, id: 'x', data: {} }], 'QUORUM');
      expect(!r.ok && r.failure.kind).to.equal('unavailable');
      expect(await kind(() => down.ping(gone))).to.equal('unavailable');
    } finally {
      await down.close();
    }
  });

  it('a credentials Secret that is not mounted is unavailable, naming the file', async () => {
    const missing = { ...dataset, location: { ...dataset.location, credentialsSecretRef: { name: 'no-such-secret' } } };
    try {
      await driver.read(missing, { schema: company, id: 'x' });
      expect.fail('expected unavailable');
    } catch (err) {
      expect((err as StoreError).failure?.kind).to.equal('unavailable');
      expect((err as Error).message).to.match(/no-such-secret.*not mounted.*accessKeyId/);
    }
  });

  it('a dataset whose tables are not prepared is not-prepared', async () => {
    const other = { ...dataset, id: 'never-prepared' };
    try {
      await driver.read(other, { schema: company, id: 'x' });
      expect.fail('expected not-prepared');
    } catch (err) {
      expect((err as StoreError).failure?.kind).to.equal('not-prepared');
    }
  });
});
