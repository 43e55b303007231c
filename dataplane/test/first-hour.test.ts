/**
 * What a newcomer meets in the first hour, through main.ts as a process: a busy port is one line
 * naming the port and what to do (nothing of pg's teardown noise); the listening line gives the URL
 * to open; the DDL of a start is not an info line.
 */
import { expect } from 'chai';
import { once } from 'node:events';
import { chmodSync, mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../src/db/embedded.js';
import { spawn } from 'node:child_process';
import { call } from '../test-support/http.js';
import { ROOT, startMain, startReadyMain, stopMain, type MainProcess } from '../test-support/main-process.js';

/** `npm run -s token` as a process (tsx), with the given environment; its stdout (the token). */
async function tokenCli(env: Record<string, string>): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'dataplane/src/auth/token-cli.ts', '--sub', 'alice'], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  const [code] = (await once(child, 'exit')) as [number];
  expect(code).to.equal(0);
  return stdout.trim();
}

const claimsOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()) as Record<string, unknown>;

describe('the first hour (main.ts as a process)', function () {
  this.timeout(180_000);
  let started: MainProcess | undefined;
  afterEach(async () => {
    await stopMain(started);
    started = undefined;
  });

  it('a busy port: exit 1 with one line naming the port and what to do, before the embedded PostgreSQL starts', async () => {
    const port = await freePort();
    const holder = createServer().listen(port, '127.0.0.1');
    await once(holder, 'listening');
    try {
      const dataDir = mkdtempSync(join(tmpdir(), 'das-busy-'));
      chmodSync(dataDir, 0o755);
      started = startMain({ DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1' });
      expect(await started.exited).to.equal(1);
      const output = started.output();
      expect(output).to.include(`data plane failed to start: port ${port} on 127.0.0.1 is already in use`).and.include(`PORT=${port + 1}`);
      expect(output).not.to.include('Connection terminated');
      expect(output).not.to.include('embedded PostgreSQL started');
      expect(output).not.to.match(/\n\s+at /); // no stack trace
    } finally {
      holder.close();
    }
  });

  it('the listening line gives the URL to open; the DDL of a first start is logged at debug, not info', async () => {
    started = await startReadyMain();
    const { port } = started as MainProcess & { port: number };
    // Log lines reach stdout in batches (log-destination.ts, every 100 ms): /readyz can answer first.
    for (let i = 0; i < 100 && !started.output().includes('"msg":"data plane listening'); i++) await new Promise((r) => setTimeout(r, 100));
    const lines = started.output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    const listening = lines.find((l) => String(l.msg).startsWith('data plane listening'));
    expect(listening?.url).to.equal(`http://127.0.0.1:${port}`);
    expect(listening?.msg).to.equal(`data plane listening on http://127.0.0.1:${port} (open http://127.0.0.1:${port}/demo/docs)`);
    const prepared = lines.filter((l) => l.msg === 'storage prepared');
    expect(prepared.length, 'a first start prepares storage').to.be.greaterThan(0);
    for (const line of prepared) {
      expect(line).to.have.property('statements').that.is.a('number');
      expect(line).not.to.have.property('ddl');
    }
    expect(started.output()).not.to.include('CREATE TABLE');
  });

  it("the development issuer's iss names the real PORT; the token CLI with the same DATA_DIR and PORT is accepted, without PORT refused naming it", async () => {
    started = await startReadyMain();
    const { port, url } = started as MainProcess & { port: number; url: string };
    const dataDir = /"dir":"([^"]+)\/postgres"/.exec(started.output())?.[1];
    expect(dataDir, started.output()).to.be.a('string');
    const token = await tokenCli({ DATA_DIR: dataDir!, PORT: String(port) });
    expect(claimsOf(token).iss).to.equal(`http://localhost:${port}/.well-known/dev-issuer`);
    const accepted = await call(url, { host: 'public.localhost', path: '/demo/echo', headers: { authorization: `Bearer ${token}` } });
    expect(accepted.status, accepted.text).to.equal(200);

    const elsewhere = await tokenCli({ DATA_DIR: dataDir!, PORT: '' });
    const refused = await call(url, { host: 'public.localhost', path: '/demo/echo', headers: { authorization: `Bearer ${elsewhere}` } });
    expect(refused.status).to.equal(401);
    expect(refused.json.error.code).to.equal('WRONG_ISSUER');
    expect(refused.json.error.message).to.include(`localhost:${port}`).and.include('PORT');
  });
});
