/**
 * `npm run bench:check`: a regression guard for the read, GraphQL and write paths that is not a
 * timed test. Runs bench/run.ts briefly (every scenario: read by id against the bare node:http + pg
 * handlers, the GraphQL read against the REST read, an ATOMIC create and a 10-action ATOMIC batch
 * against the bare write handler, a data plane exporting every trace against the untraced one;
 * side by side in rotating rounds; under two minutes), prints each ratio with its expectation beside
 * it, and exits 1 when a ratio's per-round median falls more than 10% on the wrong side of its
 * expectation — so a change can be checked before it lands.
 *
 * Most ratios are "higher is better": throughput as subject / floor, CPU as floor / subject (the
 * share of the floor's CPU per request the subject needs, inverted). Tracing's is a ceiling, as
 * issue 32 states it: CPU per read traced / untraced, lower is better, failing above its expectation
 * ÷ 0.9 (the same bound as the inverted ratio's 0.9 × expectation). Ratios, not absolute numbers:
 * each round measures every server back to back on the same machine, so the machine's speed and
 * its other tenants cancel out.
 *
 * BENCH_SECONDS (2), BENCH_ROUNDS (4), BENCH_WARMUP (1), BENCH_RECORDS (2000) override the brief run's settings.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { median, ROOT } from './support.js';

/**
 * The targets of issue 31 (docs/performance.md has where each stands): raise these when a change
 * improves a path, never lower them to let a change through.
 */
const EXPECTATIONS: { ratio: string; measure: 'throughput' | 'cpu'; expectation: number; what: string; ceiling?: true }[] = [
  { ratio: 'data plane / bare node:http + pg', measure: 'throughput', expectation: 0.95, what: 'read: throughput, data plane / bare node:http + pg' },
  { ratio: 'data plane / bare node:http + pg', measure: 'cpu', expectation: 1.0, what: 'read: CPU per request, bare node:http + pg / data plane' },
  { ratio: 'data plane / bare, same read as driver', measure: 'cpu', expectation: 1 / 1.15, what: "read: CPU per request, bare with the driver's read / data plane" },
  { ratio: 'data plane GraphQL / data plane', measure: 'throughput', expectation: 0.8, what: 'GraphQL read: throughput, GraphQL / REST read' },
  { ratio: 'data plane create / bare create', measure: 'throughput', expectation: 0.9, what: 'create (ATOMIC): throughput, data plane / bare' },
  { ratio: 'data plane batch of 10 / bare batch of 10', measure: 'throughput', expectation: 0.9, what: 'batch of 10 (ATOMIC): throughput, data plane / bare' },
  { ratio: 'data plane, traced / data plane', measure: 'cpu', expectation: 1.1, what: 'tracing on / off, CPU per read', ceiling: true },
];
/** How far below its expectation a ratio may fall before the check fails (a ceiling: how far its inverse may). */
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
    BENCH_SECONDS: process.env.BENCH_SECONDS ?? '2',
    BENCH_ROUNDS: process.env.BENCH_ROUNDS ?? '4',
    BENCH_WARMUP: process.env.BENCH_WARMUP ?? '1',
    BENCH_RECORDS: process.env.BENCH_RECORDS ?? '2000',
    BENCH_PLATFORMATIC: '0',
    BENCH_TRACED: '1',
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
    console.log(`\nbench:check — ${result.rounds} rounds of ${result.seconds} s, per-round medians (fails ${TOLERANCE * 100}% on the wrong side of the expectation):`);
    let failed = 0;
    for (const { ratio: key, measure, expectation, what, ceiling } of EXPECTATIONS) {
      const perRound = result.ratios[key]?.[measure];
      if (!perRound?.length) {
        console.log(`  ${what.padEnd(64)} not measured`);
        failed++;
        continue;
      }
      if (ceiling) {
        // Subject / floor as it comes, lower is better: the bound is the inverted check's, 1 / (0.9 × (1 / expectation)).
        const ratio = median(perRound);
        const ok = ratio <= expectation / (1 - TOLERANCE);
        if (!ok) failed++;
        console.log(`  ${what.padEnd(64)} ${ratio.toFixed(2)}  expectation ≤ ${expectation.toFixed(2)}  ${ok ? 'ok' : 'ABOVE'}`);
        continue;
      }
      // CPU ratios come as subject / floor: inverted so that higher is better, as throughput is.
      const ratio = measure === 'cpu' ? median(perRound.map((r) => 1 / r)) : median(perRound);
      const ok = ratio >= expectation * (1 - TOLERANCE);
      if (!ok) failed++;
      console.log(`  ${what.padEnd(64)} ${ratio.toFixed(2)}  expectation ${expectation.toFixed(2)}  ${ok ? 'ok' : 'BELOW'}`);
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
