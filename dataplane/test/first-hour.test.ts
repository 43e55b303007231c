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
import { startMain, startReadyMain, stopMain, type MainProcess } from '../test-support/main-process.js';

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
});
