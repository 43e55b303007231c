/**
 * `npm run peer:snowflake`: the CLI starts the peer with its own embedded PostgreSQL, prints a URL
 * the real snowflake-sdk logs in to, and on SIGTERM stops and removes its data directory.
 */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connectSdk, destroy, exec } from './sdk-client.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const CLI = resolve(REPO, 'e2e/peers/snowflake/cli.ts');

function runCli(args: string[]): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return { child, output: () => out, exited };
}

async function waitFor(output: () => string, pattern: RegExp, ms: number): Promise<RegExpExecArray> {
  const deadline = Date.now() + ms;
  for (;;) {
    const m = pattern.exec(output());
    if (m) return m;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${pattern}; output so far:\n${output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('Snowflake test peer CLI (npm run peer:snowflake)', function () {
  this.timeout(60000);

  it('starts, prints a URL and settings a client logs in with, and stops cleanly on SIGTERM', async () => {
    const cli = runCli(['--port', '0']);
    try {
      const [, url] = await waitFor(cli.output, /listening on (http:\/\/127\.0\.0\.1:\d+)/, 45000);
      const [, account, user, password] = await waitFor(cli.output, /account=(\S+) accessUrl=\S+ username=(\S+) password=(\S+)/, 1000);
      const [, dataDir] = await waitFor(cli.output, /PostgreSQL data: (\S+)/, 1000);
      const conn = await connectSdk({ url, account }, { username: user, password, database: 'CLI_CHECK', warehouse: 'WH' });
      expect((await exec(conn, 'SELECT 40 + 2 AS ANSWER')).rows).to.deep.equal([{ ANSWER: 42 }]);
      await destroy(conn);
      expect(existsSync(dataDir)).to.equal(true);
      cli.child.kill('SIGTERM');
      expect(await cli.exited).to.equal(0);
      expect(existsSync(dataDir)).to.equal(false);
    } finally {
      if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
    }
  });

  it('refuses a bad --port with a usage message and exit code 2', async () => {
    const cli = runCli(['--port', 'eighty']);
    expect(await cli.exited).to.equal(2);
    expect(cli.output()).to.match(/--port: expected an integer from 0 to 65535, got "eighty"/);
  });
});
