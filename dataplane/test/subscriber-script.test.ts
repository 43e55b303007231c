/**
 * scripts/subscriptions/subscribe.ts (the README's subscriber) as a user runs it, against a real
 * data plane on PostgreSQL: it says "connected", prints each event, and on a refusal prints the
 * close code and reason and exits 1 instead of retrying (the data plane logs the refusal with the
 * principal and request id); when the data plane restarts it reconnects and resumes after the last
 * cursor, so the change written while it was away arrives once.
 */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { bootstrapDataPlane } from '../src/bootstrap.js';
import type { DataPlane } from '../src/server.js';
import { EXAMPLES_DIR, startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { call } from '../test-support/http.js';
import { capturingLogger } from '../test-support/logs.js';
import { dataPlaneSettings } from '../../model/settings/dataplane.js';

const SCRIPT = resolve(import.meta.dirname, '../../scripts/subscriptions/subscribe.ts');
const ADMIN = { authorization: 'Proxy demo-admin' };

interface Subscriber {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

function subscribe(url: string, authorization: string, dataset = 'demo'): Subscriber {
  const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT, 'demo_Company'], {
    env: { ...process.env, DAS_URL: `${url.replace(/^http/, 'ws')}/${dataset}/graphql`, DAS_AUTHORIZATION: authorization },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return { child, stdout: () => out, stderr: () => err, exited: new Promise((res) => child.on('exit', (code) => res(code))) };
}

async function until(what: string, test: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('scripts/subscriptions/subscribe.ts', function () {
  this.timeout(60_000);
  const { logger, lines } = capturingLogger();
  let dp: TestDataPlane;
  let restarted: DataPlane | undefined;
  const running: Subscriber[] = [];

  before(async () => {
    dp = await startTestDataPlane({ logger });
  });
  after(async () => {
    for (const s of running) s.child.kill('SIGKILL');
    await restarted?.stop();
    await dp?.stop();
  });

  it('exits 1 on 4403 with the close code and reason, and the data plane logs the refusal', async () => {
    const s = subscribe(dp.url, 'Proxy nobody');
    running.push(s);
    expect(await s.exited).to.equal(1);
    expect(s.stderr()).to.match(/closed 4403 .*nobody/);
    expect(s.stderr()).to.not.contain('reconnecting');
    const refusal = lines.find((l) => l.msg === 'WebSocket refused' && l.principal === 'nobody');
    expect(refusal, JSON.stringify(lines.filter((l) => l.msg !== 'request').slice(-5))).to.include({ closeCode: 4403, dataset: 'demo', level: 40 });
    expect(refusal.reqId).to.match(/^[0-9a-f-]{36}$/);
  });

  it('exits 1 when the upgrade itself is refused (no such dataset), printing the HTTP answer', async () => {
    const s = subscribe(dp.url, 'Proxy demo-admin', 'nosuch');
    running.push(s);
    expect(await s.exited).to.equal(1);
    expect(s.stderr()).to.match(/refused: HTTP 404 .*DATASET_NOT_FOUND/);
    expect(lines.some((l) => l.msg === 'WebSocket refused' && l.status === 404), JSON.stringify(lines.filter((l) => l.msg === 'WebSocket refused'))).to.equal(true);
  });

  it('says connected, prints each event, and after a restart resumes from the last cursor', async () => {
    const s = subscribe(dp.url, 'Proxy demo-admin');
    running.push(s);
    await until('connected', () => s.stderr().includes('connected'));
    // The subscription is registered a moment after connection_ack: write until it sees one.
    for (let n = 1; !s.stdout().includes('"first-'); n++) {
      if (n > 20) throw new Error(`no event: ${s.stderr()}`);
      await call(dp.url, { path: '/demo', headers: ADMIN, body: { create: { schema: 'demo.Company', id: `first-${n}`, data: { name: 'First' } } } });
      await until('an event', () => s.stdout().includes('"first-'), 1000).catch(() => undefined);
    }

    // The data plane restarts (1012, service restart) and comes back on the same port and database.
    const port = Number(new URL(dp.url).port);
    await dp.dataPlane.stop();
    await until('the close', () => /closed 1012/.test(s.stderr()));
    // Written while nobody listened: the resumed subscription must deliver it.
    restarted = await bootstrapDataPlane({ logger, configSource: { kind: 'files', path: EXAMPLES_DIR }, dataDir: dp.dataDir, port, host: '127.0.0.1', settings: dataPlaneSettings({ ...process.env, DATABASE_URL: dp.databaseUrl }) });
    await call(restarted.url, { path: '/demo', headers: ADMIN, body: { create: { schema: 'demo.Company', id: 'second', data: { name: 'Second' } } } });
    await until('the second event', () => s.stdout().includes('"second"'));
    expect(s.stderr()).to.match(/reconnecting in \d+ ms after \S+/);
    expect(s.stderr().match(/connected/g)).to.have.length.greaterThanOrEqual(2);
    const events = s.stdout().trim().split('\n').map((l) => JSON.parse(l));
    const ids = events.map((e) => e.record.id);
    // Nothing repeated, nothing after the resume but the change it missed.
    expect(new Set(ids).size).to.equal(ids.length);
    expect(ids.at(-1)).to.equal('second');
    expect(ids.slice(0, -1).every((id) => id.startsWith('first-'))).to.equal(true);
    expect(events.every((e) => e.op === 'CREATE' && typeof e.cursor === 'string')).to.equal(true);
  });
});
