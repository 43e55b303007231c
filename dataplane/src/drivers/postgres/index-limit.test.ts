/**
 * PostgreSQL's refusal of an index row too large for a btree (SQLSTATE 54000, "index row requires
 * … bytes" / "index row size … exceeds") is a store failure the API answers 400 RECORD_TOO_LARGE,
 * never a 500: the safety net behind the engine's pre-check of sortable values (indexedKeyBytes).
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { apiErrorOf } from '../../engine/store-outcomes.js';
import { freshDatabase } from '../../../test-support/postgres.js';
import { failureOf, postgresCapabilities } from './driver.js';

describe('PostgreSQL: an index row over the btree limit', function () {
  this.timeout(60_000);

  it('is refused by PostgreSQL with 54000, mapped to a 400 RECORD_TOO_LARGE; the pre-check limit stays below it', async () => {
    const db = new pg.Client({ connectionString: await freshDatabase() });
    await db.connect();
    try {
      await db.query('CREATE TABLE t (id text PRIMARY KEY, name text)');
      await db.query('CREATE INDEX t_name ON t (name COLLATE "C", id)');
      const op = { op: 'create' as const, schema: 'demo.Person', id: 'x', data: {} };
      // Text that does not compress, a little over the limit with its id.
      const err = await db.query('INSERT INTO t VALUES ($1, $2)', ['x', randomBytes(2100).toString('base64')]).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((err as { code?: string }).code).to.equal('54000');
      const failure = failureOf(err, op);
      expect(failure).to.include({ kind: 'too-large', schema: 'demo.Person', id: 'x' });
      const api = apiErrorOf(failure);
      expect(api.status).to.equal(400);
      expect(api.code).to.equal('RECORD_TOO_LARGE');
      // What the pre-check lets through (value and id within indexedKeyBytes) the index takes.
      const limit = postgresCapabilities({ rawSql: false }).indexedKeyBytes!;
      await db.query('INSERT INTO t VALUES ($1, $2)', ['y', randomBytes(2000).toString('base64').slice(0, limit - 1)]);
    } finally {
      await db.end();
    }
  });
});
