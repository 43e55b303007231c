/** The operator's part of a DynamoDB location: its credentials Secret mounted, and IRSA annotations. */
import { expect } from 'chai';
import { loadManifests } from '../../../model/manifests.js';
import { checkDatasetConfig, checkDatasetSpec, checkEnvironmentSpec } from '../../../model/validate.js';
import { SECRETS_MOUNT_ROOT } from '../../../model/secrets.js';
import type { EnvironmentResource, EnvironmentSpec } from '../../../model/types.js';
import { DATASET_CONFIG_KEY } from '../../../model/configmaps.js';
import { renderDatasetObjects } from './dataset.js';
import { renderEnvironmentObjects } from './environment.js';
import { datasetSecretRefs, publishedSecretRefs } from './secrets.js';
import { DEFAULT_RENDER_SETTINGS } from './types.js';

const examples = loadManifests('examples');

function environment(spec: Partial<EnvironmentSpec> = {}): EnvironmentResource {
  const base = examples.environments.find((e) => e.metadata.name === 'local')!;
  return { ...base, metadata: { ...base.metadata, namespace: 'team-a', uid: 'env-uid-1', generation: 3 }, spec: { ...base.spec, ...spec } };
}

const find = (objects: { kind: string; metadata: { name: string } }[], kind: string, name: string): any => objects.find((o) => o.kind === kind && o.metadata.name === name);

describe('operator: DynamoDB locations', () => {
  it('mounts both keys of a credentialsSecretRef Secret (accessKeyId, secretAccessKey) beside connection Secrets', () => {
    const refs = datasetSecretRefs([
      { spec: { location: { credentialsSecretRef: { name: 'aws-keys' } } } },
      { spec: { location: { connectionSecretRef: { name: 'pg', key: 'url' } } } },
      { spec: { location: { credentialsSecretRef: { name: 'aws-keys' } } } },
    ]);
    expect(refs).to.deep.equal([
      { name: 'aws-keys', key: 'accessKeyId' },
      { name: 'aws-keys', key: 'secretAccessKey' },
      { name: 'pg', key: 'url' },
    ]);
    const deployment = find(renderEnvironmentObjects(environment(), DEFAULT_RENDER_SETTINGS, refs), 'Deployment', 'local-dataplane');
    const pod = deployment.spec.template.spec;
    const volume = pod.volumes.find((v: any) => v.secret?.secretName === 'aws-keys');
    expect(volume.secret.items).to.deep.equal([
      { key: 'accessKeyId', path: 'accessKeyId' },
      { key: 'secretAccessKey', path: 'secretAccessKey' },
    ]);
    const mount = pod.containers[0].volumeMounts.find((m: any) => m.name === volume.name);
    expect(mount).to.deep.include({ mountPath: `${SECRETS_MOUNT_ROOT}/aws-keys`, readOnly: true });
  });

  it('keeps mounting the credentials Secret of the published config', () => {
    const configMap = { data: { [DATASET_CONFIG_KEY]: JSON.stringify({ location: { kind: 'dynamodb', credentialsSecretRef: { name: 'old-keys' } } }) } };
    expect(publishedSecretRefs(configMap)).to.deep.equal([
      { name: 'old-keys', key: 'accessKeyId' },
      { name: 'old-keys', key: 'secretAccessKey' },
    ]);
    expect(publishedSecretRefs({ data: { [DATASET_CONFIG_KEY]: 'not json' } })).to.deep.equal([]);
  });

  it('renders spec.dataplane.serviceAccountAnnotations on the data plane ServiceAccount (IRSA); none by default', () => {
    const annotations = { 'eks.amazonaws.com/role-arn': 'arn:aws:iam::123456789012:role/data-access' };
    const sa = find(renderEnvironmentObjects(environment({ dataplane: { serviceAccountAnnotations: annotations } }), DEFAULT_RENDER_SETTINGS), 'ServiceAccount', 'local-dataplane');
    expect(sa.metadata.annotations).to.deep.equal(annotations);
    expect(find(renderEnvironmentObjects(environment(), DEFAULT_RENDER_SETTINGS), 'ServiceAccount', 'local-dataplane').metadata.annotations).to.equal(undefined);
  });

  it('validates annotation names', () => {
    const spec = (annotations: Record<string, string>) => ({ ...environment().spec, dataplane: { serviceAccountAnnotations: annotations } });
    expect(checkEnvironmentSpec(spec({ 'eks.amazonaws.com/role-arn': 'arn' }))).to.deep.equal([]);
    expect(checkEnvironmentSpec(spec({ 'not an annotation!': 'x' })).map((p) => p.path).join()).to.include('serviceAccountAnnotations');
  });

  it('the example DynamoDB Dataset (examples/dynamodb) is valid and its rendered config carries the location settings', () => {
    const example = loadManifests('examples/dynamodb');
    const shop = example.datasets.find((d) => d.metadata.name === 'shop')!;
    expect(checkDatasetSpec(shop.spec)).to.deep.equal([]);
    const withSecret = { ...shop, metadata: { ...shop.metadata, namespace: 'team-a', uid: 'ds-uid' }, spec: { ...shop.spec, location: { ...shop.spec.location, credentialsSecretRef: { name: 'shop-dynamodb' } } } };
    const [configMap] = renderDatasetObjects(withSecret) as any[];
    const config = JSON.parse(configMap.data[DATASET_CONFIG_KEY]);
    expect(checkDatasetConfig(config)).to.deep.equal([]);
    expect(config.location).to.deep.include({ kind: 'dynamodb', region: 'us-east-1', endpoint: 'http://127.0.0.1:8000', tablePrefix: 'local-', credentialsSecretRef: { name: 'shop-dynamodb' }, defaultConsistency: 'QUORUM' });
    expect(publishedSecretRefs(configMap)).to.deep.equal([
      { name: 'shop-dynamodb', key: 'accessKeyId' },
      { name: 'shop-dynamodb', key: 'secretAccessKey' },
    ]);
  });

  it('refuses a malformed endpoint or credentials ref with the JSON path', () => {
    const base = loadManifests('examples/dynamodb').datasets[0].spec;
    const paths = (location: object) => checkDatasetSpec({ ...base, location: { ...base.location, ...location } }).map((p) => p.path);
    expect(paths({ endpoint: 'not a url' })).to.deep.equal(['$.spec.location.endpoint']);
    expect(paths({ credentialsSecretRef: { key: 'x' } }).join()).to.include('$.spec.location.credentialsSecretRef');
  });
});
