/**
 * `npx tsx bench/profile-top.ts <file.cpuprofile | folder> [count] [skip-seconds]`: the functions with the most
 * self time in V8 CPU profiles (as `--cpu-prof` and BENCH_PROFILE_DIR write them), each with its
 * share of the profile's non-idle samples, and the same summed by package or source folder. Idle
 * and (program) time are left out of the shares, so profiles of servers under different loads
 * compare. `skip-seconds` leaves out each profile's first seconds (start-up, module loading).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

const IDLE = new Set(['(idle)', '(program)']);

function where(url: string): string {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  if (url.startsWith('node:')) return url;
  const src = /\/(dataplane\/src\/[^/]+|model|bench)\//.exec(url);
  return src ? src[1] : url ? 'other' : '(native)';
}

function main(): void {
  const [target, count = '25', skip = '0'] = process.argv.slice(2);
  const files = statSync(target).isDirectory() ? readdirSync(target).filter((f) => f.endsWith('.cpuprofile')).map((f) => join(target, f)) : [target];
  const byFunction = new Map<string, number>();
  const byPlace = new Map<string, number>();
  let total = 0;
  for (const file of files) {
    const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
    const hits = new Map<number, number>();
    let at = 0;
    profile.samples.forEach((s, i) => {
      at += profile.timeDeltas[i] ?? 0;
      if (at >= Number(skip) * 1e6) hits.set(s, (hits.get(s) ?? 0) + 1);
    });
    for (const node of profile.nodes) {
      const n = hits.get(node.id) ?? 0;
      const { functionName, url, lineNumber } = node.callFrame;
      if (!n || IDLE.has(functionName)) continue;
      total += n;
      const key = `${functionName || '(anonymous)'} ${url.replace(/^.*\/(node_modules|dataplane|model|bench)\//, '$1/')}:${lineNumber + 1}`;
      byFunction.set(key, (byFunction.get(key) ?? 0) + n);
      byPlace.set(where(url), (byPlace.get(where(url)) ?? 0) + n);
    }
  }
  const show = (title: string, m: Map<string, number>) => {
    console.log(`\n${title} (share of ${total} non-idle samples)`);
    for (const [k, n] of [...m].sort((a, b) => b[1] - a[1]).slice(0, Number(count))) console.log(`  ${((n * 100) / total).toFixed(1).padStart(5)}%  ${k}`);
  };
  show('self time by function', byFunction);
  show('self time by package or folder', byPlace);
}

main();
