/**
 * Durability of bulk loads on DynamoDB: a data plane process killed (SIGKILL) mid-load leaves its
 * transaction RUNNING under a lease in the transactions table; another data plane claims it once the
 * lease expires and finishes it from the last committed chunk — every row once, every record at
 * version 1 with exactly one history item (the chunk running at the kill is written again, in place).
 */
import { expect } from 'chai';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parse, stringify } from 'yaml';
import { GetCommand, ScanCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { transactionsTable } from '../src/drivers/dynamodb/bulk-load.js';
import { createClient } from '../src/drivers/dynamodb/client.js';
import { schemaTables } from '../src/drivers/dynamodb/tables.js';
import type { DatasetConfig } from '../../model/types.js';
import { adminClient, startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { dynamoDbLocation, dynamoDbSecrets } from '../test-support/dynamodb.js';
import { client } from '../test-support/http.js';
import { startMain, waitReady, type MainProcess } from '../test-support/main-process.js';
import { freshDatabase } from '../test-support/postgres.js';
import { transactionManifests, waitForTransaction, writePeopleParquet } from '../test-support/transactions.js';
import { freePort } from '../src/db/embedded.js';
import { dataPlaneSettings } from '../../model/settings/dataplane.js';

describe('transactions on DynamoDB: a data plane killed mid-load, the load finished by another', function () {
  this.timeout(180_000);
  const ROWS = 3000;
  let databaseUrl: string;
  let dataDir: string;
  let manifests: string;
  let secretsDir: string;
  /** The dataset's location, as the driver's table names and client need it. */
  let config: DatasetConfig;
  let first: MainProcess | undefined;
  let second: TestDataPlane | undefined;
  const bulkEnv = { DAS_BULK_CHUNK_ROWS: '200', DAS_BULK_LEASE_MS: '1500', DAS_BULK_POLL_MS: '100' };

  /** Every item of a table, page by page. */
  const scanAll = async (doc: DynamoDBDocumentClient, table: string) => {
    const items: Record<string, unknown>[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await doc.send(new ScanCommand({ TableName: table, ConsistentRead: true, ExclusiveStartKey: start, ProjectionExpression: 'id, version' }));
      items.push(...(page.Items ?? []));
      start = page.LastEvaluatedKey;
    } while (start);
    return items;
  };

  before(async () => {
    databaseUrl = await freshDatabase();
    dataDir = mkdtempSync(join(tmpdir(), 'das-ddb-durable-'));
    const secrets = await dynamoDbSecrets();
    secretsDir = secrets.dir;
    manifests = transactionManifests();
    const file = join(manifests, 'dataset-demo.yaml');
    const doc = parse(readFileSync(file, 'utf8'));
    doc.spec.location = { kind: 'dynamodb', ...(await dynamoDbLocation(secrets.name)) };
    config = { id: 'demo', location: doc.spec.location } as DatasetConfig;
    delete doc.spec.queries['demo.HeadcountByEmployer'];
    delete doc.spec.auth.iam.rawSqlEndpointEnabled;
    writeFileSync(file, stringify(doc));
    writePeopleParquet(dataDir, 'big.parquet', ROWS, { age: true, rowGroupSize: 1000 });
  });
  after(async () => {
    first?.child.kill('SIGKILL');
    await second?.stop();
  });

  it('SIGKILL during the load: the second data plane claims it after the lease and finishes it exactly once', async () => {
    const port = await freePort();
    first = startMain({ DATABASE_URL: databaseUrl, DATA_DIR: dataDir, DAS_MANIFESTS: manifests, DAS_SECRETS_DIR: secretsDir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...bulkEnv });
    const url = `http://127.0.0.1:${port}`;
    await waitReady(url, first);
    const api = client(url, { host: 'iam.localhost', headers: { authorization: 'Proxy demo-admin' } });
    const action = { locationUri: pathToFileURL(join(dataDir, 'imports', 'big.parquet')).href, operation: 'UPSERT', format: 'PARQUET', schema: 'demo.Person' };
    let created = await api({ path: '/demo', body: { create: { schema: 'Transaction', data: { actions: [action] } } } });
    // 503 until the dataset's tables exist.
    for (let i = 0; i < 200 && created.status === 503; i++) {
      await new Promise((r) => setTimeout(r, 100));
      created = await api({ path: '/demo', body: { create: { schema: 'Transaction', data: { actions: [action] } } } });
    }
    expect(created.status, created.text).to.equal(202);
    const running = await waitForTransaction(api, created.json.id, (tx) => tx.status === 'RUNNING' && tx.actions[0].rowsWritten >= 600, 60_000);
    first.child.kill('SIGKILL');
    await first.exited;

    const doc = createClient(config, dataPlaneSettings({ DAS_SECRETS_DIR: secretsDir })).doc;
    try {
      const { Item: atKill } = await doc.send(new GetCommand({ TableName: transactionsTable(config), Key: { id: created.json.id }, ConsistentRead: true }));
      expect(atKill).to.include({ status: 'RUNNING', leaseOwner: running.lease.owner });
      const writtenAtKill = JSON.parse(String(atKill!.progress))[0].rowsWritten;
      expect(writtenAtKill, 'killed before the end').to.be.lessThan(ROWS);

      second = await startTestDataPlane({ manifests, databaseUrl, dataDir, env: { ...bulkEnv, DAS_SECRETS_DIR: secretsDir } });

      const api2 = adminClient(second);
      const done = await waitForTransaction(api2, created.json.id, undefined, 90_000);
      expect(done.status, JSON.stringify(done)).to.equal('SUCCEEDED');
      expect(done.actions[0]).to.include({ rowsRead: ROWS, rowsWritten: ROWS, rowsRejected: 0 });
      expect(done.startedAt).to.equal(running.startedAt);
      const tables = schemaTables(config, 'demo.Person');
      const live = await scanAll(doc, tables.records);
      expect(live).to.have.length(ROWS);
      expect(new Set(live.map((i) => i.id)).size).to.equal(ROWS);
      expect(live.every((i) => i.version === 1)).to.equal(true);
      const history = await scanAll(doc, tables.history);
      expect(history, 'one history item a row: the chunk cut by the kill was rewritten in place').to.have.length(ROWS);
      expect(history.every((i) => i.version === 1)).to.equal(true);
    } finally {
      doc.destroy();
    }
  });
});
