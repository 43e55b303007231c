/**
 * `npm run bench:check`: a regression guard for the read path that is not a timed test. Runs the
 * read-by-id comparison of bench/run.ts briefly (data plane against the bare node:http + pg
 * handlers, side by side in rotating rounds; under two minutes), prints each ratio with its
 * expectation beside it, and exits 1 when a ratio's per-round median falls more than 10% below
 * its expectation — so a change can be checked before it lands.
 *
 * Every ratio is "higher is better": throughput as data plane / bare, CPU as bare / data plane
 * (the share of the bare handler's CPU per request the data plane needs, inverted). Ratios, not
 * absolute numbers: each round measures every server back to back on the same machine, so the
 * machine's speed and its other tenants cancel out.
 *
 * BENCH_SECONDS (5), BENCH_ROUNDS (4), BENCH_RECORDS (2000) override the brief run's settings.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { median, ROOT } from './support.js';

/**
 * Where the read path stands now (bench/run.ts on a quiet 2-core machine; docs/performance.md):
 * raise these when a change improves it, never lower them to let a change through.
 */
const EXPECTATIONS: { floor: string; measure: 'throughput' | 'cpu'; expectation: number; what: string }[] = [
  { floor: 'bare node:http + pg', measure: 'throughput', expectation: 0.85, what: 'throughput, data plane / bare node:http + pg' },
  { floor: 'bare node:http + pg', measure: 'cpu', expectation: 0.8, what: 'CPU per read, bare node:http + pg / data plane' },
  { floor: 'bare, same read as driver', measure: 'throughput', expectation: 0.65, what: 'throughput, data plane / bare with the driver\'s read' },
  { floor: 'bare, same read as driver', measure: 'cpu', expectation: 0.55, what: 'CPU per read, bare with the driver\'s read / data plane' },
];
/** How far below its expectation a ratio may fall before the check fails. */
const TOLERANCE = 0.1;

interface RunResult {
  rounds: number;
  seconds: number;
  errors: number;
  ratios: Record<string, { throughput: number[]; cpu?: number[] }>;
}

async function runComparison(resultFile: string): Promise<RunResult> {
  const env = {
    ...process.env,
    BENCH_SECONDS: process.env.BENCH_SECONDS ?? '5',
    BENCH_ROUNDS: process.env.BENCH_ROUNDS ?? '4',
    BENCH_RECORDS: process.env.BENCH_RECORDS ?? '2000',
    BENCH_PLATFORMATIC: '0',
    BENCH_RESULT_FILE: resultFile,
  };
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/run.ts'], { cwd: ROOT, env, stdio: 'inherit' });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`bench/run.ts exited ${code}`);
  return JSON.parse(readFileSync(resultFile, 'utf8')) as RunResult;
}

async function main(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'das-bench-check-'));
  try {
    const result = await runComparison(join(dir, 'result.json'));
    console.log(`\nbench:check — read by id, ${result.rounds} rounds of ${result.seconds} s, per-round medians (fails below expectation − ${TOLERANCE * 100}%):`);
    let failed = 0;
    for (const { floor, measure, expectation, what } of EXPECTATIONS) {
      const perRound = result.ratios[floor]?.[measure];
      if (!perRound?.length) {
        console.log(`  ${what.padEnd(58)} not measured`);
        failed++;
        continue;
      }
      // CPU ratios come as data plane / bare: inverted so that higher is better, as throughput is.
      const ratio = measure === 'cpu' ? median(perRound.map((r) => 1 / r)) : median(perRound);
      const ok = ratio >= expectation * (1 - TOLERANCE);
      if (!ok) failed++;
      console.log(`  ${what.padEnd(58)} ${ratio.toFixed(2)}  expectation ${expectation.toFixed(2)}  ${ok ? 'ok' : 'BELOW'}`);
    }
    if (result.errors > 0) {
      console.log(`  the data plane answered ${result.errors} requests with an error or non-2xx`);
      failed++;
    }
    console.log(failed ? `\nbench:check failed: ${failed} of the above` : '\nbench:check passed');
    return failed ? 1 : 0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(2);
  },
);
