/**
 * `npm run bench:subscriptions:locations`: the subscriptions benchmark (bench/subscriptions.ts) once
 * per location, one after the other in one run, so each location's figures stand beside
 * PostgreSQL's from the same machine state. Defaults to the issue's run: 200 subscribers, 100
 * writes/s for 30 s, on postgres, dynamodb, snowflake and iceberg (BENCH_LOCATIONS to choose; the
 * other BENCH_* settings pass through). Each run's full report is printed as it ends; a table of
 * the main figures follows at the end.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const LOCATIONS = (process.env.BENCH_LOCATIONS ?? 'postgres,dynamodb,snowflake,iceberg').split(',').map((l) => l.trim()).filter(Boolean);
const settings = { BENCH_SUBSCRIBERS: '200', BENCH_WRITES_PER_SECOND: '100', ...process.env };

/** One location's run: its report lines (stdout), or why it failed. */
function runOne(location: string): Promise<{ lines: string[]; code: number | null }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./subscriptions.ts', import.meta.url))], {
      env: { ...settings, BENCH_LOCATION: location },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      process.stdout.write(d);
    });
    child.on('close', (code) => resolve({ lines: out.split('\n'), code }));
  });
}

const grab = (lines: string[], pattern: RegExp) => {
  for (const line of lines) {
    const m = pattern.exec(line);
    if (m) return m.slice(1);
  }
  return undefined;
};

async function main(): Promise<void> {
  const rows: string[] = [];
  for (const location of LOCATIONS) {
    console.log(`\n=== ${location} ===`);
    const { lines, code } = await runOne(location);
    if (code !== 0) {
      rows.push(`| ${location} | failed (exit ${code}) | | | | | | |`);
      continue;
    }
    const request = grab(lines, /delivery \(write request → client\): p50 (\d+) ms, p99 (\d+) ms/) ?? ['?', '?'];
    const answer = grab(lines, /delivery \(write answered → client, a lower bound\): p50 (\d+) ms, p99 (\d+) ms/) ?? ['?', '?'];
    const [lost, dup] = grab(lines, /^lost (\d+), duplicates (\d+)/) ?? ['?', '?'];
    const [without, failedWithout] = grab(lines, /^writes without subscribers: ([\d.]+)\/s.*failed (\d+)/) ?? ['?', '?'];
    const [withSubs, failedWith] = grab(lines, /^writes with subscribers: +([\d.]+)\/s.*failed (\d+)/) ?? ['?', '?'];
    const feed = grab(lines, /change-log reads \(peer query log\): ([\d.]+)\/min without subscribers, ([\d.]+)\/min with them/);
    const load = grab(lines, /load average \(1\/5\/15 min\): at start ([\d.]+).*after ([\d.]+)/) ?? ['?', '?'];
    rows.push(
      `| ${location} | ${load[0]} → ${load[1]} | ${without} / ${withSubs} (${failedWithout} / ${failedWith} failed) | ${request[0]} / ${request[1]} ms | ${answer[0]} / ${answer[1]} ms | ${lost} / ${dup} | ${feed ? `${feed[0]} / ${feed[1]}` : '—'} |`,
    );
  }
  console.log(`\n${settings.BENCH_SUBSCRIBERS} subscribers on 2 replicas, ${settings.BENCH_WRITES_PER_SECOND} writes/s asked, one location after the other:\n`);
  console.log('| location | load start → end | writes/s done without / with subscribers | delivery from request p50 / p99 | from answer p50 / p99 | lost / dup | change-log reads/min without / with subscribers |');
  console.log('|---|---|---|---|---|---|---|');
  for (const row of rows) console.log(row);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
