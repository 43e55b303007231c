/**
 * The container image, built from the repository's Dockerfile by scripts/image/build.sh (podman,
 * a locally assembled Node 24 base; cached outside the repository) and run as a cluster would run
 * it: uid 10001, a read-only root filesystem with a tmpfs /tmp, DATA_DIR on a volume. It becomes
 * ready, keeps a record, and exits 0 on `podman stop` (SIGTERM) within the grace period; the
 * operator role runs from the same image. Part of `npm test`; skipped, saying why, only where podman
 * cannot run at all. The first build (base included) takes minutes on overlay storage; later ones
 * reuse the cached base and layers.
 *
 * Measured and printed (not asserted): image size, start-to-ready and stop-to-exit times.
 */
import { expect } from 'chai';
import { execFile, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../dataplane/src/db/embedded.js';
import { call } from '../../dataplane/test-support/http.js';
import { ROOT } from '../../dataplane/test-support/main-process.js';

const run = promisify(execFile);
const PODMAN = join(ROOT, 'scripts/image/podman.sh');
const IMAGE = 'localhost/data-access:test';
/** `podman stop`'s grace period before SIGKILL; the data plane's own drain deadline is 25 s. */
const GRACE_SECONDS = 30;

const podman = (args: string[], timeout = 300_000) => run(PODMAN, args, { timeout, maxBuffer: 64 * 1024 * 1024 });

/** Why podman cannot run containers here, or undefined when it can (or build.sh can install it). */
function podmanUnavailable(): string | undefined {
  const has = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;
  if (!has('podman')) {
    if (process.getuid?.() === 0 && has('apt-get')) return undefined; // build.sh installs it
    return 'podman is not installed (and cannot be installed here: apt-get as root is needed)';
  }
  const info = spawnSync(PODMAN, ['info'], { encoding: 'utf8', timeout: 120_000 });
  if (info.status !== 0) return `podman cannot run here: ${(info.stderr ?? '').trim().split('\n').pop()}`;
  return undefined;
}

function chartImage(): string {
  const repository = /^image:\n(?:\s.*\n)*?\s+repository:\s*(\S+)/m.exec(readFileSync(join(ROOT, 'charts/data-access-operator/values.yaml'), 'utf8'))?.[1];
  const appVersion = /^appVersion:\s*"([^"]+)"/m.exec(readFileSync(join(ROOT, 'charts/data-access-operator/Chart.yaml'), 'utf8'))?.[1];
  return `${repository}:${appVersion}`;
}

describe('the container image (scripts/image/build.sh, run with podman)', function () {
  this.timeout(30 * 60_000);
  const name = `das-image-test-${process.pid}`;
  let dataDir: string | undefined;

  before(async function () {
    const unavailable = podmanUnavailable();
    if (unavailable) {
      console.log(`      skipped: ${unavailable}`);
      this.skip();
    }
    // Cached: the base, and every layer up to `npm ci` while package*.json are unchanged.
    const built = spawnSync('bash', [join(ROOT, 'scripts/image/build.sh')], { cwd: ROOT, encoding: 'utf8', timeout: 25 * 60_000, maxBuffer: 256 * 1024 * 1024 });
    expect(built.status, built.stderr.slice(-4000)).to.equal(0);
    expect(built.stdout.trim()).to.equal(IMAGE);
  });

  after(async () => {
    await podman(['rm', '-f', '-i', name]).catch(() => undefined);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('carries Node 24, and the Helm chart’s default image names the same build', async () => {
    const { stdout } = await podman(['run', '--rm', '--network', 'host', '--entrypoint', 'node', IMAGE, '--version']);
    expect(stdout.trim()).to.match(/^v24\./);
    const { stdout: ids } = await podman(['image', 'inspect', '--format', '{{.Id}}', IMAGE, chartImage()]);
    const [ours, chart] = ids.trim().split('\n');
    expect(chart).to.equal(ours);
    const { stdout: size } = await podman(['image', 'inspect', '--format', '{{.Size}}', IMAGE]);
    console.log(`      image size: ${(Number(size) / 1024 / 1024).toFixed(0)} MiB`);
  });

  it('the operator role: --help from the same image', async () => {
    const { stdout } = await podman(['run', '--rm', '--network', 'host', '--user', '10001:10001', '--read-only', '--entrypoint', 'node', IMAGE, 'dist/operator/src/main.js', '--help']);
    expect(stdout).to.contain('Usage: npm run operator');
  });

  it('as uid 10001 on a read-only root: ready, a record written and read back, exit 0 on podman stop within the grace period', async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'das-image-data-'));
    chownSync(dataDir, 10001, 10001);
    chmodSync(dataDir, 0o700);
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const startedAt = Date.now();
    await podman([
      'run', '-d', '--name', name,
      '--user', '10001:10001', '--read-only', '--tmpfs', '/tmp:rw,size=64m',
      '-v', `${dataDir}:/var/lib/data-access`,
      '--network', 'host', '-e', `PORT=${port}`, '-e', 'HOST=127.0.0.1',
      IMAGE,
    ]);
    let ready = false;
    for (let i = 0; i < 600 && !ready; i++) {
      ready = (await call(url, { path: '/readyz' }).catch(() => undefined))?.status === 200;
      if (!ready) {
        const { stdout: state } = await podman(['inspect', '--format', '{{.State.Running}}', name]);
        if (state.trim() !== 'true') throw new Error(`the container stopped: ${(await podman(['logs', name]).catch((e) => e)).stdout}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    expect(ready, (await podman(['logs', name])).stdout.slice(-3000)).to.equal(true);
    console.log(`      start to ready: ${((Date.now() - startedAt) / 1000).toFixed(1)} s (podman run to /readyz 200, first start: initdb included)`);

    const admin = { host: 'iam.localhost', headers: { authorization: 'Proxy demo-admin' } };
    const created = await call(url, { ...admin, path: '/demo', body: { create: { schema: 'demo.Person', id: 'in-image', data: { name: 'Ada' } } } });
    expect(created.status, created.text).to.equal(201);
    const read = await call(url, { ...admin, path: '/demo/demo.Person/in-image' });
    expect(read.status, read.text).to.equal(200);
    expect(read.json).to.deep.include({ id: 'in-image', name: 'Ada' });

    const stoppingAt = Date.now();
    await podman(['stop', '--time', String(GRACE_SECONDS), name], (GRACE_SECONDS + 60) * 1000);
    const stopSeconds = (Date.now() - stoppingAt) / 1000;
    const { stdout: exit } = await podman(['inspect', '--format', '{{.State.ExitCode}}', name]);
    const logs = (await podman(['logs', name])).stdout;
    expect(Number(exit.trim()), logs.slice(-3000)).to.equal(0);
    expect(logs).to.contain('"msg":"shut down"'); // drained, not killed at the end of the grace period
    console.log(`      stop to exit: ${stopSeconds.toFixed(1)} s (podman stop, SIGTERM, to exit 0)`);
  });
});
