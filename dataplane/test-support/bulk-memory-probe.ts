/**
 * Child process of transactions-memory.test.ts: starts a data plane in this process on the given
 * database, loads each Parquet file named on the command line, and prints one JSON line per load:
 * the live heap's growth over the load (MB, sampled after a forced collection every 200 ms) and the
 * rows written. It runs apart from the test runner because a forced collection of the runner's heap
 * (everything the whole suite has loaded) takes long enough to starve the load it measures.
 *
 * Usage: node --expose-gc --import tsx bulk-memory-probe.ts <databaseUrl> <dataDir> <file>...
 */
import { pathToFileURL } from 'node:url';
import { adminClient, startTestDataPlane } from './dataplane.js';
import { waitForTransaction } from './transactions.js';

const [databaseUrl, dataDir, ...files] = process.argv.slice(2);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc || !databaseUrl || !dataDir || files.length === 0) {
  console.error('usage: node --expose-gc --import tsx bulk-memory-probe.ts <databaseUrl> <dataDir> <file>...');
  process.exit(2);
}

const dp = await startTestDataPlane({ databaseUrl, dataDir, env: { DAS_BULK_CHUNK_ROWS: '1000', DAS_BULK_POLL_MS: '100' } });
try {
  const api = adminClient(dp);
  for (const file of files) {
    gc();
    const base = process.memoryUsage().heapUsed;
    let peak = base;
    const sampler = setInterval(() => {
      gc();
      peak = Math.max(peak, process.memoryUsage().heapUsed);
    }, 200);
    try {
      const res = await api({
        path: '/demo',
        body: { create: { schema: 'Transaction', data: { actions: [{ locationUri: pathToFileURL(file).href, operation: 'UPSERT', format: 'PARQUET', schema: 'demo.Person' }] } } },
      });
      if (res.status !== 202) throw new Error(`create transaction: ${res.status} ${res.text}`);
      const tx = await waitForTransaction(api, res.json.id, undefined, 120_000);
      console.log(JSON.stringify({ file, status: tx.status, growthMb: (peak - base) / 2 ** 20, rows: tx.actions[0].rowsWritten }));
    } finally {
      clearInterval(sampler);
    }
  }
} finally {
  await dp.stop();
}
