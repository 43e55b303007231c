/**
 * Bulk loads stream: the live heap while a Parquet file loads does not grow with the file. Two
 * files with the same row groups, one four times the other, load on a real data plane; the live
 * heap (after a forced collection, sampled throughout each load) peaks about as high for both.
 * Holding the larger file's rows would add tens of MB. The data plane runs in a child process
 * (test-support/bulk-memory-probe.ts) so the suite's own heap neither adds to the figure nor slows it.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { freshDatabase } from '../test-support/postgres.js';
import { parquetFile } from '../test-support/transactions.js';

const PROBE = resolve(import.meta.dirname, '../test-support/bulk-memory-probe.ts');

describe('transactions: memory does not grow with the file', function () {
  this.timeout(300_000);

  const write = (dir: string, name: string, rows: number) => {
    const ids = Array.from({ length: rows }, (_, i) => `${name}-${i}`);
    const file = join(dir, 'imports', `${name}.parquet`);
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

  it('peaks about as high for 40,000 rows as for 10,000', async () => {
    // The data plane runs in a child process of its own, so the heap measured is the load's alone.
    const dataDir = mkdtempSync(join(tmpdir(), 'das-data-'));
    mkdirSync(join(dataDir, 'imports'), { recursive: true });
    const files = [write(dataDir, 'small', 10_000), write(dataDir, 'large', 40_000)];
    const { stdout } = await promisify(execFile)(process.execPath, ['--expose-gc', '--import', 'tsx', PROBE, await freshDatabase(), dataDir, ...files], {
      env: { ...process.env, TEST_LOG_LEVEL: 'silent' },
      timeout: 280_000,
    });
    const [small, large] = stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(small.status, JSON.stringify(small)).to.equal('SUCCEEDED');
    expect(large.status, JSON.stringify(large)).to.equal('SUCCEEDED');
    expect(small.rows).to.equal(10_000);
    expect(large.rows).to.equal(40_000);
    console.log(`      live heap growth while loading: 10,000 rows ${small.growthMb.toFixed(1)} MB, 40,000 rows ${large.growthMb.toFixed(1)} MB`);
    // Holding 30,000 more decoded rows would take ~6 MB more, and hyparquet's column buffers as much again.
    expect(large.growthMb).to.be.lessThan(small.growthMb + 4);
  });
});
