/**
 * Raw SQL texts that PostgreSQL would take long to parse: how long the endpoint takes to answer
 * each, beside a `SELECT 1` through the same handler, in one run (median of BENCH_ROUNDS rounds).
 * The refused texts are refused by the endpoint's own pre-check, before PostgreSQL sees them; the
 * slowest accepted texts go to PostgreSQL and must stay far below the statement timeout (15 s).
 *
 *   npm run bench:rawsql-texts        BENCH_ROUNDS (default 5)
 */
import pino from 'pino';
import { PostgresDriver } from '../dataplane/src/drivers/postgres/driver.js';
import { PostgresReadOnlyExecutor } from '../dataplane/src/drivers/postgres/readonly.js';
import { executeRawQuery } from '../dataplane/src/rawsql/handler.js';
import { freshDatabase, stopTestPostgres } from '../dataplane/test-support/postgres.js';
import { demoDataset } from '../dataplane/test-support/rawsql-fixtures.js';
import { dataPlaneSettings } from '../model/settings/dataplane.js';
import { median } from './support.js';

const TEXTS: [string, string][] = [
  ['SELECT 1 (baseline)', 'SELECT 1'],
  ['refused: 400 KB of nested comments', `SELECT 1 ${'/*'.repeat(100000)}${'*/'.repeat(100000)}`],
  ['refused: 20,000 empty comments', `SELECT 1 ${'/**/'.repeat(20000)}`],
  ['refused: 20,000 unary operators', `SELECT 1 ${'+'.repeat(20000)}1`],
  ['PostgreSQL: 30,000 nested parentheses', `SELECT ${'('.repeat(30000)}1${')'.repeat(30000)}`],
  ['accepted: 24,750 comments in runs', `SELECT 1 ${`${'/**/'.repeat(250)} `.repeat(99)}`],
  ['accepted: 95,000 unary operators in runs', `SELECT 1 ${`${'+'.repeat(1000)} 1 `.repeat(95)}`],
];

const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const dataset = demoDataset();
const driver = new PostgresDriver({ logger: pino({ level: 'silent' }), settings: dataPlaneSettings({ DATABASE_URL: await freshDatabase('bench') }), readOnly: new PostgresReadOnlyExecutor() });
try {
  await driver.prepare(dataset);
  const times = new Map<string, number[]>(TEXTS.map(([name]) => [name, []]));
  const outcome = new Map<string, string>();
  for (let round = 0; round < rounds; round++) {
    for (const [name, sql] of TEXTS) {
      const started = process.hrtime.bigint();
      const result = await executeRawQuery({ dataset, authkind: 'iam', body: { sql }, driver, ctx: {} }).then(
        () => 'rows',
        (err: { status?: number; code?: string }) => `${err.status} ${err.code}`,
      );
      times.get(name)!.push(Number(process.hrtime.bigint() - started) / 1e6);
      outcome.set(name, result);
    }
  }
  const base = median(times.get(TEXTS[0][0])!);
  console.log(`| text | answer | median ms | × SELECT 1 |\n|---|---|---|---|`);
  for (const [name] of TEXTS) {
    const ms = median(times.get(name)!);
    console.log(`| ${name} | ${outcome.get(name)} | ${ms.toFixed(1)} | ${(ms / base).toFixed(1)} |`);
  }
} finally {
  await driver.close();
  await stopTestPostgres();
}
