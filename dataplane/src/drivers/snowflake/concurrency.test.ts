/**
 * Concurrent writers on the warehouse, where a write reads, plans and then MERGEs with a version
 * guard: a writer that lost the race sees counts that differ from its plan and plans again, so
 * no version is lost, none is written twice, and the history stays one line per version.
 */
import { expect } from 'chai';
import pino from 'pino';
import type { OpResult } from '../../engine/contract.js';
import { suiteDataset } from '../../../test-support/driver-suite.js';
import { SnowflakeDriver } from './driver.js';
import { warehouseDriverUnderTest } from '../../../test-support/snowflake-peer.js';
import { ICEBERG_FORMAT, SNOWFLAKE_FORMAT, type TableFormat } from './table-format.js';
import { dataPlaneSettings } from '../../../../model/settings/dataplane.js';

for (const [format, levels] of [
  [SNOWFLAKE_FORMAT, ['ATOMIC', 'QUORUM']],
  [ICEBERG_FORMAT, ['ATOMIC', 'QUORUM']],
] as [TableFormat, ('ATOMIC' | 'QUORUM')[]][]) {
  describe(`concurrent writers on one record (${format.kind}, against the test peer)`, function () {
    this.timeout(60_000);
    const drivers: SnowflakeDriver[] = [];
    let dataset: ReturnType<typeof suiteDataset>;

    before(async () => {
      const first = await warehouseDriverUnderTest(format);
      dataset = suiteDataset(format.kind, { ...first.location, externalVolume: 'V', baseLocation: 'b' });
      drivers.push(first.driver);
      // Separate drivers: separate sessions, as separate replicas would have.
      for (let i = 0; i < 3; i++) drivers.push(new SnowflakeDriver({ logger: pino({ level: 'silent' }), settings: dataPlaneSettings({ DAS_SECRETS_DIR: first.secrets.dir }), format }));
      await first.driver.prepare(dataset);
    });
    after(async () => Promise.all(drivers.map((d) => d.close())));

    for (const level of levels) {
      it(`${level}: four merges at once each get their own version, or are told they were not written`, async () => {
        const id = `hot-${level}`;
        expect((await drivers[0].write(dataset, [{ op: 'create', schema: 'suite.Person', id, data: { age: 0 } }], level))[0].ok).to.equal(true);
        const results: OpResult[] = (
          await Promise.all(drivers.map((driver, i) => driver.write(dataset, [{ op: 'update', schema: 'suite.Person', id, data: { name: `w${i}` }, merge: true }], level)))
        ).flat();
        const written = results.filter((r) => r.ok).map((r) => (r.ok ? r.record.version : 0));
        for (const r of results) if (!r.ok) expect(r.failure.kind).to.equal('aborted');
        expect(written.length, 'most writers get through on a retry').to.be.at.least(2);
        expect(new Set(written).size, 'no version twice').to.equal(written.length);
        expect([...written].sort()).to.deep.equal(Array.from({ length: written.length }, (_, i) => i + 2));
        const current = await drivers[0].read(dataset, { schema: 'suite.Person', id });
        expect(current?.version).to.equal(1 + written.length);
        for (let v = 1; v <= 1 + written.length; v++) expect((await drivers[0].read(dataset, { schema: 'suite.Person', id, version: v }))?.version, `version ${v}`).to.equal(v);
        expect(await drivers[0].read(dataset, { schema: 'suite.Person', id, version: 2 + written.length })).to.equal(undefined);
      });
    }
  });
}

describe('replicas preparing at once (against the test peer)', function () {
  this.timeout(60_000);

  it('a new property prepared by four replicas at once: each reports success, the column is added once', async () => {
    const first = await warehouseDriverUnderTest(SNOWFLAKE_FORMAT);
    const drivers = [first.driver, ...Array.from({ length: 3 }, () => new SnowflakeDriver({ logger: pino({ level: 'silent' }), settings: dataPlaneSettings({ DAS_SECRETS_DIR: first.secrets.dir }), format: SNOWFLAKE_FORMAT }))];
    try {
      const v1 = suiteDataset('snowflake', first.location);
      await first.driver.prepare(v1);
      // Every replica logged in already, so their v2 statements meet at the warehouse.
      await Promise.all(drivers.map((d) => d.prepare(v1)));
      const v2 = { ...v1, generation: 2, schemas: { ...v1.schemas, 'suite.Company': { properties: { name: { type: 'string' as const }, founded: { type: 'date' as const } } } } };
      const reports = await Promise.all(drivers.map((d) => d.prepare(v2)));
      for (const report of reports) expect(report.refused).to.deep.equal([]);
      expect((await first.driver.write(v2, [{ op: 'create', schema: 'suite.Company', id: 'c', data: { name: 'C', founded: '1999-12-31' } }], 'ATOMIC'))[0]).to.deep.include({ ok: true });
      expect((await first.driver.read(v2, { schema: 'suite.Company', id: 'c' }))?.data).to.deep.equal({ name: 'C', founded: '1999-12-31' });
    } finally {
      await Promise.all(drivers.map((d) => d.close()));
    }
  });
});
