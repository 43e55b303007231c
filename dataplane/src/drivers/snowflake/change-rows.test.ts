/**
 * The change rows of the warehouse kinds commit with their records (docs/warehouse.md, "Change
 * feed"): a write whose change row cannot be written is not written at all, and concurrent writers
 * of one record leave its changes in version order whatever numbering runs between them.
 */
import { expect } from 'chai';
import pino from 'pino';
import { StoreError, type RecordChange, type WriteLevel } from '../../engine/contract.js';
import { suiteDataset } from '../../../test-support/driver-suite.js';
import { connectSdk, destroy, exec } from '../../../../e2e/peers/snowflake/sdk-client.js';
import { databaseSchemaFor } from '../sql/table-shape.js';
import { changesTable } from './change-log.js';
import { warehouseSqlDialect } from './dialect.js';
import { SnowflakeDriver } from './driver.js';
import { warehouseDriverUnderTest } from '../../../test-support/snowflake-peer.js';
import { ICEBERG_FORMAT, SNOWFLAKE_FORMAT, type TableFormat } from './table-format.js';
import { dataPlaneSettings } from '../../../../model/settings/dataplane.js';

for (const format of [SNOWFLAKE_FORMAT, ICEBERG_FORMAT] as TableFormat[]) {
  describe(`warehouse change rows commit with their records (${format.kind}, against the test peer)`, function () {
    this.timeout(120_000);
    const drivers: SnowflakeDriver[] = [];
    let dataset: ReturnType<typeof suiteDataset>;
    let peer: Awaited<ReturnType<typeof warehouseDriverUnderTest>>['peer'];

    /** Every change of the dataset after position 0, numbered by the first driver's feed. */
    const allChanges = async (): Promise<RecordChange[]> => {
      const out: RecordChange[] = [];
      let after = '0';
      for (;;) {
        const batch = await drivers[0].changes.readChanges(dataset, after, 500);
        out.push(...batch.changes);
        if (!batch.changes.length) return out;
        after = batch.changes.at(-1)!.cursor;
      }
    };

    before(async () => {
      const first = await warehouseDriverUnderTest(format);
      peer = first.peer;
      dataset = suiteDataset(format.kind, { ...first.location, externalVolume: 'V', baseLocation: 'b' });
      drivers.push(first.driver);
      // Separate drivers: separate sessions, as separate replicas would have.
      for (let i = 0; i < 3; i++) drivers.push(new SnowflakeDriver({ logger: pino({ level: 'silent' }), settings: dataPlaneSettings({ DAS_SECRETS_DIR: first.secrets.dir }), format }));
      await first.driver.prepare(dataset);
    });
    after(async () => Promise.all(drivers.map((d) => d.close())));

    for (const level of (format.transactions ? ['QUORUM', 'EVENTUAL', 'ATOMIC'] : ['QUORUM', 'ATOMIC']) as WriteLevel[]) {
      it(`${level}: a write whose change row cannot be appended is not written either`, async () => {
        const id = `orphan-${level}`;
        const sdk = await connectSdk(peer, { database: String(dataset.location.database) });
        try {
          // The change log goes away under the writer (as if the statement after the MERGEs failed).
          await exec(sdk, `DROP TABLE ${changesTable(databaseSchemaFor(dataset, warehouseSqlDialect(format)))}`);
          const [result] = await drivers[1].write(dataset, [{ op: 'create', schema: 'suite.Person', id, data: { name: 'orphan' } }], level);
          expect(result.ok, 'the write reports its failure').to.equal(false);
        } finally {
          await destroy(sdk);
          await drivers[0].prepare(dataset); // the change log made again
        }
        expect(await drivers[0].read(dataset, { schema: 'suite.Person', id }), 'no record without its change').to.equal(undefined);
        expect(await drivers[0].read(dataset, { schema: 'suite.Person', id, version: 1 }), 'no history either').to.equal(undefined);
        // Written again once the change log is back: record and change together.
        expect((await drivers[1].write(dataset, [{ op: 'create', schema: 'suite.Person', id, data: { name: 'orphan' } }], level))[0].ok).to.equal(true);
        const mine = (await allChanges()).filter((c) => c.id === id);
        expect(mine.map((c) => [c.version, c.op])).to.deep.equal([[1, 'CREATE']]);
      });
    }

    it('four writers updating one record while the feed numbers: each version once, in version order', async () => {
      const id = 'contended';
      expect((await drivers[0].write(dataset, [{ op: 'create', schema: 'suite.Person', id, data: { age: 0 } }], 'QUORUM'))[0].ok).to.equal(true);
      let writing = true;
      const reader = (async () => {
        // Numbering between the writers' commits, as a subscribed replica does.
        while (writing) {
          await allChanges();
          await new Promise((r) => setTimeout(r, 5));
        }
      })();
      await Promise.all(
        drivers.map(async (driver, w) => {
          for (let i = 0; i < 6; i++) await driver.write(dataset, [{ op: 'update', schema: 'suite.Person', id, data: { age: w * 10 + i }, merge: true }], 'QUORUM');
        }),
      );
      writing = false;
      await reader;
      const current = await drivers[0].read(dataset, { schema: 'suite.Person', id });
      const versions = (await allChanges()).filter((c) => c.id === id).map((c) => c.version);
      expect(versions, 'every version once, in order').to.deep.equal(Array.from({ length: current!.version }, (_, i) => i + 1));
      expect(current!.version, 'most updates got through').to.be.at.least(12);
    });
  });
}

describe('the warehouse change feed has sessions of its own (against the test peer)', function () {
  this.timeout(60_000);

  it('a poll does not queue behind a write that holds the only write session', async () => {
    const under = await warehouseDriverUnderTest(SNOWFLAKE_FORMAT, { sessions: { maxPerPool: 1, acquireTimeoutMs: 30_000 } });
    const { driver, peer } = under;
    const dataset = suiteDataset('snowflake', under.location);
    const sdk = await connectSdk(peer, { database: String(dataset.location.database) });
    try {
      await driver.prepare(dataset);
      expect((await driver.write(dataset, [{ op: 'create', schema: 'suite.Person', id: 'p1', data: { age: 1 } }], 'QUORUM'))[0].ok).to.equal(true);
      // Another session holds the records table's lock: the next write waits for it, holding the pool's one session.
      const table = `"${databaseSchemaFor(dataset, warehouseSqlDialect(SNOWFLAKE_FORMAT))}"."SUITE_PERSON"`;
      await exec(sdk, 'BEGIN');
      await exec(sdk, `UPDATE ${table} SET "VERSION" = "VERSION" WHERE 1 = 0`);
      let written = false;
      const write = driver.write(dataset, [{ op: 'update', schema: 'suite.Person', id: 'p1', data: { age: 2 }, merge: true }], 'QUORUM').then((r) => ((written = true), r));
      await new Promise((r) => setTimeout(r, 300));
      expect(written, 'the write waits for the lock').to.equal(false);
      const batch = await driver.changes.readChanges(dataset, '0', 10);
      expect(batch.changes.map((c) => [c.id, c.version])).to.deep.equal([['p1', 1]]);
      expect(written, 'the poll answered while the write still waited').to.equal(false);
      await exec(sdk, 'COMMIT');
      expect((await write)[0].ok).to.equal(true);
    } finally {
      await destroy(sdk);
      await driver.close();
    }
  });
});

describe('a warehouse that stops answering between two tables of a QUORUM write (against the test peer)', function () {
  this.timeout(60_000);

  it('the table committed before it keeps its results; the table it stopped in reports unavailable', async () => {
    const under = await warehouseDriverUnderTest(SNOWFLAKE_FORMAT);
    const { driver } = under;
    const dataset = suiteDataset('snowflake', under.location);
    try {
      await driver.prepare(dataset);
      // The outage placed at the second table's BEGIN, at the driver's statement boundary: a cut
      // network connection cannot be timed to fall exactly between two tables' transactions.
      const exec = (driver as any).exec.bind(driver);
      let begins = 0;
      (driver as any).exec = (session: unknown, statement: unknown, ...rest: unknown[]) => {
        if (statement === 'BEGIN' && ++begins === 2) return Promise.reject(new StoreError({ kind: 'unavailable', detail: 'test: the warehouse stopped answering' }));
        return exec(session, statement, ...rest);
      };
      const results = await driver.write(
        dataset,
        [
          { op: 'create', schema: 'suite.Company', id: 'c1', data: { name: 'First' } },
          { op: 'create', schema: 'suite.Person', id: 'p1', data: { age: 1 } },
        ],
        'QUORUM',
      );
      (driver as any).exec = exec;
      expect(results.map((r) => (r.ok ? 'ok' : r.failure.kind))).to.deep.equal(['ok', 'unavailable']);
      expect((await driver.read(dataset, { schema: 'suite.Company', id: 'c1' }))?.version).to.equal(1);
      expect(await driver.read(dataset, { schema: 'suite.Person', id: 'p1' })).to.equal(undefined);
    } finally {
      await driver.close();
    }
  });
});
