/** `npm start` as a user runs it: embedded PostgreSQL under DATA_DIR, example manifests, SIGTERM. */
import { expect } from 'chai';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { chmodSync, mkdtempSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from '../src/db/embedded.js';
import { call } from '../test-support/http.js';

const ROOT = resolve(import.meta.dirname, '../..');
const TSX = resolve(ROOT, 'node_modules/.bin/tsx');

interface Started {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function startMain(env: Record<string, string>): Started {
  const cleanEnv = { ...process.env };
  for (const key of ['DATABASE_URL', 'PGHOST', 'PGDATABASE', 'PGUSER', 'PGPASSWORD', 'PGPORT']) delete cleanEnv[key];
  const child = spawn(TSX, ['dataplane/src/main.ts'], { cwd: ROOT, env: { ...cleanEnv, LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((res) => child.on('exit', (code) => res(code)));
  return { child, output: () => output, exited };
}

async function waitReady(url: string, started: Started): Promise<void> {
  for (let i = 0; i < 300; i++) {
    try {
      const res = await call(url, { path: '/readyz' });
      if (res.status === 200) return;
    } catch {
      /* not listening yet */
    }
    if (started.child.exitCode !== null) throw new Error(`data plane exited: ${started.output()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`data plane not ready: ${started.output()}`);
}

describe('npm start (dataplane/src/main.ts)', function () {
  this.timeout(120000);
  const dataDir = mkdtempSync(join(tmpdir(), 'das-main-'));
  chmodSync(dataDir, 0o755); // as root, the embedded server runs as the postgres user and must reach it
  const admin = { host: 'iam.localhost', headers: { authorization: 'Proxy demo-admin' } };

  it('serves the examples on embedded PostgreSQL, stops on SIGTERM, and keeps records across a restart', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const first = startMain({ DATA_DIR: dataDir, PORT: String(port) });
    await waitReady(url, first);
    const created = await call(url, { ...admin, path: '/demo', body: { create: { schema: 'demo.Person', id: 'kept', data: { name: 'Kept', age: 40 } } } });
    expect(created.status).to.equal(201);
    first.child.kill('SIGTERM');
    expect(await first.exited).to.equal(0);
    expect(first.output()).to.contain('shut down');

    const second = startMain({ DATA_DIR: dataDir, PORT: String(port) });
    try {
      await waitReady(url, second);
      const read = await call(url, { ...admin, path: '/demo/demo.Person/kept' });
      expect(read.status).to.equal(200);
      expect(read.json).to.deep.equal({ id: 'kept', version: 1, name: 'Kept', age: 40 });
    } finally {
      second.child.kill('SIGTERM');
      expect(await second.exited).to.equal(0);
    }
  });

  it('fails fast on an invalid manifest, naming the file, the JSON path and the problem', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'das-bad-manifests-'));
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'bad.yaml'),
      [
        'apiVersion: dataaccess.dev/v1alpha1',
        'kind: Dataset',
        'metadata: {name: broken}',
        'spec:',
        '  environment: local',
        '  location: {kind: postgres}',
        '  schemas:',
        '    demo.Person:',
        '      properties:',
        '        age: {type: int}',
      ].join('\n'),
    );
    const started = startMain({ DATA_DIR: dataDir, PORT: String(await freePort()), DAS_MANIFESTS: dir, DATABASE_URL: 'postgres://unused@127.0.0.1:1/x' });
    expect(await started.exited).to.equal(1);
    expect(started.output()).to.contain(join(dir, 'bad.yaml'));
    expect(started.output()).to.contain('$.spec.schemas["demo.Person"].properties.age.type');
    expect(started.output()).to.contain('must be one of');
  });

  it('--help prints the usage with the environment variables and exits 0, from npm start and from the compiled build', async () => {
    const run = promisify(execFile);
    const fromNpm = await run('npm', ['start', '-s', '--', '--help'], { cwd: ROOT, env: { ...process.env, npm_config_loglevel: 'silent' } });
    const compiled = await run(process.execPath, [resolve(ROOT, 'dist/dataplane/src/main.js'), '--help'], { cwd: ROOT });
    for (const { stdout } of [fromNpm, compiled]) {
      expect(stdout).to.contain('Usage:');
      for (const variable of ['PORT', 'DATA_DIR', 'DAS_MANIFESTS', 'DAS_SHUTDOWN_DELAY_MS', 'SHUTDOWN_TIMEOUT_MS', 'DAS_WS_MAX_CONNECTIONS']) expect(stdout).to.contain(variable);
      expect(stdout, 'it does not start serving').to.not.contain('listening');
    }
  });
});
