/** checkout.ts: every transaction of the PostgreSQL driver, on a real server. */
import { expect } from 'chai';
import pg from 'pg';
import { freshDatabase } from '../../../test-support/postgres.js';
import { beginSql, inTransaction, withConnection } from './checkout.js';

describe('PostgreSQL transactions (checkout.ts)', function () {
  this.timeout(120_000);
  let pool: pg.Pool;

  before(async () => {
    // One connection: whatever a use leaves on it (an open transaction, a setting) the next use sees.
    pool = new pg.Pool({ connectionString: await freshDatabase('checkout'), max: 1 });
    await pool.query('CREATE TABLE t (n int PRIMARY KEY)');
  });
  after(() => pool.end());
  beforeEach(() => pool.query('TRUNCATE t'));

  const count = async () => Number((await pool.query('SELECT count(*) AS n FROM t')).rows[0].n);

  it('commits what fn wrote, and returns its result', async () => {
    const result = await inTransaction(pool, {}, async (c) => (await c.query('INSERT INTO t VALUES (1) RETURNING n')).rows[0].n);
    expect(result).to.equal(1);
    expect(await count()).to.equal(1);
  });

  it('rolls back when fn throws, and the connection is clean for the next use', async () => {
    const failed = await inTransaction(pool, {}, async (c) => {
      await c.query('INSERT INTO t VALUES (1)');
      await c.query('INSERT INTO t VALUES (1)'); // unique violation: the transaction is aborted
    }).catch((err: Error) => err);
    expect((failed as { code?: string }).code).to.equal('23505');
    // On the same (only) connection: left inside the aborted transaction, this would fail with 25P02.
    expect(await count()).to.equal(0);
  });

  it('rolls back when commit says no, and still returns the result', async () => {
    const result = await inTransaction(pool, { commit: (r: string) => r === 'keep' }, async (c) => {
      await c.query('INSERT INTO t VALUES (2)');
      return 'drop';
    });
    expect(result).to.equal('drop');
    expect(await count()).to.equal(0);
  });

  it('readOnly refuses writes; local settings last for the transaction only', async () => {
    const refused = await inTransaction(pool, { readOnly: true }, (c) => c.query('INSERT INTO t VALUES (3)')).catch((err: Error) => err);
    expect((refused as { code?: string }).code).to.equal('25006');
    const inside = await inTransaction(pool, { local: { synchronous_commit: 'off', statement_timeout: 1234 } }, async (c) =>
      (await c.query("SELECT current_setting('synchronous_commit') AS s, current_setting('statement_timeout') AS t")).rows[0],
    );
    expect(inside).to.deep.equal({ s: 'off', t: '1234ms' });
    expect((await pool.query("SELECT current_setting('synchronous_commit') AS s")).rows[0].s).to.equal('on');
  });

  it('holds the advisory lock for the transaction: a second holder waits until the first commits', async () => {
    const two = new pg.Pool({ connectionString: (pool as unknown as { options: { connectionString: string } }).options.connectionString, max: 2 });
    try {
      const order: string[] = [];
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const first = inTransaction(two, { lockKey: 'checkout-test' }, async () => {
        locked();
        await held;
        order.push('first');
      });
      await new Promise<void>((resolve) => (locked = resolve));
      const second = inTransaction(two, { lockKey: 'checkout-test' }, async () => void order.push('second'));
      // The second is waiting on the lock (pg_locks shows it) before the first lets go.
      for (;;) {
        const waiting = await pool.query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted");
        if (waiting.rows[0].n === 1) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      release();
      await Promise.all([first, second]);
      expect(order).to.deep.equal(['first', 'second']);
    } finally {
      await two.end();
    }
  });

  it('a connection that dies while held is destroyed, not handed out again; the process lives on', async () => {
    const failed = await withConnection(pool, async (c) => {
      const pid = (await c.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      // Ended from another session: pg emits 'error' on the held client (unheard, it would crash the process).
      const other = new pg.Client({ connectionString: (pool as unknown as { options: { connectionString: string } }).options.connectionString });
      await other.connect();
      await other.query('SELECT pg_terminate_backend($1)', [pid]);
      await other.end();
      await c.query('SELECT 1');
    }).catch((err: Error) => err);
    expect(failed).to.be.instanceOf(Error);
    expect(await count()).to.equal(0); // a fresh connection serves the next use
    expect(pool.totalCount).to.equal(1);
  });

  it('runs the reset statement before the connection goes back (DISCARD ALL)', async () => {
    await withConnection(pool, (c) => c.query("SET application_name = 'left-behind'"), { reset: 'DISCARD ALL' });
    expect((await pool.query("SELECT current_setting('application_name') AS a")).rows[0].a).to.not.equal('left-behind');
  });

  it('writes BEGIN and its SET LOCALs in one statement, and refuses anything but a name and a plain value', () => {
    expect(beginSql({})).to.equal('BEGIN');
    expect(beginSql({ readOnly: true, local: { statement_timeout: 5000 } })).to.equal('BEGIN READ ONLY; SET LOCAL statement_timeout = 5000');
    expect(() => beginSql({ local: { statement_timeout: '1; DROP TABLE t' } })).to.throw(/not a setting name and plain value/);
    expect(() => beginSql({ local: { 'x; DROP': 1 } })).to.throw(/not a setting name and plain value/);
  });
});
