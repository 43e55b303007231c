/** promtool (scripts/promtool/install.sh puts it into a cache; npm test's pretest runs that). */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export function promtoolPath(): string {
  const cached = join(process.env.PROMTOOL_CACHE ?? join(homedir(), '.cache', 'data-access-promtool'), 'bin', 'promtool');
  if (existsSync(cached)) return cached;
  throw new Error(`promtool is missing at ${cached}: run bash scripts/promtool/install.sh (npm test's pretest does)`);
}

/** Runs promtool with `input` on stdin; its exit code and everything it printed. */
export function promtool(args: string[], input = ''): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(promtoolPath(), args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
    child.stdin.on('error', () => {}); // promtool may exit before reading everything; the exit code tells
    child.stdin.end(input);
  });
}
