/** The operator's entry point as a child process: --help, and a clear refusal without a cluster. */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { missingClusterSource, NO_CLUSTER_MESSAGE } from '../src/kube/kubeconfig.js';

const ROOT = resolve(import.meta.dirname, '../..');

function runOperator(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'operator/src/main.ts', ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => done({ code, stdout, stderr }));
  });
}

/** No KUBECONFIG, an empty home, not in a Pod. */
function clusterlessEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: mkdtempSync(join(tmpdir(), 'no-kube-')), METRICS_PORT: '0' };
  for (const name of ['KUBECONFIG', 'KUBERNETES_SERVICE_HOST', 'KUBERNETES_SERVICE_PORT']) delete env[name];
  return env;
}

describe('operator: entry point (operator/src/main.ts as a process)', function () {
  this.timeout(60_000);

  it('--help prints the usage and the settings, and exits 0 without touching a cluster', async () => {
    const result = await runOperator(['--help'], clusterlessEnv());
    expect(result.code).to.equal(0);
    expect(result.stdout).to.contain('Usage: npm run operator');
    expect(result.stdout).to.contain('WATCH_NAMESPACE');
    expect(result.stderr).to.equal('');
  });

  it('without a kubeconfig or in-cluster config: exits 1 with "no cluster", never falling back to localhost:8080', async () => {
    const result = await runOperator([], clusterlessEnv());
    expect(result.code).to.equal(1);
    expect(result.stderr).to.contain(`data-access-operator: ${NO_CLUSTER_MESSAGE}`);
    expect(result.stdout + result.stderr).to.not.contain('localhost:8080');
    expect(result.stdout + result.stderr).to.not.contain('lease');
  });

  it('KUBECONFIG naming a missing file: exits 1 with one line naming the file, no stack', async () => {
    const missing = join(mkdtempSync(join(tmpdir(), 'no-kube-')), 'kubeconfig.yaml');
    const result = await runOperator([], { ...clusterlessEnv(), KUBECONFIG: missing });
    expect(result.code).to.equal(1);
    expect(result.stderr.trim()).to.match(new RegExp(`^data-access-operator: KUBECONFIG names ${missing.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}, which does not exist`));
    expect(result.stderr.trim().split('\n')).to.have.length(1);
    expect(result.stderr).not.to.contain('ENOENT');
  });

  it('finds a cluster source in KUBECONFIG, ~/.kube/config, or a Pod\'s service account', () => {
    const none = () => false;
    expect(missingClusterSource({}, none, '/home/x')).to.equal(NO_CLUSTER_MESSAGE);
    expect(missingClusterSource({ KUBECONFIG: '/k' }, (p) => p === '/k', '/home/x')).to.equal(undefined);
    expect(missingClusterSource({ KUBECONFIG: '/gone:/k' }, (p) => p === '/k', '/home/x')).to.equal(undefined);
    expect(missingClusterSource({ KUBECONFIG: '/k' }, none, '/home/x')).to.contain('KUBECONFIG names /k, which does not exist');
    expect(missingClusterSource({}, (p) => p === '/home/x/.kube/config', '/home/x')).to.equal(undefined);
    const pod = { KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' };
    expect(missingClusterSource(pod, (p) => p.endsWith('serviceaccount/token'), '')).to.equal(undefined);
    expect(missingClusterSource(pod, none, '')).to.equal(NO_CLUSTER_MESSAGE);
  });
});
