/**
 * Bulk loads stream: the live heap while a Parquet file loads does not grow with the file. Two
 * files with the same row groups, one four times the other, load on a real data plane; the live
 * heap (after a forced collection, sampled throughout each load) peaks about as high for both.
 * Holding the larger file's rows would add tens of MB.
 */
import { expect } from 'chai';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { adminClient, startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { parquetFile, waitForTransaction } from '../test-support/transactions.js';

setFlagsFromString('--expose_gc');
const gc = runInNewContext('gc') as () => void;

describe('transactions: memory does not grow with the file', function () {
  this.timeout(180_000);
  let dp: TestDataPlane;

  before(async () => {
    dp = await startTestDataPlane({ env: { DAS_BULK_CHUNK_ROWS: '1000', DAS_BULK_POLL_MS: '100' } });
    mkdirSync(join(dp.dataDir, 'imports'), { recursive: true });
  });
  after(async () => dp?.stop());

  const write = (name: string, rows: number) => {
    const ids = Array.from({ length: rows }, (_, i) => `${name}-${i}`);
    const file = join(dp.dataDir, 'imports', `${name}.parquet`);
    writeFileSync(
      file,
      parquetFile(
        [
          { name: 'id', data: ids, type: 'STRING' },
          { name: 'name', data: ids.map((id) => `a person called ${id}`), type: 'STRING' },
          { name: 'email', data: ids.map((id) => `${id}@example.com`), type: 'STRING' },
          { name: 'age', data: ids.map((_, i) => i % 100), type: 'INT32' },
        ],
        { rowGroupSize: 2000 },
      ),
    );
    return file;
  };

  /** The live heap's growth over the load (MB), sampled after a forced collection every 200 ms. */
  const load = async (file: string) => {
    const api = adminClient(dp);
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
      expect(res.status, res.text).to.equal(202);
      const tx = await waitForTransaction(api, res.json.id, undefined, 120_000);
      expect(tx.status, JSON.stringify(tx)).to.equal('SUCCEEDED');
      return { growthMb: (peak - base) / 2 ** 20, rows: tx.actions[0].rowsWritten as number };
    } finally {
      clearInterval(sampler);
    }
  };

  it('peaks about as high for 40,000 rows as for 10,000', async () => {
    const small = await load(write('small', 10_000));
    const large = await load(write('large', 40_000));
    expect(small.rows).to.equal(10_000);
    expect(large.rows).to.equal(40_000);
    console.log(`      live heap growth while loading: 10,000 rows ${small.growthMb.toFixed(1)} MB, 40,000 rows ${large.growthMb.toFixed(1)} MB`);
    // Holding 30,000 more decoded rows would take ~6 MB more, and hyparquet's column buffers as much again.
    expect(large.growthMb).to.be.lessThan(small.growthMb + 4);
  });
});
