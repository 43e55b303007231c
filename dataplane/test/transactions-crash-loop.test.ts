/**
 * The crash-loop guard, through the real entry point: two data planes (main.ts as child
 * processes) on one PostgreSQL. Whichever replica holds a load's lease is taken down (SIGKILL)
 * mid-load; another claims the load when the lease runs out. After
 * DAS_BULK_MAX_LOST_LEASES lost leases the load is FAILED ("a replica stopped while loading this
 * file") instead of being claimed again, and the replicas left stay up.
 */
import { expect } from 'chai';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { freePort } from '../src/db/embedded.js';
import { client } from '../test-support/http.js';
import { startMain, waitReady, type MainProcess } from '../test-support/main-process.js';
import { freshDatabase } from '../test-support/postgres.js';
import { transactionManifests, waitForTransaction, writePeopleParquet } from '../test-support/transactions.js';

describe('transactions: a load whose replicas keep stopping FAILs after DAS_BULK_MAX_LOST_LEASES', function () {
  this.timeout(240_000);
  const ROWS = 60_000;
  const MAX_LOST = 2;
  const replicas: { main: MainProcess; url: string }[] = [];
  let databaseUrl: string;
  let dataDir: string;
  let manifests: string;
  const env = () => ({
    DATABASE_URL: databaseUrl,
    DATA_DIR: dataDir,
    DAS_MANIFESTS: manifests,
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    DAS_BULK_CHUNK_ROWS: '500',
    DAS_BULK_LEASE_MS: '1500',
    DAS_BULK_POLL_MS: '100',
    DAS_BULK_MAX_LOST_LEASES: String(MAX_LOST),
  });
  const startReplica = async () => {
    const port = await freePort();
    const main = startMain({ ...env(), PORT: String(port) });
    const url = `http://127.0.0.1:${port}`;
    await waitReady(url, main);
    replicas.push({ main, url });
  };
  const apiOf = (url: string) => client(url, { host: 'iam.localhost', headers: { authorization: 'Proxy demo-admin' } });

  before(async () => {
    databaseUrl = await freshDatabase();
    dataDir = mkdtempSync(join(tmpdir(), 'das-crashloop-'));
    manifests = transactionManifests();
    writePeopleParquet(dataDir, 'big.parquet', ROWS);
  });
  after(() => {
    for (const r of replicas) r.main.child.kill('SIGKILL');
  });

  it('the replica holding the lease is killed mid-load, twice; the next claim FAILs the load and the replica left stays up', async () => {
    // Three replicas, started at once: two are taken down, the third makes the claim that FAILs the load.
    await Promise.all([startReplica(), startReplica(), startReplica()]);
    const api = apiOf(replicas[0].url);
    const created = await api({
      path: '/demo',
      body: { create: { schema: 'Transaction', data: { actions: [{ locationUri: pathToFileURL(join(dataDir, 'imports', 'big.parquet')).href, operation: 'UPSERT', format: 'PARQUET', schema: 'demo.Person' }] } } },
    });
    expect(created.status, created.text).to.equal(202);
    const id = created.json.id as string;
    let kills = 0;
    let written = 0;
    const killedOwners = new Set<string>();
    for (;;) {
      const live = replicas.find((r) => r.main.child.exitCode === null && r.main.child.signalCode === null)!;
      const tx = await waitForTransaction(
        apiOf(live.url),
        id,
        // A lease of a replica already taken down is not a new claim: rows it wrote between the last
        // look and its kill would otherwise be taken for the next holder's progress.
        (t) => t.status === 'FAILED' || t.status === 'SUCCEEDED' || (t.status === 'RUNNING' && t.lease && !killedOwners.has(String(t.lease.owner)) && t.actions[0].rowsWritten > written),
        60_000,
      );
      if (tx.status !== 'RUNNING') {
        expect(tx.status, JSON.stringify(tx)).to.equal('FAILED');
        expect(tx.error).to.match(/^a replica stopped while loading this file \(file:.*big\.parquet, file 1 of the location, after row \d+\) 2 times/);
        expect(tx.actions[0].rowsWritten, 'not loaded to the end').to.be.lessThan(ROWS);
        break;
      }
      // Taken down mid-load: the replica whose process holds the lease (its owner is "<pid>-<random>").
      written = tx.actions[0].rowsWritten;
      const holder = replicas.find((r) => String(r.main.child.pid) === String(tx.lease.owner).split('-')[0]);
      expect(holder, `a replica holds the lease ${tx.lease.owner}`).to.not.equal(undefined);
      killedOwners.add(String(tx.lease.owner));
      holder!.main.child.kill('SIGKILL');
      await holder!.main.exited;
      kills += 1;
      expect(kills, 'claimed again after the limit').to.be.at.most(MAX_LOST);
    }
    expect(kills).to.equal(MAX_LOST);
    // The replicas left were not taken down by the failed load, and answer.
    const alive = replicas.filter((r) => r.main.child.exitCode === null && r.main.child.signalCode === null);
    expect(alive).to.have.length(1);
    for (const r of alive) expect((await apiOf(r.url)({ path: `/demo/Transaction/${id}` })).json.status).to.equal('FAILED');
  });
});
