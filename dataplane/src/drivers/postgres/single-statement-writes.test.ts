/**
 * A write of one action is one statement on PostgreSQL, its own transaction, at every level: no
 * BEGIN or COMMIT round trips. At EVENTUAL that statement also turns synchronous_commit off for
 * its own transaction, so it commits without waiting for its WAL flush, as EVENTUAL promises.
 * Observed on what the driver sends to a real server (pg's Client.query, spied).
 */
import { expect } from 'chai';
import pg from 'pg';
import pino from 'pino';
import { dataPlaneSettings } from '../../../../model/settings/dataplane.js';
import { suiteDataset } from '../../../test-support/driver-suite.js';
import { freshDatabase } from '../../../test-support/postgres.js';
import type { WriteLevel, WriteOp } from '../../engine/contract.js';
import { PostgresDriver } from './driver.js';

interface Sent {
  text: string;
  values?: unknown[];
}

describe('postgres: a write of one action is one statement', function () {
  this.timeout(60000);
  const dataset = suiteDataset('postgres');
  let driver: PostgresDriver;
  let db: pg.Client;
  const realQuery = pg.Client.prototype.query;

  before(async () => {
    const url = await freshDatabase();
    driver = new PostgresDriver({ logger: pino({ level: 'silent' }), settings: dataPlaneSettings({ DATABASE_URL: url }) });
    await driver.prepare(dataset);
    db = new pg.Client(url);
    await db.connect();
  });
  after(async () => {
    pg.Client.prototype.query = realQuery;
    await db?.end();
    await driver?.close();
  });

  /** The statements the driver sends while `write` runs (the test's own client is not spied). */
  async function sentBy(ops: WriteOp[], level: WriteLevel): Promise<{ sent: Sent[]; ok: boolean[] }> {
    const sent: Sent[] = [];
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      if (this !== db) {
        const first = args[0] as string | { text: string; values?: unknown[] };
        sent.push(typeof first === 'string' ? { text: first, values: args[1] as unknown[] | undefined } : { text: first.text, values: first.values });
      }
      return (realQuery as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof realQuery;
    try {
      const results = await driver.write(dataset, ops, level);
      return { sent, ok: results.map((r) => r.ok) };
    } finally {
      pg.Client.prototype.query = realQuery;
    }
  }

  const transactionControl = (sent: Sent[]) => sent.filter((s) => /^\s*(BEGIN|COMMIT|ROLLBACK|SET)\b/i.test(s.text));

  for (const level of ['ATOMIC_ALL', 'ATOMIC', 'QUORUM', 'EVENTUAL'] as WriteLevel[]) {
    it(`${level}: create, update and delete each send one statement and no BEGIN/COMMIT`, async () => {
      const id = `one-${level}`;
      const ops: WriteOp[] = [
        { op: 'create', schema: 'suite.Company', id, data: { name: 'Acme' } },
        { op: 'update', schema: 'suite.Company', id, data: { name: 'Acme Ltd' }, merge: true },
        { op: 'delete', schema: 'suite.Company', id },
      ];
      for (const op of ops) {
        const { sent, ok } = await sentBy([op], level);
        expect(ok, `${op.op} at ${level}`).to.deep.equal([true]);
        expect(transactionControl(sent), `${op.op} at ${level}`).to.deep.equal([]);
        expect(sent, `${op.op} at ${level}`).to.have.length(1);
        // Only EVENTUAL relaxes the commit.
        expect(sent[0].text.includes(`set_config('synchronous_commit', 'off', true)`), `${op.op} at ${level}`).to.equal(level === 'EVENTUAL');
      }
    });
  }

  it('EVENTUAL: the statement turns synchronous_commit off for its own transaction only', async () => {
    const { sent } = await sentBy([{ op: 'create', schema: 'suite.Company', id: 'unflushed', data: { name: 'Acme' } }], 'EVENTUAL');
    const [statement] = sent;
    // Run what the driver sent inside a transaction of ours, to look at the setting its commit would read.
    await db.query('BEGIN');
    try {
      expect((await db.query("SELECT current_setting('synchronous_commit') AS s")).rows[0].s).to.equal('on');
      await db.query({ text: statement.text, values: statement.values!.map((v) => (v === 'unflushed' ? 'unflushed-2' : v)) });
      expect((await db.query("SELECT current_setting('synchronous_commit') AS s")).rows[0].s).to.equal('off');
    } finally {
      await db.query('ROLLBACK');
    }
    expect((await db.query("SELECT current_setting('synchronous_commit') AS s")).rows[0].s).to.equal('on');
    // The write itself is there, with its history and its change.
    const read = await driver.read(dataset, { schema: 'suite.Company', id: 'unflushed' });
    expect(read).to.include({ id: 'unflushed', version: 1 });
  });

  it('EVENTUAL, several actions: each its own statement; a refused one does not undo the others', async () => {
    const { sent, ok } = await sentBy(
      [
        { op: 'create', schema: 'suite.Company', id: 'ev-a', data: { name: 'A' } },
        { op: 'update', schema: 'suite.Company', id: 'nobody', data: { name: 'B' }, merge: true },
        { op: 'create', schema: 'suite.Company', id: 'ev-c', data: { name: 'C' } },
      ],
      'EVENTUAL',
    );
    expect(ok).to.deep.equal([true, false, true]);
    expect(transactionControl(sent)).to.deep.equal([]);
    expect(sent).to.have.length(3);
  });
});
