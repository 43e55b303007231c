/**
 * The behavioural suite every location driver passes: the LocationDriver contract the record
 * engine relies on, independent of the store. Call it once per driver with the capabilities the
 * driver declares (each section runs where they say it applies, and the suite checks the driver
 * declares exactly these) and a factory that gives a driver on a fresh store and its dataset.
 */
import { expect } from 'chai';
import { renderDatasetConfig } from '../../model/render.js';
import { compileSort } from '../../model/sort.js';
import type { Consistency, DatasetConfig, LocationKind } from '../../model/types.js';
import type { DriverCapabilities, LocationDriver, OpResult, WriteLevel } from '../src/engine/contract.js';
import { describeChangeFeedSection } from './driver-suite-changes.js';
import { describeListSection } from './driver-suite-lists.js';

export interface DriverUnderTest {
  driver: LocationDriver;
  dataset: DatasetConfig;
  close(): Promise<void>;
}

export function suiteDataset(kind: LocationKind, extra: Partial<DatasetConfig['location']> = {}): DatasetConfig {
  return renderDatasetConfig({
    apiVersion: 'dataaccess.dev/v1alpha1',
    kind: 'Dataset',
    metadata: { name: 'suite', generation: 1 },
    spec: {
      environment: 'local',
      location: { kind, ...extra },
      schemas: {
        'suite.Company': { properties: { name: { type: 'string' } } },
        'suite.Person': {
          properties: {
            name: { type: 'string' },
            age: { type: 'integer' },
            score: { type: 'number' },
            active: { type: 'boolean' },
            born: { type: 'date' },
            seen: { type: 'timestamp' },
            address: { type: 'object', properties: { street: { type: 'string' }, postcode: { type: 'string' } } },
            employer: { type: 'link', schema: 'suite.Company' },
          },
        },
      },
    },
  });
}

const ok = (r: OpResult) => {
  if (!r.ok) throw new Error(`expected success, got ${JSON.stringify(r.failure)}`);
  return r.record;
};

export function describeLocationDriver(name: string, capabilities: DriverCapabilities, start: () => Promise<DriverUnderTest>): void {
  const offers = (levels: readonly WriteLevel[]) => levels.filter((level) => capabilities.consistency.includes(level));
  describe(`location driver behaviour: ${name}`, function () {
    this.timeout(60000);
    let t: DriverUnderTest;
    let n = 0;
    const id = (prefix: string) => `${prefix}-${++n}`;
    const write = (ops: Parameters<LocationDriver['write']>[1], consistency: Exclude<Consistency, 'ASYNC'> = 'ATOMIC') => t.driver.write(t.dataset, ops, consistency);

    before(async () => {
      t = await start();
      const report = await t.driver.prepare(t.dataset);
      expect(report.refused).to.deep.equal([]);
    });
    after(async () => t?.close());

    it('declares the capabilities this suite runs against', () => {
      expect(t.driver.capabilities).to.deep.equal(capabilities);
      expect(capabilities.consistency, 'every driver offers QUORUM (ASYNC writes are written at QUORUM)').to.include('QUORUM');
    });

    it('prepares idempotently', async () => {
      expect((await t.driver.prepare(t.dataset)).refused).to.deep.equal([]);
    });

    it('creates at version 1 and reads every property type back as written', async () => {
      const data = {
        name: 'Ada',
        age: 36,
        score: 9.5,
        active: true,
        born: '1815-12-10',
        seen: '2024-05-01T10:30:00.000Z',
        address: { street: '1 Main St', postcode: 'N1' },
        employer: { id: 'c-1' },
      };
      const pid = id('p');
      const created = ok((await write([{ op: 'create', schema: 'suite.Person', id: pid, data }]))[0]);
      expect(created).to.include({ id: pid, version: 1 });
      const read = await t.driver.read(t.dataset, { schema: 'suite.Person', id: pid });
      expect(read?.version).to.equal(1);
      expect({ ...read!.data, seen: new Date(read!.data.seen as string).toISOString() }).to.deep.equal(data);
    });

    it('leaves unset properties out, and reads undefined for a missing id', async () => {
      const pid = id('p');
      ok((await write([{ op: 'create', schema: 'suite.Person', id: pid, data: { name: 'Only' } }]))[0]);
      expect((await t.driver.read(t.dataset, { schema: 'suite.Person', id: pid }))?.data).to.deep.equal({ name: 'Only' });
      expect(await t.driver.read(t.dataset, { schema: 'suite.Person', id: 'no-such-id' })).to.equal(undefined);
    });

    it('answers 409 RECORD_EXISTS for a create with a taken id', async () => {
      const cid = id('c');
      ok((await write([{ op: 'create', schema: 'suite.Company', id: cid, data: { name: 'A' } }]))[0]);
      const [again] = await write([{ op: 'create', schema: 'suite.Company', id: cid, data: { name: 'B' } }]);
      expect(again.ok).to.equal(false);
            expect(!again.ok && again.failure.kind).to.equal('exists');
    });

    it('replaces on update, merges on merge, increments the version, and keeps each version', async () => {
      const pid = id('p');
      ok((await write([{ op: 'create', schema: 'suite.Person', id: pid, data: { name: 'V1', age: 1, address: { street: 'S', postcode: 'P' } } }]))[0]);
      const merged = ok((await write([{ op: 'update', schema: 'suite.Person', id: pid, data: { age: 2, address: { postcode: 'Q' } }, merge: true }]))[0]);
      expect(merged.version).to.equal(2);
      expect(merged.data).to.deep.equal({ name: 'V1', age: 2, address: { street: 'S', postcode: 'Q' } });
      const replaced = ok((await write([{ op: 'update', schema: 'suite.Person', id: pid, data: { name: 'V3' }, merge: false }]))[0]);
      expect(replaced.version).to.equal(3);
      expect(replaced.data).to.deep.equal({ name: 'V3' });
      expect((await t.driver.read(t.dataset, { schema: 'suite.Person', id: pid, version: 1 }))?.data).to.deep.equal({ name: 'V1', age: 1, address: { street: 'S', postcode: 'P' } });
      expect((await t.driver.read(t.dataset, { schema: 'suite.Person', id: pid, version: 2 }))?.version).to.equal(2);
      expect(await t.driver.read(t.dataset, { schema: 'suite.Person', id: pid, version: 4 })).to.equal(undefined);
    });

    it('answers 404 RECORD_NOT_FOUND for an update or delete of a missing record', async () => {
      for (const op of [
        { op: 'update' as const, schema: 'suite.Person', id: 'missing', data: { name: 'x' }, merge: false },
        { op: 'delete' as const, schema: 'suite.Person', id: 'missing' },
      ]) {
        const [r] = await write([op]);
        expect(!r.ok && r.failure.kind).to.equal('not-found');
      }
    });

    describe('deletes keep their history (tombstones)', () => {
      const company = 'suite.Company';
      const history = async (cid: string, upTo: number) => {
        const versions = [];
        for (let v = 1; v <= upTo; v++) {
          const r = await t.driver.read(t.dataset, { schema: company, id: cid, version: v });
          versions.push(r === undefined ? 'none' : r.deleted ? `tombstone ${r.version}` : `${r.version} ${r.data.name}`);
        }
        return versions;
      };

      it('a delete answers the tombstone: the next version, deleted, no data', async () => {
        const cid = id('c');
        ok((await write([{ op: 'create', schema: company, id: cid, data: { name: 'One' } }]))[0]);
        ok((await write([{ op: 'update', schema: company, id: cid, data: { name: 'Two' }, merge: false }]))[0]);
        const [deleted] = await write([{ op: 'delete', schema: company, id: cid }]);
        expect(deleted.ok && deleted.deleted).to.equal(true);
        expect(ok(deleted)).to.deep.include({ id: cid, version: 3, data: {} });
      });

      it('the record reads as missing; earlier versions stay readable; the tombstone reads as deleted', async () => {
        const cid = id('c');
        ok((await write([{ op: 'create', schema: company, id: cid, data: { name: 'One' } }]))[0]);
        ok((await write([{ op: 'update', schema: company, id: cid, data: { name: 'Two' }, merge: true }]))[0]);
        ok((await write([{ op: 'delete', schema: company, id: cid }]))[0]);
        expect(await t.driver.read(t.dataset, { schema: company, id: cid })).to.equal(undefined);
        expect(await t.driver.readMany(t.dataset, company, [cid])).to.deep.equal([]);
        const one = await t.driver.read(t.dataset, { schema: company, id: cid, version: 1 });
        expect(one?.data).to.deep.equal({ name: 'One' });
        expect(one?.deleted).to.equal(undefined);
        const tombstone = await t.driver.read(t.dataset, { schema: company, id: cid, version: 3 });
        expect(tombstone).to.deep.include({ id: cid, version: 3, deleted: true, data: {} });
        expect(await history(cid, 4)).to.deep.equal(['1 One', '2 Two', 'tombstone 3', 'none']);
      });

      it('an update or a second delete of a deleted record is 404 RECORD_NOT_FOUND and writes nothing', async () => {
        const cid = id('c');
        ok((await write([{ op: 'create', schema: company, id: cid, data: { name: 'One' } }]))[0]);
        ok((await write([{ op: 'delete', schema: company, id: cid }]))[0]);
        for (const op of [
          { op: 'update' as const, schema: company, id: cid, data: { name: 'x' }, merge: true },
          { op: 'delete' as const, schema: company, id: cid },
        ]) {
          const [r] = await write([op]);
          expect(!r.ok && r.failure.kind).to.equal('not-found');
        }
        expect(await history(cid, 3)).to.deep.equal(['1 One', 'tombstone 2', 'none']);
      });

      it('creating the id again continues its versions after the tombstone; each delete adds one', async () => {
        const cid = id('c');
        ok((await write([{ op: 'create', schema: company, id: cid, data: { name: 'First' } }]))[0]);
        ok((await write([{ op: 'delete', schema: company, id: cid }]))[0]);
        const again = ok((await write([{ op: 'create', schema: company, id: cid, data: { name: 'Again' } }]))[0]);
        expect(again.version).to.equal(3);
        expect((await t.driver.read(t.dataset, { schema: company, id: cid }))?.data).to.deep.equal({ name: 'Again' });
        expect(ok((await write([{ op: 'update', schema: company, id: cid, data: { name: 'Later' }, merge: true }]))[0]).version).to.equal(4);
        expect(ok((await write([{ op: 'delete', schema: company, id: cid }]))[0]).version).to.equal(5);
        expect(await history(cid, 6)).to.deep.equal(['1 First', 'tombstone 2', '3 Again', '4 Later', 'tombstone 5', 'none']);
      });

      it('a delete in an atomic write that fails leaves the record and writes no tombstone', async () => {
        const cid = id('c');
        const taken = id('c');
        ok((await write([{ op: 'create', schema: company, id: cid, data: { name: 'Kept' } }]))[0]);
        ok((await write([{ op: 'create', schema: company, id: taken, data: { name: 'T' } }]))[0]);
        const results = await write([
          { op: 'delete', schema: company, id: cid },
          { op: 'create', schema: company, id: taken, data: { name: 'Clash' } },
        ]);
        expect(results.map((r) => (r.ok ? 'ok' : r.failure.kind))).to.deep.equal(['aborted', 'exists']);
        expect((await t.driver.read(t.dataset, { schema: company, id: cid }))?.version).to.equal(1);
        expect(await history(cid, 2)).to.deep.equal(['1 Kept', 'none']);
      });

      it('a delete and a create of the id in one atomic write: the tombstone, then the next version', async () => {
        const cid = id('c');
        ok((await write([{ op: 'create', schema: company, id: cid, data: { name: 'Old' } }]))[0]);
        const results = await write([
          { op: 'delete', schema: company, id: cid },
          { op: 'create', schema: company, id: cid, data: { name: 'New' } },
        ]);
        expect(results.map((r) => ok(r).version)).to.deep.equal([2, 3]);
        expect(await history(cid, 3)).to.deep.equal(['1 Old', 'tombstone 2', '3 New']);
      });

      it('lists leave deleted records out', async function () {
        if (!t.driver.list) this.skip();
        const gone = id('c');
        const kept = id('c');
        ok((await write([{ op: 'create', schema: company, id: gone, data: { name: 'Gone' } }]))[0]);
        ok((await write([{ op: 'create', schema: company, id: kept, data: { name: 'Kept' } }]))[0]);
        ok((await write([{ op: 'delete', schema: company, id: gone }]))[0]);
        const page = await t.driver.list!(t.dataset, company, { sort: compileSort(undefined, t.dataset.schemas[company]), limit: 1000 });
        const ids = page.map((r) => r.id);
        expect(ids).to.include(kept);
        expect(ids).not.to.include(gone);
      });
    });

    it('reads many records by id, skipping missing ones', async () => {
      const a = id('c');
      const b = id('c');
      await write([
        { op: 'create', schema: 'suite.Company', id: a, data: { name: 'A' } },
        { op: 'create', schema: 'suite.Company', id: b, data: { name: 'B' } },
      ]);
      const many = await t.driver.readMany(t.dataset, 'suite.Company', [a, b, 'nope']);
      expect(many.map((r) => r.id).sort()).to.deep.equal([a, b].sort());
    });

    /** A fresh create and a create of a taken id, in one write at `consistency`. */
    const freshAndClash = async (consistency: Exclude<Consistency, 'ASYNC'>) => {
      const taken = id('c');
      const fresh = id('c');
      ok((await write([{ op: 'create', schema: 'suite.Company', id: taken, data: { name: 'T' } }]))[0]);
      const results = await write(
        [
          { op: 'create', schema: 'suite.Company', id: fresh, data: { name: 'F' } },
          { op: 'create', schema: 'suite.Company', id: taken, data: { name: 'Clash' } },
        ],
        consistency,
      );
      return { outcomes: results.map((r) => (r.ok ? 'ok' : r.failure.kind)), stored: await t.driver.read(t.dataset, { schema: 'suite.Company', id: fresh }) };
    };

    for (const consistency of offers(['ATOMIC', 'ATOMIC_ALL'])) {
      it(`writes nothing under ${consistency} when one op fails`, async () => {
        const { outcomes, stored } = await freshAndClash(consistency);
        expect(outcomes).to.deep.equal(['aborted', 'exists']);
        expect(stored).to.equal(undefined);
      });

      it(`writes nothing under ${consistency} when an update names a missing id`, async () => {
        const fresh = id('c');
        const results = await write(
          [
            { op: 'create', schema: 'suite.Company', id: fresh, data: { name: 'F' } },
            { op: 'update', schema: 'suite.Company', id: id('c'), data: { name: 'Nobody' }, merge: false },
          ],
          consistency,
        );
        expect(results.map((r) => (r.ok ? 'ok' : r.failure.kind))).to.deep.equal(['aborted', 'not-found']);
        expect(await t.driver.read(t.dataset, { schema: 'suite.Company', id: fresh })).to.equal(undefined);
      });
    }

    for (const consistency of offers(['QUORUM', 'EVENTUAL'])) {
      it(`commits the other ops under ${consistency} and reports each outcome`, async () => {
        const { outcomes, stored } = await freshAndClash(consistency);
        expect(outcomes).to.deep.equal(['ok', 'exists']);
        expect(stored?.data).to.deep.equal({ name: 'F' });
      });
    }

    it('purges the stored data (deletionPolicy: Delete) idempotently; a new prepare starts empty', async function () {
      if (!t.driver.purge) this.skip();
      const cid = id('c');
      ok((await write([{ op: 'create', schema: 'suite.Company', id: cid, data: { name: 'Doomed' } }]))[0]);
      await t.driver.purge!(t.dataset);
      await t.driver.purge!(t.dataset);
      expect((await t.driver.prepare(t.dataset)).refused).to.deep.equal([]);
      expect(await t.driver.read(t.dataset, { schema: 'suite.Company', id: cid })).to.equal(undefined);
    });

    if (capabilities.list) describeListSection(() => t);
    if (capabilities.changeFeed) {
      it('has a change feed exactly when it declares one', () => expect(t.driver.changes).to.not.equal(undefined));
      describeChangeFeedSection(() => t);
    } else {
      it('has no change feed when it declares none', () => expect(t.driver.changes).to.equal(undefined));
    }
  });
}
