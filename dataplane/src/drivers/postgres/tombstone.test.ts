/**
 * PostgreSQL specifics of tombstones (the behaviour itself is in the driver suite): the history
 * table's `deleted_at` column, added to databases made before it existed; its primary key; a
 * property that would map onto the column; the tagged read path.
 */
import { expect } from 'chai';
import pg from 'pg';
import pino from 'pino';
import { renderDatasetConfig } from '../../../../model/render.js';
import type { RecordSchemaDef } from '../../../../model/types.js';
import { freshDatabase } from '../../../test-support/postgres.js';
import { planSchemaChanges } from './ddl.js';
import { PostgresDriver } from './driver.js';
import { tableLayout } from './sql.js';
import { dataPlaneSettings } from '../../../../model/settings/dataplane.js';

const config = (person: RecordSchemaDef, generation = 1) =>
  renderDatasetConfig({
    apiVersion: 'dataaccess.dev/v1alpha1',
    kind: 'Dataset',
    metadata: { name: 'tomb', generation },
    spec: { environment: 'local', location: { kind: 'postgres' }, schemas: { 'tomb.Person': person } },
  });
const dataset = config({ properties: { name: { type: 'string' } } });

describe('postgres driver: tombstones in the history table', function () {
  this.timeout(60000);
  let url: string;
  let driver: PostgresDriver;
  let db: pg.Client;

  before(async () => {
    url = await freshDatabase();
    driver = new PostgresDriver({ logger: pino({ level: 'silent' }), settings: dataPlaneSettings({ DATABASE_URL: url }) });
    db = new pg.Client(url);
    await db.connect();
  });
  after(async () => {
    await db?.end();
    await driver?.close();
  });

  it('plans deleted_at for the history table only', () => {
    const layout = tableLayout(dataset, 'tomb.Person', dataset.schemas['tomb.Person']);
    const { statements } = planSchemaChanges([layout], []);
    const [live, history] = statements.filter((s) => s.startsWith('CREATE TABLE'));
    expect(live).to.contain('"tomb_person"').and.not.contain('deleted_at');
    expect(history).to.contain('"tomb_person_history"').and.contain('"deleted_at" timestamp with time zone').and.contain('PRIMARY KEY ("id", "version")');
  });

  it('adds deleted_at to a history table made before tombstones; its rows stay versions, not tombstones', async () => {
    expect((await driver.prepare(dataset)).refused).to.deep.equal([]);
    await driver.write(dataset, [{ op: 'create', schema: 'tomb.Person', id: 'old', data: { name: 'V1' } }], 'ATOMIC');
    await driver.write(dataset, [{ op: 'update', schema: 'tomb.Person', id: 'old', data: { name: 'V2' }, merge: false }], 'ATOMIC');
    // The layout as it was: no deleted_at.
    await db.query('ALTER TABLE tomb.tomb_person_history DROP COLUMN deleted_at');
    const report = await driver.prepare(dataset);
    expect(report.refused).to.deep.equal([]);
    expect(report.applied.filter((s) => s.includes('deleted_at'))).to.deep.equal(['ALTER TABLE "tomb"."tomb_person_history" ADD COLUMN IF NOT EXISTS "deleted_at" timestamp with time zone']);
    expect((await driver.read(dataset, { schema: 'tomb.Person', id: 'old', version: 1 }))?.deleted).to.equal(undefined);
    expect((await driver.read(dataset, { schema: 'tomb.Person', id: 'old', version: 2 }))?.data).to.deep.equal({ name: 'V2' });
    const [deleted] = await driver.write(dataset, [{ op: 'delete', schema: 'tomb.Person', id: 'old' }], 'ATOMIC');
    expect(deleted.ok && [deleted.record.version, deleted.deleted]).to.deep.equal([3, true]);
    const { rows } = await db.query('SELECT version, name, deleted_at IS NOT NULL AS tombstone, deleted_at = updated_at AS at_update FROM tomb.tomb_person_history WHERE id = $1 ORDER BY version', ['old']);
    expect(rows).to.deep.equal([
      { version: 1, name: 'V1', tombstone: false, at_update: null },
      { version: 2, name: 'V2', tombstone: false, at_update: null },
      { version: 3, name: null, tombstone: true, at_update: true },
    ]);
    // Preparing again adds nothing.
    expect((await driver.prepare(dataset)).applied.filter((s) => s.includes('ADD COLUMN'))).to.deep.equal([]);
  });

  it('keeps (id, version) the history primary key: a version cannot be written twice', async () => {
    const { rows } = await db.query(
      `SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
       WHERE i.indrelid = 'tomb.tomb_person_history'::regclass AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)`,
    );
    expect(rows.map((r) => r.attname)).to.deep.equal(['id', 'version']);
    const err = await db.query("INSERT INTO tomb.tomb_person_history (id, version) VALUES ('old', 3)").catch((e: { code: string }) => e);
    expect((err as { code: string }).code).to.equal('23505');
  });

  it('reports a tombstone on the tagged read path too', async () => {
    const read = await driver.read(dataset, { schema: 'tomb.Person', id: 'old', version: 3 }, { tags: { team: 'a' } });
    expect(read).to.deep.include({ id: 'old', version: 3, deleted: true, data: {} });
    expect((await driver.read(dataset, { schema: 'tomb.Person', id: 'old', version: 2 }, { tags: { team: 'a' } }))?.deleted).to.equal(undefined);
  });

  it('refuses a property that would map onto deleted_at', async () => {
    const clash = config({ properties: { name: { type: 'string' }, deletedAt: { type: 'timestamp' } } }, 2);
    const report = await driver.prepare(clash);
    expect(report.refused.join('\n')).to.contain('property "deletedAt" maps to column "deleted_at", already used by system column');
  });
});
