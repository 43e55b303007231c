/**
 * The function gateway's Lambda access keys in a cluster (kube-apiserver peer, the operator as a
 * process): an Environment with `spec.functionGateway.accessKeys` passes the CRD's schema, and the
 * rendered function-gateway Deployment carries the keys (without secrets) in DAS_ACCESS_KEYS and
 * mounts each referenced Secret key read-only exactly where the gateway reads it
 * (`DAS_SECRETS_DIR/<secret>/<key>`, model/secrets.ts's secretFilePath).
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { parse } from 'yaml';
import { startKubeCluster, type KubeCluster } from '../peers/kube/cluster.js';
import { secretFilePath } from '../../model/secrets.js';
import { REPO_ROOT, apply, createNamespace, getObject, kubectl, startOperator, waitFor, type OperatorProcess } from './harness.js';

const ENV = 'lam';
const GATEWAY = `service-${ENV}-function-service-gateway`;
const ACCESS_KEYS = [
  { name: 'etl-job', accessKeyId: 'AKIDETL0000000000001', secretRef: { name: 'lambda-keys', key: 'etl' } },
  { name: 'reporting', accessKeyId: 'AKIDREPORTING0000001', secretRef: { name: 'reporting-key', key: 'secret' } },
];

describe('function gateway accessKeys e2e (kube-apiserver, operator)', function () {
  this.timeout(180_000);
  let cluster: KubeCluster;
  let operator: OperatorProcess | undefined;

  before(async () => {
    cluster = await startKubeCluster();
    await kubectl(cluster, ['apply', '-f', join(REPO_ROOT, 'crds')]);
    await waitFor('the CRDs to be served', async () => (await cluster.kubectl(['get', 'environments', '-A'])).code === 0);
    operator = await startOperator(cluster.kubeconfigPath, { LEADER_ELECTION: 'false' });
  });
  after(async () => {
    await operator?.stop('SIGKILL');
    await cluster?.stop();
  });

  it('mounts each referenced Secret key where the gateway reads it; DAS_ACCESS_KEYS names them without any secret', async () => {
    const ns = await createNamespace(cluster, 'lambda-keys');
    // The example Environment, with access keys.
    const environment = parse(readFileSync(join(REPO_ROOT, 'examples', 'environment.yaml'), 'utf8'));
    environment.metadata.name = ENV;
    environment.spec.functionGateway = { enabled: true, accessKeys: ACCESS_KEYS };
    await apply(cluster, ns, JSON.stringify(environment));
    const deployment = await waitFor('the function gateway Deployment', () => getObject<any>(cluster, ns, 'deployment', GATEWAY));
    const pod = deployment.spec.template.spec;
    const container = pod.containers[0];
    const env: Record<string, string> = Object.fromEntries((container.env as { name: string; value?: string }[]).map((e) => [e.name, e.value ?? '']));
    expect(JSON.parse(env.DAS_ACCESS_KEYS)).to.deep.equal(ACCESS_KEYS);
    const root = env.DAS_SECRETS_DIR;
    expect(root).to.match(/^\//);
    for (const { secretRef } of ACCESS_KEYS) {
      // The file the gateway opens, and the one the kubelet would project: the same path.
      const volume = pod.volumes.find((v: any) => v.secret?.secretName === secretRef.name);
      expect(volume, secretRef.name).to.not.equal(undefined);
      expect(volume.secret.optional).to.equal(false);
      const mount = container.volumeMounts.find((m: any) => m.name === volume.name);
      expect(mount).to.include({ readOnly: true });
      const item = volume.secret.items.find((i: any) => i.key === secretRef.key);
      expect(posix.join(mount.mountPath, item.path)).to.equal(secretFilePath(root, secretRef));
    }
    expect(pod.securityContext.fsGroup).to.be.a('number');
  });
});
