/**
 * Platformatic DB 2.x as a benchmark peer (docs/architecture.md "Test peers"): a REST API generated over the
 * same PostgreSQL tables, the kind of product the data plane is picked against. Not a dependency
 * of the project: `ensurePlatformatic` installs `@platformatic/db@2` from the npm registry once
 * into a cache outside the repository (about 240 MB, two minutes), and later runs reuse it.
 * 3.x needs Node 22.
 *
 * BENCH_PLATFORMATIC=0 leaves it out; PLATFORMATIC_CACHE moves the cache.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export const PLATFORMATIC_VERSION_RANGE = '2';

/** The folder whose node_modules holds @platformatic/db, or undefined (with the reason) when it cannot be had. */
export function ensurePlatformatic(log: (line: string) => void): string | undefined {
  if (process.env.BENCH_PLATFORMATIC === '0') return undefined;
  const dir = process.env.PLATFORMATIC_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'data-access-bench', `platformatic-db-${PLATFORMATIC_VERSION_RANGE}`);
  if (existsSync(join(dir, 'node_modules', '@platformatic', 'db', 'package.json'))) return dir;
  mkdirSync(dir, { recursive: true });
  log(`installing @platformatic/db@${PLATFORMATIC_VERSION_RANGE} into ${dir} (once; BENCH_PLATFORMATIC=0 skips it)`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const installed = spawnSync(npm, ['install', '--no-audit', '--no-fund', '--no-save', '--prefix', dir, `@platformatic/db@${PLATFORMATIC_VERSION_RANGE}`], { stdio: ['ignore', 'ignore', 'inherit'] });
  if (installed.status !== 0) {
    log(`could not install @platformatic/db (exit ${installed.status}); the benchmark goes on without it`);
    return undefined;
  }
  return dir;
}
