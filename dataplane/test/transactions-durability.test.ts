/**
 * Durability of bulk loads: a data plane process killed (SIGKILL) mid-load leaves its transaction
 * RUNNING with a lease; another data plane on the same database claims it once the lease expires
 * and finishes it from the last committed chunk, with no row or version written twice. And at the
 * store level: a chunk offered again (same start cursor) writes nothing, and a replica that lost
 * its lease writes nothing.
 */
import { expect } from 'chai';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import pino from 'pino';
import { PostgresDriver } from '../src/drivers/postgres/driver.js';
import { emptyProgress } from '../src/drivers/postgres/bulk-load.js';
import { partOf } from '../src/drivers/postgres/bulk-load-parts.js';
import { adminClient, startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { client } from '../test-support/http.js';
import { startMain, waitReady, type MainProcess } from '../test-support/main-process.js';
import { freshDatabase } from '../test-support/postgres.js';
import { transactionManifests, waitForTransaction, writePeopleParquet } from '../test-support/transactions.js';
import { freePort } from '../src/db/embedded.js';
import { dataPlaneSettings } from '../../model/settings/dataplane.js';

describe('transactions: a data plane killed mid-load, the load finished by another', function () {
  this.timeout(180_000);
  const ROWS = 60_000;
  let databaseUrl: string;
  let dataDir: string;
  let manifests: string;
  let first: MainProcess | undefined;
  let second: TestDataPlane | undefined;
  let db: pg.Client;
  const bulkEnv = { DAS_BULK_CHUNK_ROWS: '500', DAS_BULK_LEASE_MS: '1500', DAS_BULK_POLL_MS: '100' };

  before(async () => {
    databaseUrl = await freshDatabase();
    dataDir = mkdtempSync(join(tmpdir(), 'das-durable-'));
    manifests = transactionManifests();
    writePeopleParquet(dataDir, 'big.parquet', ROWS, { age: true });
    db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
  });
  after(async () => {
    first?.child.kill('SIGKILL');
    await second?.stop();
    await db?.end();
  });

  it('SIGKILL during the load: the second data plane claims it after the lease and finishes it exactly once', async () => {
    const port = await freePort();
    first = startMain({ DATABASE_URL: databaseUrl, DATA_DIR: dataDir, DAS_MANIFESTS: manifests, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...bulkEnv });
    const url = `http://127.0.0.1:${port}`;
    await waitReady(url, first);
    const api = client(url, { host: 'iam.localhost', headers: { authorization: 'Proxy demo-admin' } });
    const created = await api({
      path: '/demo',
      body: { create: { schema: 'Transaction', data: { actions: [{ locationUri: pathToFileURL(join(dataDir, 'imports', 'big.parquet')).href, operation: 'UPSERT', format: 'PARQUET', schema: 'demo.Person' }] } } },
    });
    expect(created.status, created.text).to.equal(202);
    const running = await waitForTransaction(api, created.json.id, (tx) => tx.status === 'RUNNING' && tx.actions[0].rowsWritten >= 2000, 60_000);
    first.child.kill('SIGKILL');
    await first.exited;
    const atKill = (await db.query('SELECT status, lease_owner, progress FROM demo.das_transactions WHERE id = $1', [created.json.id])).rows[0];
    expect(atKill.status).to.equal('RUNNING');
    expect(atKill.lease_owner).to.equal(running.lease.owner);
    const writtenAtKill = atKill.progress[0].rowsWritten;
    expect(writtenAtKill, 'killed before the end').to.be.lessThan(ROWS);

    second = await startTestDataPlane({ manifests, databaseUrl, dataDir, env: bulkEnv });
    const api2 = adminClient(second);
    const done = await waitForTransaction(api2, created.json.id, undefined, 60_000);
    expect(done.status, JSON.stringify(done)).to.equal('SUCCEEDED');
    expect(done.actions[0]).to.include({ rowsRead: ROWS, rowsWritten: ROWS, rowsRejected: 0 });
    expect(done.startedAt).to.equal(running.startedAt);
    const live = await db.query('SELECT count(*)::int AS n, count(DISTINCT id)::int AS ids, max(version) AS v FROM demo.demo_person');
    expect(live.rows[0]).to.deep.equal({ n: ROWS, ids: ROWS, v: 1 });
    const history = await db.query('SELECT count(*)::int AS n, max(version) AS v FROM demo.demo_person_history');
    expect(history.rows[0]).to.deep.equal({ n: ROWS, v: 1 });
  });

  it('a chunk offered twice is written once; a replica without the lease writes nothing', async () => {
    const config = second!.dataPlane.store.dataset('demo')!.config;
    const driver = new PostgresDriver({ logger: pino({ level: 'silent' }), settings: dataPlaneSettings({ DATABASE_URL: databaseUrl }) });
    try {
      const store = driver.bulkLoad;
      // Created and claimed here: the data plane's runner must not take it first.
      await second!.dataPlane.runner.stop();
      const spec = { actions: [{ locationUri: 'file:///x', operation: 'UPSERT' as const, format: 'NDJSON', schema: 'demo.Company' }], context: {} };
      await store.create(config, { id: 'replay', spec });
      const claimed = await store.claim(config, 'me', 60_000);
      expect(claimed?.id).to.equal('replay');
      const chunk = {
        transaction: 'replay',
        owner: 'me',
        leaseMs: 60_000,
        schema: 'demo.Company',
        operation: 'UPSERT' as const,
        records: [
          { id: 'c1', data: { name: 'one' }, row: 1 },
          { id: 'c2', data: { name: 'two' }, row: 2 },
        ],
        from: { action: 0, file: 0, row: 0 },
        to: { action: 0, file: 0, row: 2 },
        progress: { ...emptyProgress(), rowsRead: 2 },
        maxErrors: 10,
      };
      expect((await store.loadChunk(config, chunk)).kind).to.equal('committed');
      expect((await store.loadChunk(config, chunk)).kind).to.equal('already-committed');
      expect((await store.loadChunk(config, { ...chunk, owner: 'someone-else', from: chunk.to, to: { action: 0, file: 0, row: 4 } })).kind).to.equal('lease-lost');
      const rows = await db.query(`SELECT id, version FROM demo.demo_company_history WHERE id IN ('c1', 'c2') ORDER BY id`);
      expect(rows.rows).to.deep.equal([
        { id: 'c1', version: 1 },
        { id: 'c2', version: 1 },
      ]);
      const stored = await store.get(config, 'replay');
      expect(stored?.cursor).to.deep.equal(chunk.to);
      expect(stored?.progress[0]).to.include({ rowsRead: 2, rowsWritten: 2 });
    } finally {
      await driver.close();
    }
  });

  /** A chunk of demo.Company rows from + 1 to `to` of file 0 (rows count from 1), as the runner offers it. */
  const companies = (transaction: string, owner: string, from: number, to: number, operation: 'UPSERT' | 'INSERT' = 'UPSERT') => ({
    transaction,
    owner,
    leaseMs: 60_000,
    schema: 'demo.Company',
    operation,
    records: Array.from({ length: to - from }, (_, i) => ({ id: `${transaction}-${from + i + 1}`, data: { name: `n${from + i + 1}` }, row: from + i + 1 })),
    from: { action: 0, file: 0, row: from },
    to: { action: 0, file: 0, row: to },
    progress: { ...emptyProgress(), rowsRead: to - from },
    maxErrors: 10,
  });
  const versions = async (prefix: string) =>
    (await db.query(`SELECT count(*)::int AS n, count(DISTINCT id)::int AS ids, max(version) AS v FROM demo.demo_company_history WHERE id LIKE $1`, [`${prefix}-%`])).rows[0];

  it("killed after a chunk's parts wrote and before the chunk committed: offered again, even cut differently, nothing is written twice and the counts come out exact", async () => {
    const config = second!.dataPlane.store.dataset('demo')!.config;
    const driver = new PostgresDriver({ logger: pino({ level: 'silent' }), settings: dataPlaneSettings({ DATABASE_URL: databaseUrl, DAS_BULK_WRITERS: '3' }) });
    try {
      const store = driver.bulkLoad;
      await second!.dataPlane.runner.stop();
      const spec = { actions: [{ locationUri: 'file:///x', operation: 'UPSERT' as const, format: 'NDJSON', schema: 'demo.Company' }], context: {} };
      await store.create(config, { id: 'torn', spec });
      expect((await store.claim(config, 'me', 60_000))?.id).to.equal('torn');
      // The process dies right after every part of rows 1 to 30 committed: the chunk's own commit never runs.
      const commit = Reflect.get(store, 'commitChunk');
      Reflect.set(store, 'commitChunk', async () => {
        throw Object.assign(new Error('killed'), { code: '57P01' });
      });
      await store.loadChunk(config, companies('torn', 'me', 0, 30)).catch(() => undefined);
      Reflect.deleteProperty(store, 'commitChunk');
      expect(Reflect.get(store, 'commitChunk')).to.equal(commit);
      expect(await versions('torn'), 'the parts committed').to.deep.equal({ n: 30, ids: 30, v: 1 });
      expect((await store.get(config, 'torn'))?.cursor, 'the chunk did not').to.deep.equal({ action: 0, file: 0, row: 0 });
      // The runner that continues cuts its chunks at 20 rows: rows 1 to 20, then 21 to 40.
      const first = await store.loadChunk(config, companies('torn', 'me', 0, 20));
      expect(first.kind).to.equal('committed');
      const next = await store.loadChunk(config, { ...companies('torn', 'me', 20, 40), progress: { ...(first as { progress: ReturnType<typeof emptyProgress> }).progress, rowsRead: 40 } });
      expect(next.kind).to.equal('committed');
      expect(await versions('torn'), 'every row once, at version 1').to.deep.equal({ n: 40, ids: 40, v: 1 });
      const stored = await store.get(config, 'torn');
      expect(stored?.cursor).to.deep.equal({ action: 0, file: 0, row: 40 });
      expect(stored?.progress[0]).to.include({ rowsRead: 40, rowsWritten: 40, rowsRejected: 0 });
    } finally {
      await driver.close();
    }
  });

  it('a transaction keeps the parts it started with when a replica with another DAS_BULK_WRITERS continues it; INSERT refusals are counted once', async () => {
    const config = second!.dataPlane.store.dataset('demo')!.config;
    const two = new PostgresDriver({ logger: pino({ level: 'silent' }), settings: dataPlaneSettings({ DATABASE_URL: databaseUrl, DAS_BULK_WRITERS: '2' }) });
    const five = new PostgresDriver({ logger: pino({ level: 'silent' }), settings: dataPlaneSettings({ DATABASE_URL: databaseUrl, DAS_BULK_WRITERS: '5' }) });
    try {
      await second!.dataPlane.runner.stop();
      const spec = { actions: [{ locationUri: 'file:///x', operation: 'INSERT' as const, format: 'NDJSON', schema: 'demo.Company' }], context: {} };
      await two.bulkLoad.create(config, { id: 'moved', spec });
      expect((await two.bulkLoad.claim(config, 'me', 60_000))?.id).to.equal('moved');
      const first = await two.bulkLoad.loadChunk(config, companies('moved', 'me', 0, 50, 'INSERT'));
      expect(first.kind).to.equal('committed');
      const parts = async () => (await db.query(`SELECT count(*)::int AS n FROM demo.das_transaction_parts WHERE transaction_id = 'moved'`)).rows[0].n;
      expect(await parts()).to.equal(2);
      // The other replica offers rows 51 to 100, plus two ids the first chunk inserted (refused).
      const chunk = companies('moved', 'me', 50, 100, 'INSERT');
      chunk.records.push({ id: 'moved-3', data: { name: 'again' }, row: 101 }, { id: 'moved-7', data: { name: 'again' }, row: 102 });
      const second_ = await five.bulkLoad.loadChunk(config, { ...chunk, to: { action: 0, file: 0, row: 102 }, progress: { ...(first as { progress: ReturnType<typeof emptyProgress> }).progress, rowsRead: 102 } });
      expect(second_.kind).to.equal('committed');
      expect(await parts(), 'still the 2 parts it started with').to.equal(2);
      expect(await versions('moved')).to.deep.equal({ n: 100, ids: 100, v: 1 });
      const progress = (second_ as { progress: ReturnType<typeof emptyProgress> }).progress;
      expect(progress).to.include({ rowsRead: 102, rowsWritten: 100, rowsRejected: 2 });
      expect(progress.errors).to.deep.equal([
        { row: 101, message: 'a record with id "moved-3" exists' },
        { row: 102, message: 'a record with id "moved-7" exists' },
      ]);
      await five.bulkLoad.finish(config, 'moved', 'me', { status: 'SUCCEEDED', progress: [progress] });
      expect(await parts(), 'a finished transaction keeps no parts').to.equal(0);
    } finally {
      await two.close();
      await five.close();
    }
  });

  it("a load that fails after one part of a chunk committed still counts that part's rows", async () => {
    const config = second!.dataPlane.store.dataset('demo')!.config;
    const driver = new PostgresDriver({ logger: pino({ level: 'silent' }), settings: dataPlaneSettings({ DATABASE_URL: databaseUrl, DAS_BULK_WRITERS: '2' }) });
    try {
      const store = driver.bulkLoad;
      await second!.dataPlane.runner.stop();
      const spec = { actions: [{ locationUri: 'file:///x', operation: 'UPSERT' as const, format: 'NDJSON', schema: 'demo.Person' }], context: {} };
      await store.create(config, { id: 'half', spec });
      expect((await store.claim(config, 'me', 60_000))?.id).to.equal('half');
      // Part 1's rows are good; part 0 has a value its column cannot hold (the runner's mapping would
      // have refused it; here it reaches PostgreSQL, which fails that part only).
      const ids = Array.from({ length: 40 }, (_, i) => `half-${i}`);
      const records = ids.map((id, i) => ({ id, data: { name: id, age: partOf(id, 2) === 0 && i % 7 === 0 ? 'not a number' : i }, row: i + 1 }));
      const good = records.filter((r) => partOf(r.id, 2) === 1).length;
      expect(good).to.be.within(5, 35);
      const failed = await store
        .loadChunk(config, { ...companies('half', 'me', 0, 40), schema: 'demo.Person', records })
        .then(() => undefined, (e: unknown) => e);
      expect((failed as { failure?: { kind: string } })?.failure?.kind).to.equal('invalid-value');
      await store.finish(config, 'half', 'me', { status: 'FAILED', error: 'load failed', progress: [{ ...emptyProgress(), rowsRead: 40 }] });
      const stored = await store.get(config, 'half');
      expect(stored?.status).to.equal('FAILED');
      expect(stored?.progress[0]).to.include({ rowsRead: 40, rowsWritten: good });
      const live = await db.query(`SELECT count(*)::int AS n FROM demo.demo_person WHERE id LIKE 'half-%'`);
      expect(live.rows[0].n, 'the rows the count says were written').to.equal(good);
    } finally {
      await driver.close();
    }
  });
});
