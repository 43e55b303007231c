import { expect } from 'chai';
import pg from 'pg';
import { freshDatabase } from '../../../test-support/postgres.js';
import { PreparedRead, type PreparedSelect } from './prepared-read.js';
import { columnParser, recordTypes } from './types.js';

describe('PreparedRead (prepared statement with known columns, against PostgreSQL)', function () {
  let pool: pg.Pool;
  const types = ['text', 'integer', 'bigint', 'double precision', 'boolean', 'date', 'timestamp with time zone'];
  const columns = types.map((_, i) => `c${i}`);
  const select = (name: string, text: string, parsers = types.map(columnParser)): PreparedSelect => ({ name, text, parsers });
  const byId = select('test_read_by_id', `SELECT id, ${columns.join(', ')} FROM t WHERE id = $1`, ['text', ...types].map(columnParser));

  before(async () => {
    // One connection: every read below shares it, so statement reuse and recovery are observable.
    pool = new pg.Pool({ connectionString: await freshDatabase('prep'), max: 1, types: recordTypes });
    await pool.query(`CREATE TABLE t (id text PRIMARY KEY, ${columns.map((c, i) => `${c} ${types[i]}`).join(', ')})`);
    await pool.query(`INSERT INTO t VALUES ('a', 'Ada', 36, 9007199254740993, 1.5, true, '2026-02-28', '2026-11-22 22:40:48.123456+00'),
      ('n', NULL, NULL, NULL, NULL, NULL, NULL, NULL), ('q', 'it''s "quoted" ☃', -1, 42, -0.25, false, '1999-12-31', '2000-01-01 00:00:00+00')`);
  });
  after(async () => pool?.end());

  it('returns exactly what pg itself returns for every column type (text values through the same parsers)', async () => {
    for (const id of ['a', 'n', 'q']) {
      const ours = await PreparedRead.run(pool, byId, [id]);
      const pgs = await pool.query({ text: byId.text, values: [id], rowMode: 'array' });
      expect(ours, id).to.deep.equal(pgs.rows);
    }
    const [row] = await PreparedRead.run(pool, byId, ['a']);
    expect(row).to.deep.equal(['a', 'Ada', 36, '9007199254740993', 1.5, true, '2026-02-28', '2026-11-22T22:40:48.123456Z']);
  });

  it('answers no rows for an id that is not there, and binds the id as a value (no injection)', async () => {
    expect(await PreparedRead.run(pool, byId, ['missing'])).to.deep.equal([]);
    expect(await PreparedRead.run(pool, byId, ["a' OR '1'='1"])).to.deep.equal([]);
    expect(await PreparedRead.run(pool, byId, [null])).to.deep.equal([]);
  });

  it('parses the statement once per connection and reuses it', async () => {
    for (let i = 0; i < 5; i++) await PreparedRead.run(pool, byId, ['a']);
    const prepared = await pool.query("SELECT name, statement FROM pg_prepared_statements WHERE name = 'test_read_by_id'");
    expect(prepared.rows).to.have.length(1);
    expect(prepared.rows[0].statement).to.equal(byId.text);
  });

  it('shares the connection with pg queries in any order', async () => {
    const results = await Promise.all([
      PreparedRead.run(pool, byId, ['a']),
      pool.query('SELECT 1 AS one'),
      PreparedRead.run(pool, byId, ['q']),
      pool.query({ text: byId.text, values: ['n'], rowMode: 'array' }),
    ]);
    expect((results[0] as unknown[][])[0][1]).to.equal('Ada');
    expect((results[1] as pg.QueryResult).rows).to.deep.equal([{ one: 1 }]);
    expect((results[2] as unknown[][])[0][0]).to.equal('q');
    expect((results[3] as pg.QueryResult).rows[0][0]).to.equal('n');
  });

  it('rejects with the database error when the statement fails, and the pool goes on serving', async () => {
    const broken = select('test_missing_table', 'SELECT id FROM no_such_table WHERE id = $1', [columnParser('text')]);
    const err = await PreparedRead.run(pool, broken, ['a']).then(
      () => undefined,
      (e: unknown) => e as { code?: string },
    );
    expect(err?.code).to.equal('42P01');
    // A failed Parse is not remembered as parsed: a retry fails the same way, not with "does not exist".
    const again = await PreparedRead.run(pool, broken, ['a']).catch((e: { code?: string }) => e);
    expect((again as { code?: string }).code).to.equal('42P01');
    expect((await PreparedRead.run(pool, byId, ['a']))[0][1]).to.equal('Ada');
  });

  it('rejects a row whose column count differs from the statement it was built for, instead of misreading it', async () => {
    const wrong = select('test_wrong_width', 'SELECT id, c0 FROM t WHERE id = $1', [columnParser('text')]);
    const err = await PreparedRead.run(pool, wrong, ['a']).catch((e: Error) => e);
    expect(err).to.be.instanceOf(Error);
    expect((err as Error).message).to.match(/returned 2 columns, expected 1/);
    expect((await PreparedRead.run(pool, byId, ['q']))[0][1]).to.equal('it\'s "quoted" ☃');
  });

  it('refuses a column type it has no parser for', () => {
    expect(() => columnParser('jsonb')).to.throw(/no parser for column type "jsonb"/);
  });
});
