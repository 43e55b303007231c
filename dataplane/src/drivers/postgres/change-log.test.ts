/**
 * The PostgreSQL change log on a real server: a change per committed write at every level, in
 * commit order, atomic batches consecutive and in action order, none for a failed batch, record
 * images from the history, NOTIFY wake-ups, concurrent writers read without a gap by a cursor,
 * pruning and expired cursors, and the function bulk loads call inside their transaction.
 */
import { expect } from 'chai';
import pg from 'pg';
import pino from 'pino';
import { renderDatasetConfig } from '../../../../model/render.js';
import { freshDatabase } from '../../../test-support/postgres.js';
import { StoreError, type RecordChange, type WriteLevel } from '../../engine/contract.js';
import { appendChanges, changeLogDdl, changesTable, numberAndReadSql } from './change-log.js';
import { PostgresDriver } from './driver.js';
import { dataPlaneSettings } from '../../../../model/settings/dataplane.js';

const dataset = renderDatasetConfig({
  apiVersion: 'dataaccess.dev/v1alpha1',
  kind: 'Dataset',
  metadata: { name: 'feed', generation: 1 },
  spec: {
    environment: 'local',
    location: { kind: 'postgres' },
    schemas: {
      'feed.Person': { properties: { name: { type: 'string' }, address: { type: 'object', properties: { postcode: { type: 'string' } } } } },
      'feed.Company': { properties: { name: { type: 'string' } } },
    },
  },
});

describe('postgres change log', function () {
  this.timeout(60000);
  let driver: PostgresDriver;
  let db: pg.Client;

  before(async () => {
    const url = await freshDatabase();
    driver = new PostgresDriver({ logger: pino({ level: 'silent' }), settings: dataPlaneSettings({ DATABASE_URL: url }), poolSize: 12 });
    const report = await driver.prepare(dataset);
    expect(report.applied.some((s) => s.includes('"das$changes"'))).to.equal(true);
    db = new pg.Client(url);
    await db.connect();
  });
  after(async () => {
    await db?.end();
    await driver?.close();
  });

  const all = async (after: string) => {
    const out: RecordChange[] = [];
    let cursor = after;
    for (;;) {
      const batch = await driver.changes.readChanges(dataset, cursor, 50);
      expect(batch.expired).to.equal(false);
      if (!batch.changes.length) return out;
      out.push(...batch.changes);
      cursor = batch.changes.at(-1)!.cursor;
    }
  };

  for (const level of ['QUORUM', 'EVENTUAL', 'ATOMIC'] as WriteLevel[]) {
    it(`writes a change per create, replace, merge and delete at ${level}, with the record images`, async () => {
      const start = await driver.changes.head(dataset);
      const id = `p-${level}`;
      const w = (op: Parameters<PostgresDriver['write']>[1][number]) => driver.write(dataset, [op], level);
      expect((await w({ op: 'create', schema: 'feed.Person', id, data: { name: 'Ada', address: { postcode: 'N1' } } }))[0].ok).to.equal(true);
      await w({ op: 'update', schema: 'feed.Person', id, data: { name: 'Ada L' }, merge: false });
      await w({ op: 'update', schema: 'feed.Person', id, data: { address: { postcode: 'E2' } }, merge: true });
      await w({ op: 'delete', schema: 'feed.Person', id });
      // A failed action writes no change.
      expect((await w({ op: 'update', schema: 'feed.Person', id: 'nobody', data: {}, merge: true }))[0].ok).to.equal(false);
      const changes = await all(start);
      expect(changes.map((c) => [c.op, c.id, c.version])).to.deep.equal([
        ['CREATE', id, 1],
        ['UPDATE', id, 2],
        ['UPDATE', id, 3],
        ['DELETE', id, 4],
      ]);
      expect(changes[0].record?.data).to.deep.equal({ name: 'Ada', address: { postcode: 'N1' } });
      expect(changes[1].record?.data).to.deep.equal({ name: 'Ada L' });
      expect(changes[2].record?.data).to.deep.equal({ name: 'Ada L', address: { postcode: 'E2' } });
      expect(changes[3].record).to.include({ id, version: 4, deleted: true });
      expect(changes[3].previous?.data).to.deep.equal({ name: 'Ada L', address: { postcode: 'E2' } });
      const cursors = changes.map((c) => BigInt(c.cursor));
      expect([...cursors].sort((a, b) => (a < b ? -1 : 1))).to.deep.equal(cursors);
      expect(new Date(changes[0].committedAt).getTime()).to.be.closeTo(Date.now(), 60_000);
    });
  }

  it('an ATOMIC batch: its changes consecutive, in action order; a failed batch: none', async () => {
    const start = await driver.changes.head(dataset);
    const results = await driver.write(
      dataset,
      [
        { op: 'create', schema: 'feed.Company', id: 'c1', data: { name: 'Acme' } },
        { op: 'create', schema: 'feed.Person', id: 'b1', data: { name: 'Bo' } },
        { op: 'update', schema: 'feed.Company', id: 'c1', data: { name: 'Acme Ltd' }, merge: true },
      ],
      'ATOMIC',
    );
    expect(results.every((r) => r.ok)).to.equal(true);
    const failed = await driver.write(
      dataset,
      [
        { op: 'create', schema: 'feed.Company', id: 'c2', data: { name: 'X' } },
        { op: 'create', schema: 'feed.Company', id: 'c1', data: { name: 'taken' } },
      ],
      'ATOMIC_ALL',
    );
    expect(failed.map((r) => r.ok)).to.deep.equal([false, false]);
    const changes = await all(start);
    expect(changes.map((c) => [c.schema, c.op, c.id, c.version])).to.deep.equal([
      ['feed.Company', 'CREATE', 'c1', 1],
      ['feed.Person', 'CREATE', 'b1', 1],
      ['feed.Company', 'UPDATE', 'c1', 2],
    ]);
    expect(changes.map((c) => BigInt(c.cursor) - BigInt(changes[0].cursor))).to.deep.equal([0n, 1n, 2n]);
    expect(changes[2].record?.data).to.deep.equal({ name: 'Acme Ltd' });
  });

  it('concurrent writers at every level, three racing readers (each sequencing): every reader sees every change once, none skipped, each record in version order', async () => {
    const start = await driver.changes.head(dataset);
    let done = false;
    // Readers race the writers and each other; each one sequences pending changes before it reads
    // (change-log.ts). A change sequenced with a smaller cursor after a larger one was read would be
    // skipped for good by that reader.
    const reader = async () => {
      const seen: string[] = [];
      let cursor = start;
      for (;;) {
        const finished = done;
        const batch = await driver.changes.readChanges(dataset, cursor, 20);
        for (const c of batch.changes) seen.push(`${c.schema}/${c.id}/${c.version}`);
        if (batch.changes.length) cursor = batch.changes.at(-1)!.cursor;
        else if (finished) return seen;
      }
    };
    const readers = [reader(), reader(), reader()];
    const levels: WriteLevel[] = ['QUORUM', 'EVENTUAL', 'ATOMIC', 'ATOMIC_ALL'];
    const writers = Array.from({ length: 8 }, async (_, w) => {
      for (let i = 0; i < 25; i++) {
        const level = levels[(w + i) % levels.length];
        // Shared ids across writers, so row locks meet (an atomic pair in id order: two pairs
        // locking rows in opposite orders deadlock with or without a change log).
        const [a, b] = [`x${i % 3}`, `x${(i + 1) % 3}`].sort();
        await driver.write(
          dataset,
          level.startsWith('ATOMIC')
            ? [
                { op: 'update', schema: 'feed.Company', id: a, data: { name: `w${w}` }, merge: true },
                { op: 'update', schema: 'feed.Company', id: b, data: { name: `w${w}` }, merge: true },
              ]
            : [{ op: 'update', schema: 'feed.Company', id: a, data: { name: `w${w}` }, merge: true }],
          level,
        );
      }
    });
    await driver.write(dataset, ['x0', 'x1', 'x2'].map((id) => ({ op: 'create' as const, schema: 'feed.Company', id, data: { name: 'start' } })), 'ATOMIC');
    await Promise.all(writers);
    done = true;
    const seen = await Promise.all(readers);
    const logged = await db.query<{ k: string }>(`SELECT schema_name || '/' || record_id || '/' || version AS k FROM ${changesTable('feed')} WHERE pos > $1 ORDER BY pos`, [start]);
    for (const one of seen) expect(one).to.deep.equal(logged.rows.map((r) => r.k));
    expect(new Set(seen[0]).size).to.equal(seen[0].length);
    // Every committed version of x0..x2 is in the log, each record's in version order.
    const versions = await db.query<{ n: string }>(`SELECT sum(version)::text AS n FROM feed.feed_company WHERE id IN ('x0', 'x1', 'x2')`);
    expect(seen[0].filter((k) => /\/x[012]\//.test(k)).length).to.equal(Number(versions.rows[0].n));
    for (const id of ['x0', 'x1', 'x2']) {
      const order = seen[0].filter((k) => k.startsWith(`feed.Company/${id}/`)).map((k) => Number(k.split('/')[2]));
      expect(order).to.deep.equal(order.map((_, i) => i + 1));
    }
  });

  it('a transaction’s changes stay together when numbered, though another staged its own before, between and after them', async () => {
    const start = await driver.changes.head(dataset);
    const other = await driver.pool(dataset).connect();
    try {
      // Staging numbers interleave (early < a1 < a2 < late); both commit before anyone numbers.
      await other.query('BEGIN');
      await appendChanges(other, 'feed', [{ schema: 'feed.Person', id: 'early', version: 1, op: 'CREATE' }]);
      await db.query('BEGIN');
      await appendChanges(db, 'feed', [
        { schema: 'feed.Person', id: 'a1', version: 1, op: 'CREATE' },
        { schema: 'feed.Person', id: 'a2', version: 1, op: 'CREATE' },
      ]);
      await appendChanges(other, 'feed', [{ schema: 'feed.Person', id: 'late', version: 1, op: 'CREATE' }]);
      await db.query('COMMIT');
      await other.query('COMMIT');
    } finally {
      other.release();
    }
    const changes = await all(start);
    // Ordered by each transaction's last staging number: the batch, then the other one.
    expect(changes.map((c) => c.id)).to.deep.equal(['a1', 'a2', 'early', 'late']);
    expect(changes.map((c) => BigInt(c.cursor) - BigInt(changes[0].cursor))).to.deep.equal([0n, 1n, 2n, 3n]);
  });

  it('a record’s versions stay in order when a transaction staged changes before and after another committed (a bulk load in chunks)', async () => {
    const start = await driver.changes.head(dataset);
    const other = await driver.pool(dataset).connect();
    try {
      await db.query('BEGIN');
      await appendChanges(db, 'feed', [{ schema: 'feed.Person', id: 'q', version: 1, op: 'CREATE' }]);
      await other.query('BEGIN');
      await appendChanges(other, 'feed', [{ schema: 'feed.Person', id: 'r', version: 2, op: 'UPDATE' }]);
      await other.query('COMMIT');
      // Only now could this transaction have written r (its row lock waited for the other's commit).
      await appendChanges(db, 'feed', [{ schema: 'feed.Person', id: 'r', version: 3, op: 'UPDATE' }]);
      await db.query('COMMIT');
    } finally {
      other.release();
    }
    expect((await all(start)).map((c) => `${c.id}${c.version}`)).to.deep.equal(['r2', 'q1', 'r3']);
  });

  it('after a server start, numbering resumes above the durable reservation: a lost numbering is repeated higher, never reused', async () => {
    for (const id of ['crash1', 'crash2', 'crash3']) await driver.write(dataset, [{ op: 'create', schema: 'feed.Person', id, data: {} }], 'QUORUM');
    const head = BigInt(await driver.changes.head(dataset));
    const mark = async () => (await db.query<{ reserved: string }>(`SELECT reserved::text FROM feed."das$changes_pruned"`)).rows[0].reserved;
    const reserved = BigInt(await mark());
    expect(reserved >= head).to.equal(true);
    // As if the server crashed after readers saw the last two positions but before their numbering was flushed.
    await db.query(`UPDATE ${changesTable('feed')} SET pos = NULL WHERE pos > $1`, [String(head - 2n)]);
    await db.query(`UPDATE feed."das$changes_pruned" SET boot = '2000-01-01'`);
    const again = await all(String(head - 2n));
    expect(again.map((c) => c.id)).to.deep.equal(['crash2', 'crash3']);
    expect(again.map((c) => BigInt(c.cursor) - reserved)).to.deep.equal([1n, 2n]);
    expect(BigInt(await mark()) >= reserved + 2n).to.equal(true);
    // Without a restart, numbering continues from the highest position.
    await driver.write(dataset, [{ op: 'create', schema: 'feed.Person', id: 'crash4', data: {} }], 'QUORUM');
    expect((await all(again[1].cursor)).map((c) => BigInt(c.cursor) - reserved)).to.deep.equal([3n]);
  });

  it('a log from before positions keeps its cursors; new changes are numbered after them', async () => {
    const url = await freshDatabase();
    const old = new pg.Client(url);
    await old.connect();
    try {
      // The earlier layout (no tx, no pos) with two changes, as its writers left it.
      await old.query('CREATE SCHEMA legacy');
      await old.query(`CREATE TABLE ${changesTable('legacy')} (seq bigserial PRIMARY KEY, schema_name text NOT NULL, record_id text NOT NULL, version integer NOT NULL, op text NOT NULL, committed_at timestamp with time zone NOT NULL DEFAULT clock_timestamp())`);
      await old.query(`INSERT INTO ${changesTable('legacy')} (seq, schema_name, record_id, version, op) VALUES (7, 'x', 'a', 1, 'CREATE'), (9, 'x', 'b', 1, 'CREATE')`);
      await old.query(`SELECT setval(pg_get_serial_sequence('${changesTable('legacy')}', 'seq'), 9)`);
      for (const statement of changeLogDdl('legacy')) await old.query(statement);
      for (const statement of changeLogDdl('legacy')) await old.query(statement); // idempotent
      await appendChanges(old, 'legacy', [{ schema: 'x', id: 'c', version: 1, op: 'CREATE' }]);
      const results = (await old.query(numberAndReadSql('legacy', 0n, 10))) as unknown as pg.QueryResult<{ cursor: string; record_id: string }>[];
      expect(results.at(-1)!.rows.map((r) => [r.cursor, r.record_id])).to.deep.equal([
        ['7', 'a'],
        ['9', 'b'],
        ['10', 'c'],
      ]);
    } finally {
      await old.end();
    }
  });

  it('indexes positions and times of numbered changes only (a log with the earlier whole indexes gets them on prepare); readers and pruning use them', async () => {
    const indexes = async () =>
      (await db.query<{ indexname: string; indexdef: string }>(`SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'feed' AND tablename = 'das$changes' ORDER BY indexname`)).rows;
    // The layout before: position and time indexed whole.
    await db.query(`DROP INDEX feed."das$changes_pos_numbered"; DROP INDEX feed."das$changes_committed_numbered"`);
    await db.query(`CREATE UNIQUE INDEX "das$changes_pos" ON feed."das$changes" (pos); CREATE INDEX "das$changes_committed_at" ON feed."das$changes" (committed_at)`);
    const report = await driver.prepare(dataset);
    expect(report.refused).to.deep.equal([]);
    const now = await indexes();
    expect(now.map((i) => i.indexname)).to.deep.equal(['das$changes_committed_numbered', 'das$changes_pkey', 'das$changes_pos_numbered', 'das$changes_unnumbered']);
    expect(now.find((i) => i.indexname === 'das$changes_pos_numbered')!.indexdef).to.match(/UNIQUE .*\(pos\) WHERE \(pos IS NOT NULL\)$/);
    expect(now.find((i) => i.indexname === 'das$changes_committed_numbered')!.indexdef).to.match(/\(committed_at\) WHERE \(pos IS NOT NULL\)$/);
    // The feed still reads in order after the change.
    const head = await driver.changes.head(dataset);
    await driver.write(dataset, [{ op: 'create', schema: 'feed.Company', id: 'after-index', data: { name: 'I' } }], 'QUORUM');
    expect((await all(head)).map((c) => c.id)).to.deep.equal(['after-index']);
    // With the sequential scan priced out, the planner can answer a page, the head and the pruning from the partial indexes.
    await db.query('BEGIN');
    try {
      await db.query('SET LOCAL enable_seqscan = off');
      const plan = async (sql: string) => (await db.query(`EXPLAIN ${sql}`)).rows.map((r) => r['QUERY PLAN']).join('\n');
      expect(await plan(`SELECT * FROM feed."das$changes" WHERE pos > 5 ORDER BY pos LIMIT 10`)).to.include('das$changes_pos_numbered');
      expect(await plan(`SELECT max(pos) FROM feed."das$changes"`)).to.include('das$changes_pos_numbered');
      expect(await plan(`SELECT * FROM feed."das$changes" WHERE committed_at < now() AND pos IS NOT NULL`)).to.include('das$changes_committed_numbered');
    } finally {
      await db.query('ROLLBACK');
    }
  });

  it('wakes a LISTENer on every committed write, not on a rolled-back one', async () => {
    let wakes = 0;
    const stop = await driver.changes.subscribeWakeups(dataset, () => wakes++);
    try {
      await driver.write(dataset, [{ op: 'create', schema: 'feed.Person', id: 'wake1', data: {} }], 'QUORUM');
      await until(() => wakes >= 1);
      const before = wakes;
      await driver.write(dataset, [{ op: 'create', schema: 'feed.Person', id: 'wake1', data: {} }], 'ATOMIC');
      await driver.write(dataset, [{ op: 'create', schema: 'feed.Person', id: 'wake2', data: {} }], 'ATOMIC');
      await until(() => wakes > before);
      await new Promise((r) => setTimeout(r, 100));
      expect(wakes).to.equal(before + 1);
    } finally {
      await stop();
    }
  });

  it('prunes past the retention; a cursor before what was pruned is expired, a later one is not', async () => {
    const head = await driver.changes.head(dataset);
    await db.query(`UPDATE ${changesTable('feed')} SET committed_at = now() - interval '2 days' WHERE pos <= $1`, [head]);
    await driver.write(dataset, [{ op: 'create', schema: 'feed.Person', id: 'after-prune', data: {} }], 'QUORUM');
    const old = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${changesTable('feed')} WHERE pos <= $1`, [head]);
    expect(old.rows[0].n).to.be.greaterThan(10);
    expect(await driver.changes.prune(dataset, 24 * 3600_000)).to.equal(old.rows[0].n);
    expect((await driver.changes.readChanges(dataset, '0', 10)).expired).to.equal(true);
    expect((await driver.changes.readChanges(dataset, String(BigInt(head) - 1n), 10)).expired).to.equal(true);
    const fresh = await driver.changes.readChanges(dataset, head, 10);
    expect(fresh.expired).to.equal(false);
    expect(fresh.changes.map((c) => c.id)).to.deep.equal(['after-prune']);
    expect(await driver.changes.prune(dataset, 24 * 3600_000)).to.equal(0);
  });

  it('refuses a malformed cursor as an invalid query', async () => {
    for (const bad of ['', 'abc', '-1', '01', '1e3', '99999999999999999999']) {
      const err = await driver.changes.readChanges(dataset, bad, 10).then(() => undefined, (e: unknown) => e);
      expect(err, bad).to.be.instanceOf(StoreError);
      expect((err as StoreError).failure.kind).to.equal('invalid-query');
    }
  });

  it('appendChanges: an atomic write appends its changes inside its own transaction', async () => {
    const start = await driver.changes.head(dataset);
    await db.query('BEGIN');
    await appendChanges(db, 'feed', [
      { schema: 'feed.Person', id: 'bulk1', version: 1, op: 'CREATE' },
      { schema: 'feed.Person', id: 'bulk2', version: 1, op: 'CREATE' },
    ]);
    expect((await all(start)).length).to.equal(0); // not committed yet
    await db.query('COMMIT');
    expect((await all(start)).map((c) => c.id)).to.deep.equal(['bulk1', 'bulk2']);
  });
});

async function until(check: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
}
