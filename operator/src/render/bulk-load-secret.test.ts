/**
 * The Environment's bulk-load S3 credentials Secret (spec.bulkLoad.s3.credentialsSecretRef) in the
 * data-plane Deployment: mounted read-only like the Datasets' connection Secrets, its access keys
 * required and its session token optional.
 */
import { expect } from 'chai';
import { loadManifests } from '../../../model/manifests.js';
import { SECRETS_MOUNT_ROOT, secretVolumeName } from '../../../model/secrets.js';
import type { EnvironmentResource, EnvironmentSpec } from '../../../model/types.js';
import { checkEnvironmentSpec } from '../../../model/validate.js';
import { renderEnvironmentObjects } from './environment.js';
import { datasetSecretRefs, environmentSecretRefs } from './secrets.js';
import { DEFAULT_RENDER_SETTINGS } from './types.js';

const base = loadManifests('examples').environments.find((e) => e.metadata.name === 'local')!;
const environment = (spec: Partial<EnvironmentSpec>): EnvironmentResource => ({
  ...base,
  metadata: { ...base.metadata, namespace: 'team-a', uid: 'env-uid-1' },
  spec: { ...base.spec, ...spec },
});
const withS3Secret = (name: string) => environment({ bulkLoad: { s3: { endpoint: 'http://minio:9000', credentialsSecretRef: { name } } } });

function podOf(env: EnvironmentResource, refs = datasetSecretRefs([])): any {
  const deployment: any = renderEnvironmentObjects(env, DEFAULT_RENDER_SETTINGS, refs).find((o) => o.kind === 'Deployment' && o.metadata.name === 'local-dataplane');
  return deployment.spec.template.spec;
}
const secretMounts = (pod: any) => pod.containers[0].volumeMounts.filter((m: { mountPath: string }) => m.mountPath.startsWith(`${SECRETS_MOUNT_ROOT}/`));

describe('operator: the bulk-load S3 credentials Secret', () => {
  it('is mounted read-only at the secrets root/<name>: access keys required, the session token only if the Secret has one (a projected volume)', () => {
    const pod = podOf(withS3Secret('s3-loader'));
    const name = secretVolumeName('s3-loader');
    expect(pod.volumes.filter((v: { name: string }) => v.name === name)).to.deep.equal([
      {
        name,
        projected: {
          defaultMode: 0o440,
          sources: [
            { secret: { name: 's3-loader', items: [{ key: 'accessKeyId', path: 'accessKeyId' }, { key: 'secretAccessKey', path: 'secretAccessKey' }], optional: false } },
            { secret: { name: 's3-loader', items: [{ key: 'sessionToken', path: 'sessionToken' }], optional: true } },
          ],
        },
      },
    ]);
    expect(secretMounts(pod)).to.deep.equal([{ name, mountPath: '/var/run/dataaccess/secrets/s3-loader', readOnly: true }]);
    expect(pod.containers[0].env).to.deep.include({ name: 'DAS_SECRETS_DIR', value: SECRETS_MOUNT_ROOT });
    expect(JSON.stringify(pod)).not.to.contain('secretKeyRef');
  });

  it('without the ref, or with S3 settings but no ref, nothing is mounted', () => {
    expect(secretMounts(podOf(environment({})))).to.deep.equal([]);
    expect(secretMounts(podOf(environment({ bulkLoad: { s3: { region: 'eu-west-1' } } })))).to.deep.equal([]);
    expect(podOf(environment({ bulkLoad: { s3: { region: 'eu-west-1' } } }))).to.deep.equal(podOf(environment({})));
  });

  it('mounts beside the Datasets\' Secrets, sorted; one Secret shared with a DynamoDB Dataset is one volume whose access keys are required', () => {
    const datasets = datasetSecretRefs([{ spec: { location: { connectionSecretRef: { name: 'orders-db', key: 'url' } } } }, { spec: { location: { credentialsSecretRef: { name: 'aws-keys' } } } }]);
    const pod = podOf(withS3Secret('aws-keys'), datasets);
    expect(secretMounts(pod).map((m: { mountPath: string }) => m.mountPath)).to.deep.equal(['/var/run/dataaccess/secrets/aws-keys', '/var/run/dataaccess/secrets/orders-db']);
    const shared = pod.volumes.find((v: { name: string }) => v.name === secretVolumeName('aws-keys'));
    expect(shared.projected.sources.map((s: any) => [s.secret.optional, s.secret.items.map((i: { key: string }) => i.key)])).to.deep.equal([
      [false, ['accessKeyId', 'secretAccessKey']],
      [true, ['sessionToken']],
    ]);
    // The Datasets' Secrets keep their plain secret volumes.
    expect(pod.volumes.find((v: { name: string }) => v.name === secretVolumeName('orders-db')).secret.secretName).to.equal('orders-db');
  });

  it('a key required anywhere stays required; the refs of an Environment without a valid name are none', () => {
    expect(environmentSecretRefs({ spec: { bulkLoad: { s3: { credentialsSecretRef: { name: 'k' } } } } })).to.deep.equal([
      { name: 'k', key: 'accessKeyId' },
      { name: 'k', key: 'secretAccessKey' },
      { name: 'k', key: 'sessionToken', optional: true },
    ]);
    expect(environmentSecretRefs({ spec: { bulkLoad: { s3: { credentialsSecretRef: { name: 7 } } } } })).to.deep.equal([]);
    const pod = podOf(withS3Secret('k'), [{ name: 'k', key: 'sessionToken' }]);
    expect(pod.volumes.find((v: { name: string }) => v.name === secretVolumeName('k')).secret.items.map((i: { key: string }) => i.key)).to.deep.equal(['accessKeyId', 'secretAccessKey', 'sessionToken']);
  });

  it('the model takes the ref ({name}, a DNS name) and refuses anything else with its path', () => {
    expect(checkEnvironmentSpec(withS3Secret('s3-loader').spec)).to.deep.equal([]);
    const problems = (s3: unknown) => checkEnvironmentSpec({ ...base.spec, bulkLoad: { s3 } } as EnvironmentSpec).map((p) => `${p.path} ${p.message}`);
    expect(problems({ credentialsSecretRef: { name: 'Bad_Name' } }).join('\n')).to.contain('credentialsSecretRef.name');
    expect(problems({ credentialsSecretRef: {} }).join('\n')).to.match(/credentialsSecretRef.*name/);
    expect(problems({ credentialsSecretRef: { name: 'ok', key: 'url' } }).join('\n')).to.contain('credentialsSecretRef');
  });
});
