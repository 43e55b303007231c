/**
 * `npm run bench:dynamodb-bulk`: a Parquet UPSERT of BENCH_ROWS shop.Customer rows (default 50,000)
 * through a transaction on a DynamoDB dataset (examples/dynamodb; the data plane a child process as
 * `npm start` runs it) against the same BatchWriteItem calls made directly with the AWS SDK, side
 * by side in one run on one DynamoDB Local:
 *
 *   bare, same items   each row's live item and its history item (what the data plane writes),
 *                      25 items a call, the same number of calls in flight (8)
 *   bare, live only    the live items alone (a loader that keeps no history)
 *
 * Rows/s of each and the data plane's ratio to them. Not a test: read the figures. DynamoDB Local
 * (Java, on the same cores) is the bottleneck, so the ratios say more than the rates.
 * BENCH_ROWS (50000), BENCH_ROW_GROUP (10000).
 */
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { parquetFile } from '../dataplane/test-support/transactions.js';
import { startDynamoDbLocal } from '../e2e/peers/dynamodb/peer.js';
import { freePort } from '../dataplane/src/db/embedded.js';
import { call } from '../dataplane/test-support/http.js';
import { startMain, waitReady } from '../dataplane/test-support/main-process.js';

const ROWS = Number(process.env.BENCH_ROWS ?? 50_000);
const ROW_GROUP = Number(process.env.BENCH_ROW_GROUP ?? 10_000);
const IN_FLIGHT = 8;
const HEADERS = { host: 'iam.localhost', authorization: 'Proxy shop-admin' };

async function main(): Promise<void> {
  const peer = await startDynamoDbLocal();
  const work = mkdtempSync(join(tmpdir(), 'das-bench-ddb-bulk-'));
  chmodSync(work, 0o755); // the data plane's embedded PostgreSQL runs as "postgres" when we are root
  const manifests = join(work, 'manifests');
  cpSync(join(import.meta.dirname, '../examples/dynamodb'), manifests, { recursive: true });
  const file = join(manifests, 'dataset-shop.yaml');
  writeFileSync(file, readFileSync(file, 'utf8').replace('endpoint: http://127.0.0.1:8000', `endpoint: ${peer.endpoint}`).replace('tablePrefix: local-', 'tablePrefix: bench-'));
  const dataDir = join(work, 'data');
  mkdirSync(join(dataDir, 'imports'), { recursive: true });
  const ids = Array.from({ length: ROWS }, (_, i) => `c${i}`);
  const names = ids.map((id) => `Customer ${id}`);
  const parquet = join(dataDir, 'imports', 'customers.parquet');
  writeFileSync(
    parquet,
    parquetFile(
      [
        { name: 'id', data: ids, type: 'STRING' },
        { name: 'name', data: names, type: 'STRING' },
      ],
      { rowGroupSize: ROW_GROUP },
    ),
  );
  const aws = { AWS_ACCESS_KEY_ID: peer.credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: peer.credentials.secretAccessKey, AWS_REGION: peer.region };
  const port = await freePort();
  const child = startMain({ ...aws, DATA_DIR: dataDir, DAS_MANIFESTS: manifests, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', DAS_BULK_POLL_MS: '200' });
  const url = `http://127.0.0.1:${port}`;
  const raw = new DynamoDBClient({ region: peer.region, endpoint: peer.endpoint, credentials: peer.credentials });
  const doc = DynamoDBDocumentClient.from(raw);
  try {
    await waitReady(url, child);
    for (let i = 0; i < 300 && (await call(url, { path: '/shop/shop.Customer/none', host: HEADERS.host, headers: { authorization: HEADERS.authorization } })).status !== 404; i++) {
      await new Promise((r) => setTimeout(r, 200));
    }

    // The transaction, from its create to SUCCEEDED.
    const started = Date.now();
    const res = await call(url, {
      path: '/shop',
      host: HEADERS.host,
      headers: { authorization: HEADERS.authorization },
      body: { create: { schema: 'Transaction', data: { actions: [{ locationUri: pathToFileURL(parquet).href, operation: 'UPSERT', format: 'PARQUET', schema: 'shop.Customer' }] } } },
    });
    if (res.status !== 202) throw new Error(res.text);
    let tx: { status: string; actions: { rowsWritten: number }[] };
    for (;;) {
      tx = (await call(url, { path: `/shop/Transaction/${res.json.id}`, host: HEADERS.host, headers: { authorization: HEADERS.authorization } })).json;
      if (tx.status === 'SUCCEEDED' || tx.status === 'FAILED') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    if (tx.status !== 'SUCCEEDED') throw new Error(JSON.stringify(tx));
    const dpSeconds = (Date.now() - started) / 1000;

    // The same BatchWriteItem calls, straight from the SDK, into fresh tables of the same keys.
    const table = async (name: string, history: boolean) => {
      await raw.send(
        new CreateTableCommand({
          TableName: name,
          KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }, ...(history ? [{ AttributeName: 'version', KeyType: 'RANGE' as const }] : [])],
          AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }, ...(history ? [{ AttributeName: 'version', AttributeType: 'N' as const }] : [])],
          BillingMode: 'PAY_PER_REQUEST',
        }),
      );
      return name;
    };
    const bare = async (tables: string[]) => {
      const now = new Date().toISOString();
      const begun = Date.now();
      const calls: { table: string; from: number }[] = [];
      for (const t of tables) for (let i = 0; i < ROWS; i += 25) calls.push({ table: t, from: i });
      let next = 0;
      const worker = async () => {
        while (next < calls.length) {
          const { table: t, from } = calls[next++];
          let pending: unknown[] | undefined = ids.slice(from, from + 25).map((id, j) => ({ PutRequest: { Item: { id, version: 1, createdAt: now, updatedAt: now, d: { name: names[from + j] } } } }));
          for (let round = 0; pending?.length; round++) {
            if (round) await new Promise((r) => setTimeout(r, Math.random() * Math.min(2000, 25 * 2 ** round)));
            pending = (await doc.send(new BatchWriteCommand({ RequestItems: { [t]: pending as never } }))).UnprocessedItems?.[t];
          }
        }
      };
      await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
      return (Date.now() - begun) / 1000;
    };
    const sameItems = await bare([await table('bare-live', false), await table('bare-history', true)]);
    const liveOnly = await bare([await table('bare-live-only', false)]);

    const rate = (s: number) => `${s.toFixed(1)} s, ${(ROWS / s).toFixed(0)} rows/s`;
    console.log(`rows: ${ROWS} (Parquet, row groups of ${ROW_GROUP}); DynamoDB Local ${peer.endpoint}`);
    console.log(`data plane transaction (UPSERT, versions read first, live + history items): ${rate(dpSeconds)}; rowsWritten ${tx.actions[0].rowsWritten}`);
    console.log(`bare SDK BatchWriteItem, same items (live + history, ${IN_FLIGHT} in flight):       ${rate(sameItems)}; ratio ${(sameItems / dpSeconds).toFixed(2)}`);
    console.log(`bare SDK BatchWriteItem, live items only:                                    ${rate(liveOnly)}; ratio ${(liveOnly / dpSeconds).toFixed(2)}`);
  } finally {
    raw.destroy();
    child.child.kill('SIGTERM');
    await child.exited;
    await peer.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
