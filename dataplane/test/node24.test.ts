/**
 * Node 24, the image's runtime (Dockerfile), while the project also runs on the Node on PATH (20
 * or later): the compiled data plane's start-up and shutdown, and a representative PostgreSQL set
 * (the driver conformance suite and the REST records suite), run under Node 24 installed from the
 * npm registry's binary package by scripts/node24/install.sh (cached outside the repo; npm test's
 * pretest installs it).
 */
import { expect } from 'chai';
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../src/db/embedded.js';
import { call } from '../test-support/http.js';
import { ROOT, startMain, waitReady } from '../test-support/main-process.js';

const POSTGRES_SET = ['dataplane/src/drivers/postgres/driver.test.ts', 'dataplane/test/records.test.ts'];

describe('under Node 24 (the image runtime)', function () {
  this.timeout(300_000);
  let node24: string;

  before(() => {
    node24 = execFileSync('bash', ['scripts/node24/install.sh'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] }).toString().trim().split('\n').pop()!;
    expect(execFileSync(node24, ['--version']).toString()).to.match(/^v24\./);
  });

  it('the compiled data plane starts, answers ready, and exits 0 on SIGTERM', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'das-node24-'));
    chmodSync(dir, 0o755);
    const port = await freePort();
    const main = startMain({ DATA_DIR: dir, PORT: String(port), HOST: '127.0.0.1' }, 'compiled', node24);
    try {
      await waitReady(`http://127.0.0.1:${port}`, main);
      const created = await call(`http://127.0.0.1:${port}`, { path: '/demo', host: 'iam.localhost', headers: { authorization: 'Proxy demo-admin' }, body: { create: { schema: 'demo.Person', id: 'on-24', data: { name: 'Node 24' } } } });
      expect(created.status, created.text).to.equal(201);
      main.child.kill('SIGTERM');
      expect(await main.exited, main.output().slice(-2000)).to.equal(0);
      expect(main.output(), 'no runtime warnings (e.g. the AWS SDK on an unsupported Node)').to.not.match(/NodeVersionSupportWarning|DeprecationWarning/);
    } finally {
      if (main.child.exitCode === null) main.child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it(`passes the PostgreSQL set (${POSTGRES_SET.join(', ')})`, async () => {
    const args = ['node_modules/mocha/bin/mocha.js', '--no-config', '--node-option', 'import=tsx', '--require', 'dataplane/test-support/hooks.ts', '--timeout', '60000', '--exit', '--reporter', 'dot', ...POSTGRES_SET];
    const child = spawn(node24, args, { cwd: ROOT, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d));
    child.stderr.on('data', (d: Buffer) => (output += d));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    const summary = /(\d+) passing/.exec(output);
    console.log(`      (Node 24: ${summary?.[0] ?? 'no summary'})`);
    expect(code, output.slice(-4000)).to.equal(0);
    expect(Number(summary?.[1]), 'tests ran').to.be.greaterThan(50);
    expect(output).to.not.match(/\d+ failing|\d+ pending/);
  });
});
