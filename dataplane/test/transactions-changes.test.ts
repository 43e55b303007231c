/**
 * A bulk load and single writes to the same records at once: each chunk writes its records, their
 * history and their change-log rows in one statement that takes the change log's ordering lock
 * only after every record row is written (bulk-load.ts). Neither side deadlocks or fails, and the
 * change log holds every version once, in commit order: per record, sequence order is version
 * order, and every history version has its change.
 */
import { expect } from 'chai';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import pino from 'pino';
import { emptyProgress } from '../src/drivers/postgres/bulk-load.js';
import { changeLockKey } from '../src/drivers/postgres/change-log.js';
import { PostgresDriver } from '../src/drivers/postgres/driver.js';
import { adminClient, startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { parquetFile, transactionManifests, waitForTransaction, type Api } from '../test-support/transactions.js';
import { dataPlaneSettings } from '../../model/settings/dataplane.js';

describe('transactions: a bulk load beside single writes to the same records', function () {
  this.timeout(120_000);
  const ROWS = 4000;
  const HOT = 100; // records both the load and the single writers write
  let dp: TestDataPlane;
  let api: Api;
  let db: pg.Client;

  before(async () => {
    dp = await startTestDataPlane({ manifests: transactionManifests(), env: { DAS_BULK_CHUNK_ROWS: '250', DAS_BULK_POLL_MS: '50' } });
    api = adminClient(dp);
    mkdirSync(join(dp.dataDir, 'imports'), { recursive: true });
    db = new pg.Client({ connectionString: dp.databaseUrl });
    await db.connect();
    // The hot records are spread over the file, so every chunk meets single writes.
    const ids = Array.from({ length: ROWS }, (_, i) => (i % (ROWS / HOT) === 0 ? `hot${i / (ROWS / HOT)}` : `c${i}`));
    writeFileSync(
      join(dp.dataDir, 'imports', 'people.parquet'),
      parquetFile(
        [
          { name: 'id', data: ids, type: 'STRING' },
          { name: 'name', data: ids.map((id) => `loaded ${id}`), type: 'STRING' },
          { name: 'age', data: ids.map((_, i) => i % 90), type: 'INT32' },
        ],
        { rowGroupSize: 1000 },
      ),
    );
    for (let h = 0; h < HOT; h++) {
      const res = await api({ path: '/demo', body: { create: { schema: 'demo.Person', id: `hot${h}`, data: { name: 'before', age: 1 } } } });
      expect(res.status, res.text).to.be.oneOf([200, 201]);
    }
  });
  after(async () => {
    await db?.end();
    await dp?.stop();
  });

  it('both finish; every version is in the change log once, in commit order', async () => {
    const res = await api({
      path: '/demo',
      body: { create: { schema: 'Transaction', data: { actions: [{ locationUri: pathToFileURL(join(dp.dataDir, 'imports', 'people.parquet')).href, operation: 'UPSERT', format: 'PARQUET', schema: 'demo.Person' }] } } },
    });
    expect(res.status, res.text).to.equal(202);
    let loading = true;
    const done = waitForTransaction(api, res.json.id, undefined, 90_000).finally(() => (loading = false));
    // Four writers update the hot records (and create new ones) until the load is over.
    let singleWrites = 0;
    const writer = async (w: number) => {
      for (let n = 0; loading; n++) {
        const hot = (n * 7 + w) % HOT;
        const updated = await api({ path: '/demo', body: { update: { schema: 'demo.Person', id: `hot${hot}`, data: { name: `single ${w}.${n}`, age: 2 } } } });
        expect(updated.status, updated.text).to.equal(200);
        const created = await api({ path: '/demo', body: { create: { schema: 'demo.Person', id: `single-${w}-${n}`, data: { name: 'single', age: 3 } } } });
        expect(created.status, created.text).to.be.oneOf([200, 201]);
        singleWrites += 2;
      }
    };
    await Promise.all([0, 1, 2, 3].map(writer));
    const tx = await done;
    expect(tx.status, JSON.stringify(tx)).to.equal('SUCCEEDED');
    expect(tx.actions[0]).to.deep.include({ rowsRead: ROWS, rowsWritten: ROWS, rowsRejected: 0 });
    expect(singleWrites).to.be.greaterThan(10);

    const changes = (await db.query(`SELECT seq::int, record_id, version, op FROM demo."das$changes" WHERE schema_name = 'demo.Person' ORDER BY seq`)).rows;
    const history = (await db.query(`SELECT id, version FROM demo.demo_person_history ORDER BY id, version`)).rows;
    // Every history version has exactly one change, and nothing else does.
    expect(changes.map((c) => `${c.record_id}@${c.version}`).sort()).to.deep.equal(history.map((h) => `${h.id}@${h.version}`).sort());
    // Per record, the versions follow one another in sequence order (commit order): 1, 2, 3, ...
    const seen = new Map<string, number>();
    for (const c of changes) {
      expect(c.version, `${c.record_id} at seq ${c.seq}`).to.equal((seen.get(c.record_id) ?? 0) + 1);
      seen.set(c.record_id, c.version);
    }
    // The hot records were written by both sides; the live version is the last change's.
    const live = (await db.query(`SELECT id, version FROM demo.demo_person WHERE id LIKE 'hot%'`)).rows;
    expect(live).to.have.length(HOT);
    for (const r of live) expect(r.version).to.equal(seen.get(r.id));
    expect(Math.max(...live.map((r) => r.version))).to.be.greaterThan(2);
  });

  it('a chunk waiting for a row a single write holds takes no change-log lock meanwhile: a change-log reader is not held up, and the chunk finishes after the single write (no deadlock)', async () => {
    await dp.dataPlane.runner.stop(); // this test claims its transaction itself
    const config = dp.dataPlane.store.dataset('demo')!.config;
    const driver = new PostgresDriver({ logger: pino({ level: 'silent' }), settings: dataPlaneSettings({ DATABASE_URL: dp.databaseUrl }) });
    const single = new pg.Client({ connectionString: dp.databaseUrl });
    await single.connect();
    try {
      const store = driver.bulkLoad!;
      const spec = { actions: [{ locationUri: 'file:///x', operation: 'UPSERT' as const, format: 'NDJSON', schema: 'demo.Person' }], context: {} };
      await store.create(config, { id: 'beside-a-single-write', spec });
      expect((await store.claim(config, 'me', 60_000))?.id).to.equal('beside-a-single-write');
      // A single write in progress: it has written hot1 and holds its row lock.
      await single.query('BEGIN');
      await single.query(`UPDATE demo.demo_person SET age = 77 WHERE id = 'hot1'`);
      const loading = store.loadChunk(config, {
        transaction: 'beside-a-single-write',
        owner: 'me',
        leaseMs: 60_000,
        schema: 'demo.Person',
        operation: 'UPSERT',
        records: [
          { id: 'fresh-1', data: { name: 'bulk' }, row: 1 },
          { id: 'hot1', data: { name: 'bulk' }, row: 2 },
        ],
        from: { action: 0, file: 0, row: 0 },
        to: { action: 0, file: 0, row: 2 },
        progress: { ...emptyProgress(), rowsRead: 2 },
        maxErrors: 10,
      });
      // The chunk now waits for hot1's row lock (watched from outside the single write's
      // transaction: inside it, pg_stat_activity answers from a snapshot taken at its first read).
      for (let i = 0; ; i++) {
        const waiting = await db.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()`);
        if (waiting.rows[0].n > 0) break;
        expect(i, 'the chunk never waited for the row lock').to.be.lessThan(200);
        await new Promise((r) => setTimeout(r, 20));
      }
      // The lock a change-log reader numbers changes under is free: writers, bulk ones included, never
      // take it. The chunk holding it would wait on hot1 for ever, so this would fail on lock_timeout.
      await single.query(`SET LOCAL lock_timeout = '3s'`);
      await single.query('SELECT pg_advisory_xact_lock(hashtext($1::text))', [changeLockKey('demo')]);
      await single.query('COMMIT');
      expect((await loading).kind).to.equal('committed');
      const hot = await db.query(`SELECT name, age FROM demo.demo_person WHERE id = 'hot1'`);
      expect(hot.rows[0], 'an UPSERT replaces the record, after the single write').to.deep.equal({ name: 'bulk', age: null });
    } finally {
      await single.query('ROLLBACK').catch(() => undefined);
      await single.end();
      await driver.close();
    }
  });

  /**
   * A chunk of `ids` (UPSERT, name "bulk") loaded while `concurrent` (a single write's statements)
   * is open in another transaction, which commits once the chunk waits for it: its part's
   * statement has taken its snapshot before that write and meets it.
   * Answers the chunk's outcome and, per id, the live version and the change log's versions.
   */
  async function chunkRacing(transaction: string, ids: string[], concurrent: string[]) {
    await dp.dataPlane.runner.stop(); // this test claims its transaction itself
    const config = dp.dataPlane.store.dataset('demo')!.config;
    const driver = new PostgresDriver({ logger: pino({ level: 'silent' }), settings: dataPlaneSettings({ DATABASE_URL: dp.databaseUrl }) });
    const single = new pg.Client({ connectionString: dp.databaseUrl });
    await single.connect();
    try {
      const store = driver.bulkLoad!;
      const spec = { actions: [{ locationUri: 'file:///x', operation: 'UPSERT' as const, format: 'NDJSON', schema: 'demo.Person' }], context: {} };
      await store.create(config, { id: transaction, spec });
      expect((await store.claim(config, 'me', 60_000))?.id).to.equal(transaction);
      await single.query('BEGIN');
      for (const statement of concurrent) await single.query(statement);
      const loading = store.loadChunk(config, {
        transaction,
        owner: 'me',
        leaseMs: 60_000,
        schema: 'demo.Person',
        operation: 'UPSERT',
        records: ids.map((id, i) => ({ id, data: { name: 'bulk' }, row: i + 1 })),
        from: { action: 0, file: 0, row: 0 },
        to: { action: 0, file: 0, row: ids.length },
        progress: { ...emptyProgress(), rowsRead: ids.length },
        maxErrors: 10,
      });
      for (let i = 0; ; i++) {
        const waiting = await db.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()`);
        if (waiting.rows[0].n > 0) break;
        expect(i, 'the chunk never waited for the single write').to.be.lessThan(500);
        await new Promise((r) => setTimeout(r, 20));
      }
      await single.query('COMMIT');
      const outcome = await loading;
      const live = (await db.query(`SELECT id, version, name FROM demo.demo_person WHERE id = ANY($1)`, [ids])).rows;
      const history = (await db.query(`SELECT id, version, name, deleted_at IS NOT NULL AS tombstone FROM demo.demo_person_history WHERE id = ANY($1) ORDER BY id, version`, [ids])).rows;
      const changes = (await db.query(`SELECT record_id, version, op FROM demo."das$changes" WHERE record_id = ANY($1) ORDER BY seq`, [ids])).rows;
      return { outcome, live, history, changes };
    } finally {
      await single.query('ROLLBACK').catch(() => undefined);
      await single.end();
      await driver.close();
    }
  }

  const createOf = (id: string) => [
    `INSERT INTO demo.demo_person (id, version, created_at, updated_at, name) VALUES ('${id}', 1, now(), now(), 'single')`,
    `INSERT INTO demo.demo_person_history (id, version, created_at, updated_at, name) VALUES ('${id}', 1, now(), now(), 'single')`,
    `INSERT INTO demo."das$changes" (schema_name, record_id, version, op) VALUES ('demo.Person', '${id}', 1, 'CREATE')`,
  ];

  it("a single write that creates one of a chunk's new ids after the chunk's statement began: the chunk meets it and writes the next version, nothing twice", async () => {
    const { outcome, live, history, changes } = await chunkRacing('racing-a-create', ['raced-new', 'raced-create'], createOf('raced-create'));
    expect(outcome.kind).to.equal('committed');
    expect(outcome.kind === 'committed' && outcome.progress).to.include({ rowsWritten: 2, rowsRejected: 0 });
    expect(live).to.have.deep.members([
      { id: 'raced-new', version: 1, name: 'bulk' },
      { id: 'raced-create', version: 2, name: 'bulk' },
    ]);
    expect(history).to.deep.equal([
      { id: 'raced-create', version: 1, name: 'single', tombstone: false },
      { id: 'raced-create', version: 2, name: 'bulk', tombstone: false },
      { id: 'raced-new', version: 1, name: 'bulk', tombstone: false },
    ]);
    expect(changes.filter((c) => c.record_id === 'raced-create')).to.deep.equal([
      { record_id: 'raced-create', version: 1, op: 'CREATE' },
      { record_id: 'raced-create', version: 2, op: 'UPDATE' },
    ]);
    expect(changes.filter((c) => c.record_id === 'raced-new')).to.deep.equal([{ record_id: 'raced-new', version: 1, op: 'CREATE' }]);
  });

  it("a single write that deletes a record a chunk updates, after the chunk's statement began: the chunk settles the race (its statement again, under a savepoint) and creates it again with the next version", async () => {
    const created = await api({ path: '/demo', body: { create: { schema: 'demo.Person', id: 'raced-delete', data: { name: 'before' } } } });
    expect(created.status, created.text).to.be.oneOf([200, 201]);
    const { outcome, live, history, changes } = await chunkRacing('racing-a-delete', ['raced-delete', 'raced-new-2'], [
      `DELETE FROM demo.demo_person WHERE id = 'raced-delete'`,
      `INSERT INTO demo.demo_person_history (id, version, created_at, updated_at, deleted_at) VALUES ('raced-delete', 2, now(), now(), now())`,
      `INSERT INTO demo."das$changes" (schema_name, record_id, version, op) VALUES ('demo.Person', 'raced-delete', 2, 'DELETE')`,
    ]);
    expect(outcome.kind === 'committed' && outcome.progress).to.include({ rowsWritten: 2, rowsRejected: 0 });
    expect(live).to.have.deep.members([
      { id: 'raced-delete', version: 3, name: 'bulk' },
      { id: 'raced-new-2', version: 1, name: 'bulk' },
    ]);
    expect(history.filter((h) => h.id === 'raced-delete').map((h) => [h.version, h.name, h.tombstone])).to.deep.equal([
      [1, 'before', false],
      [2, null, true],
      [3, 'bulk', false],
    ]);
    expect(changes.filter((c) => c.record_id === 'raced-delete').map((c) => `${c.version} ${c.op}`)).to.deep.equal(['1 CREATE', '2 DELETE', '3 CREATE']);
    expect(changes.filter((c) => c.record_id === 'raced-new-2')).to.have.length(1);
  });
});
