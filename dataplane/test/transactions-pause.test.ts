/**
 * Pausing a dataset (`spec.paused: true`, here by editing its manifest, which the files source
 * hot-reloads): data requests answer 503 DATASET_PAUSED with Retry-After, storage and config stay,
 * a load under way stops at its next chunk (given back, PENDING, nothing more written) and
 * continues on resume, finishing with every row written once.
 */
import { expect } from 'chai';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { parse, stringify } from 'yaml';
import { adminClient, startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { transactionManifests, waitForTransaction, writePeopleParquet } from '../test-support/transactions.js';

describe('transactions: pausing a dataset during a load', function () {
  this.timeout(120_000);
  const ROWS = 40_000;
  let dp: TestDataPlane;
  let manifests: string;
  let db: pg.Client;

  const setPaused = (paused: boolean) => {
    const file = join(manifests, 'dataset-demo.yaml');
    const doc = parse(readFileSync(file, 'utf8'));
    doc.spec.paused = paused;
    writeFileSync(file, stringify(doc));
  };

  before(async () => {
    manifests = transactionManifests();
    dp = await startTestDataPlane({ manifests, env: { DAS_BULK_CHUNK_ROWS: '500', DAS_BULK_POLL_MS: '100' } });
    writePeopleParquet(dp.dataDir, 'people.parquet', ROWS, { prefix: 'q' });
    db = new pg.Client({ connectionString: dp.databaseUrl });
    await db.connect();
  });
  after(async () => {
    await db?.end();
    await dp?.stop();
  });

  it('answers 503 DATASET_PAUSED while paused, stops the load at a chunk and finishes it on resume', async () => {
    const api = adminClient(dp);
    const created = await api({
      path: '/demo',
      body: { create: { schema: 'Transaction', data: { actions: [{ locationUri: pathToFileURL(join(dp.dataDir, 'imports', 'people.parquet')).href, operation: 'UPSERT', format: 'PARQUET', schema: 'demo.Person' }] } } },
    });
    expect(created.status, created.text).to.equal(202);
    await waitForTransaction(api, created.json.id, (tx) => tx.actions[0].rowsWritten >= 1000);
    setPaused(true);

    // The data plane answers paused once it has reloaded the manifest.
    const deadline = Date.now() + 20_000;
    let res = await api({ path: '/demo/demo.Person/q1' });
    while (!(res.status === 503 && res.json?.error?.code === 'DATASET_PAUSED') && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      res = await api({ path: '/demo/demo.Person/q1' });
    }
    expect(res.status, res.text).to.equal(503);
    expect(res.json.error.code).to.equal('DATASET_PAUSED');
    expect(res.headers['retry-after']).to.be.a('string');

    // Given back at the next chunk, and nothing more written while paused.
    const given = async () => (await db.query('SELECT status, progress FROM demo.das_transactions WHERE id = $1', [created.json.id])).rows[0];
    let row = await given();
    while (row.status !== 'PENDING' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      row = await given();
    }
    expect(row.status).to.equal('PENDING');
    const writtenWhenPaused = row.progress[0].rowsWritten;
    expect(writtenWhenPaused).to.be.lessThan(ROWS);
    await new Promise((r) => setTimeout(r, 1000));
    expect((await given()).progress[0].rowsWritten).to.equal(writtenWhenPaused);
    const stored = await db.query('SELECT count(*)::int AS n FROM demo.demo_person');
    expect(stored.rows[0].n).to.equal(writtenWhenPaused);

    setPaused(false);
    const done = await waitForTransaction(api, created.json.id, undefined, 60_000).catch(async (err) => {
      throw new Error(`${(err as Error).message}; last answer ${(await api({ path: `/demo/Transaction/${created.json.id}` })).text}`);
    });
    expect(done.status).to.equal('SUCCEEDED');
    expect(done.actions[0]).to.include({ rowsRead: ROWS, rowsWritten: ROWS });
    const live = await db.query('SELECT count(*)::int AS n, max(version) AS v FROM demo.demo_person');
    expect(live.rows[0]).to.deep.equal({ n: ROWS, v: 1 });
    const history = await db.query('SELECT count(*)::int AS n FROM demo.demo_person_history');
    expect(history.rows[0].n).to.equal(ROWS);
  });
});
