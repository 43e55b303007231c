/**
 * main.ts as a child process (the compiled build, as the image runs it): `npm start` (and the
 * function gateway) listen on loopback unless HOST says otherwise, and trust verified without
 * Kubernetes credentials refuses to start, saying why. 127.0.0.2 is a loopback address on Linux
 * too, but not the one a 127.0.0.1 listener accepts.
 */
import { expect } from 'chai';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../src/db/embedded.js';
import { startMain, waitReady, type MainProcess } from '../test-support/main-process.js';
import { freshDatabase } from '../test-support/postgres.js';

/** Whether a TCP connection to address:port is accepted. */
function accepts(address: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: address, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** No Kubernetes credentials whatsoever: no KUBECONFIG, an empty HOME, not in a cluster (empty means unset). */
function withoutKubernetes(): Record<string, string> {
  return { KUBECONFIG: '', KUBERNETES_SERVICE_HOST: '', HOME: mkdtempSync(join(tmpdir(), 'no-kube-home-')) };
}

async function stop(started: MainProcess | undefined): Promise<void> {
  if (!started || started.child.exitCode !== null) return;
  started.child.kill('SIGTERM');
  await started.exited;
}

const VERIFIED_ENVIRONMENT = `apiVersion: dataaccess.dev/v1alpha1
kind: Environment
metadata: {name: local}
spec:
  type: internal
  gateways:
    iam: {trust: verified}
---
apiVersion: dataaccess.dev/v1alpha1
kind: Dataset
metadata: {name: demo}
spec:
  environment: local
  location: {kind: postgres, databaseSchema: demo}
  auth: {iam: {principals: ["system:serviceaccount:team-a:*"]}}
  schemas:
    demo.Item: {properties: {name: {type: string}}}
`;

describe('listening address and trust at start-up (main.ts as a process)', function () {
  this.timeout(120_000);
  let started: MainProcess | undefined;
  afterEach(async () => {
    await stop(started);
    started = undefined;
  });

  it('the data plane listens on 127.0.0.1 by default: a connection to another address is refused', async () => {
    const port = await freePort();
    started = startMain({ DATABASE_URL: await freshDatabase(), DATA_DIR: mkdtempSync(join(tmpdir(), 'das-host-')), PORT: String(port), LOG_LEVEL: 'warn' }, 'compiled');
    await waitReady(`http://127.0.0.1:${port}`, started);
    expect(await accepts('127.0.0.1', port)).to.equal(true);
    expect(await accepts('127.0.0.2', port)).to.equal(false);
  });

  it('the function gateway too; HOST=0.0.0.0 exposes it on every address', async () => {
    const port = await freePort();
    const gateway = { DAS_MODE: 'function-gateway', DAS_UPSTREAM_URL: 'http://127.0.0.1:1', DAS_FUNCTION_NAME: 'service-local-function-service-gateway', PORT: String(port) };
    started = startMain(gateway, 'compiled');
    await waitReady(`http://127.0.0.1:${port}`, started);
    expect(await accepts('127.0.0.2', port)).to.equal(false);
    await stop(started);
    started = startMain({ ...gateway, HOST: '0.0.0.0' }, 'compiled');
    await waitReady(`http://127.0.0.1:${port}`, started);
    expect(await accepts('127.0.0.2', port)).to.equal(true);
  });

  it('trust verified without Kubernetes credentials: the data plane refuses to start and says why', async () => {
    const manifests = mkdtempSync(join(tmpdir(), 'das-verified-'));
    writeFileSync(join(manifests, 'environment.yaml'), VERIFIED_ENVIRONMENT);
    started = startMain({
      ...withoutKubernetes(),
      DATABASE_URL: await freshDatabase(),
      DATA_DIR: mkdtempSync(join(tmpdir(), 'das-verified-data-')),
      DAS_MANIFESTS: manifests,
      PORT: String(await freePort()),
    }, 'compiled');
    expect(await started.exited).to.equal(1);
    expect(started.output()).to.include('gateways.iam.trust is verified').and.include('no Kubernetes credentials').and.include('KUBECONFIG');
  });

  it('the function gateway with DAS_TRUST=verified and no Kubernetes credentials refuses to start too', async () => {
    started = startMain({
      ...withoutKubernetes(),
      DAS_MODE: 'function-gateway',
      DAS_UPSTREAM_URL: 'http://127.0.0.1:1',
      DAS_FUNCTION_NAME: 'service-local-function-service-gateway',
      DAS_TRUST: 'verified',
      PORT: String(await freePort()),
    }, 'compiled');
    expect(await started.exited).to.equal(1);
    expect(started.output()).to.include('no Kubernetes credentials');
  });
});
