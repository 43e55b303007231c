/**
 * `npm run bench:bulk-load-statements`: what each statement of a bulk load's part costs
 * PostgreSQL's backend, per row, for the two ways a part is written (drivers/postgres): the
 * optimistic statement (bench/bulk-load-optimistic-sql.ts) and the `INSERT … ON CONFLICT` one it falls back
 * to (applySql). BENCH_ROWS (100,000) new demo.Person rows in parts of BENCH_PART_ROWS (5,000) on
 * one connection, each part its own transaction (staging, then the write), the two ways taking
 * turns part by part so both meet the same machine; then the same ids again (every row an update).
 * The backend's CPU from /proc, read around each statement: on a shared machine it moves less than
 * wall-clock time. Not a test: read the figures.
 */
import pg from 'pg';
import copyStreams from 'pg-copy-streams';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { loadavg } from 'node:os';
import { adminClient, startTestDataPlane } from '../dataplane/test-support/dataplane.js';
import { transactionManifests } from '../dataplane/test-support/transactions.js';
import { applySql, stageCopy } from '../dataplane/src/drivers/postgres/bulk-load.js';
import { optimisticApplySql } from './bulk-load-optimistic-sql.js';
import { tableLayout } from '../dataplane/src/drivers/postgres/sql.js';
import { schemaDefOf } from '../dataplane/src/engine/layout.js';
import { cpuMs } from './support.js';

const ROWS = Number(process.env.BENCH_ROWS ?? 100_000);
const PART = Number(process.env.BENCH_PART_ROWS ?? 5_000);

const dp = await startTestDataPlane({ manifests: transactionManifests() });
try {
  await dp.dataPlane.runner.stop();
  // The record tables exist once a record was written.
  const first = await adminClient(dp)({ path: '/demo', body: { create: { schema: 'demo.Person', id: 'first', data: { name: 'first' } } } });
  if (first.status >= 300) throw new Error(first.text);
  const config = dp.dataPlane.store.dataset('demo')!.config;
  const layout = tableLayout(config, 'demo.Person', schemaDefOf(config, 'demo.Person')!);
  const client = new pg.Client({ connectionString: dp.databaseUrl });
  await client.connect();
  const backend = (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
  const timed = async (run: () => Promise<unknown>) => {
    const before = cpuMs(backend)!;
    await run();
    return cpuMs(backend)! - before;
  };
  const ways = {
    optimistic: optimisticApplySql(layout, 'UPSERT')!,
    'ON CONFLICT': applySql(layout, 'UPSERT', 10),
  };
  const spent: Record<string, { stage: number; write: number }> = {};
  const loadBefore = loadavg()[0].toFixed(2);
  for (const phase of ['new rows', 'updates'] as const) {
    for (let from = 0; from < ROWS; from += PART) {
      for (const [way, statement] of Object.entries(ways)) {
        const records = Array.from({ length: PART }, (_, i) => ({ id: `${way === 'optimistic' ? 'o' : 'c'}${from + i}`, data: { name: `person ${from + i}`, email: `p${from + i}@example.com`, age: i % 100 }, row: i + 1 }));
        const staged = stageCopy(layout, records, false);
        const cost = (spent[`${way}, ${phase}`] ??= { stage: 0, write: 0 });
        await client.query('BEGIN');
        cost.stage += await timed(async () => {
          await client.query(staged.create);
          await pipeline(Readable.from(staged.text()), client.query(copyStreams.from(staged.copy)));
        });
        let written = 0;
        cost.write += await timed(async () => (written = Number((await client.query(statement.text, statement.values)).rows[0].written)));
        if (written !== PART) throw new Error(`${way}: wrote ${written} of ${PART}`);
        await client.query('COMMIT');
      }
    }
  }
  await client.end();
  const us = (ms: number) => `${((ms * 1000) / ROWS).toFixed(1)} µs`;
  for (const [what, cost] of Object.entries(spent)) console.log(`${what}: staging ${us(cost.stage)} a row, the write ${us(cost.write)} a row (backend CPU)`);
  console.log(`load average (1 min): before ${loadBefore}, after ${loadavg()[0].toFixed(2)}`);
} finally {
  await dp.stop();
}
