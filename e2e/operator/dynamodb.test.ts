/**
 * The operator end to end with a DynamoDB Dataset (examples/dynamodb): the chart's operator renders
 * its config and mounts its credentials Secret into the data-plane Deployment; the data plane,
 * run as its container would with the Secret's files where the kubelet puts them, serves the
 * dataset from DynamoDB Local.
 */
import { expect } from 'chai';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { secretVolumeName } from '../../model/secrets.js';
import { sharedDynamoDbLocal } from '../peers/dynamodb/peer.js';
import { startKubeCluster, type KubeCluster } from '../peers/kube/cluster.js';
import {
  REPO_ROOT,
  apply,
  createNamespace,
  dataPlaneDataDir,
  getObject,
  httpGet,
  httpRequest,
  kubectl,
  startChartOperator,
  startClusterDataPlane,
  waitFor,
  waitForCondition,
  type OperatorProcess,
} from './harness.js';

const RELEASE = 'ddb';

describe('operator e2e: a DynamoDB Dataset (Secret mounted, ConfigMap rendered, served from DynamoDB Local)', function () {
  this.timeout(240_000);
  let cluster: KubeCluster;
  let operator: OperatorProcess;

  before(async () => {
    cluster = await startKubeCluster({ controllerManager: true });
    operator = await startChartOperator(cluster, RELEASE, `e2e-ddb-${process.pid}`);
  });
  after(async () => {
    await operator?.stop();
    await cluster?.stop();
  });

  it('renders the config, mounts accessKeyId and secretAccessKey, annotates the ServiceAccount, and the data plane serves the dataset', async () => {
    const peer = await sharedDynamoDbLocal();
    const ns = await createNamespace(cluster, 'dynamodb');
    await kubectl(cluster, ['-n', ns, 'create', 'secret', 'generic', 'shop-dynamodb', `--from-literal=accessKeyId=${peer.credentials.accessKeyId}`, `--from-literal=secretAccessKey=${peer.credentials.secretAccessKey}`]);
    const docs = ['environment.yaml', 'dataset-shop.yaml'].map((f) => parseAllDocuments(readFileSync(join(REPO_ROOT, 'examples/dynamodb', f), 'utf8'))[0].toJS());
    const [environment, dataset] = docs;
    environment.spec.dataplane = { serviceAccountAnnotations: { 'eks.amazonaws.com/role-arn': 'arn:aws:iam::123456789012:role/data-access-shop' } };
    dataset.spec.location = { ...dataset.spec.location, endpoint: peer.endpoint, tablePrefix: `e2e${process.pid}-`, credentialsSecretRef: { name: 'shop-dynamodb' } };
    await apply(cluster, ns, JSON.stringify(environment));
    await apply(cluster, ns, JSON.stringify(dataset));
    await waitForCondition(cluster, ns, 'dataset', 'shop', 'Ready', 'True');

    const config = JSON.parse((await getObject(cluster, ns, 'configmap', 'local-dataset-shop')).data['dataset.json']);
    expect(config.location).to.deep.include({ kind: 'dynamodb', endpoint: peer.endpoint, credentialsSecretRef: { name: 'shop-dynamodb' }, defaultConsistency: 'QUORUM' });
    const sa: any = await waitFor('the data-plane ServiceAccount', () => getObject(cluster, ns, 'serviceaccount', 'local-dataplane'));
    expect(sa.metadata.annotations).to.deep.include({ 'eks.amazonaws.com/role-arn': 'arn:aws:iam::123456789012:role/data-access-shop' });
    const volumes = await waitFor('the data-plane Deployment to mount the credentials Secret', async () => {
      const pod = (await getObject(cluster, ns, 'deployment', 'local-dataplane'))?.spec.template.spec;
      const found = (pod?.volumes ?? []).filter((v: { secret?: unknown }) => v.secret);
      return found.length ? found : undefined;
    });
    expect(volumes).to.deep.equal([
      {
        name: secretVolumeName('shop-dynamodb'),
        secret: { secretName: 'shop-dynamodb', items: [{ key: 'accessKeyId', path: 'accessKeyId' }, { key: 'secretAccessKey', path: 'secretAccessKey' }], defaultMode: 0o440, optional: false },
      },
    ]);

    // The data plane as its container runs it, the Secret's files laid out as the kubelet mounts them.
    const dataDir = dataPlaneDataDir('ddb');
    const secretsDir = join(dataDir, 'secrets');
    mkdirSync(join(secretsDir, 'shop-dynamodb'), { recursive: true });
    writeFileSync(join(secretsDir, 'shop-dynamodb', 'accessKeyId'), peer.credentials.accessKeyId);
    writeFileSync(join(secretsDir, 'shop-dynamodb', 'secretAccessKey'), peer.credentials.secretAccessKey);
    const { dataplane, port } = await startClusterDataPlane(cluster, ns, { env: { DAS_SECRETS_DIR: secretsDir, DATA_DIR: dataDir } });
    try {
      await waitFor('the data plane to be ready', async () => {
        if (dataplane.child.exitCode !== null) throw new Error(`data plane exited: ${dataplane.output()}`);
        return (await httpGet(port, '/readyz').catch(() => ({ status: 0 }))).status === 200;
      }, 120_000);
      const headers = { host: 'iam.localhost', authorization: 'Proxy shop-admin', 'content-type': 'application/json' };
      const created = await httpRequest(port, 'POST', '/shop', headers, JSON.stringify({ create: { schema: 'shop.Customer', id: 'ada', data: { name: 'Ada' } } }));
      expect(created.status, created.body).to.equal(201);
      const read = await httpGet(port, '/shop/shop.Customer/ada', { host: 'iam.localhost', authorization: 'Proxy shop-admin' });
      expect(JSON.parse(read.body)).to.deep.equal({ id: 'ada', version: 1, name: 'Ada' });
    } finally {
      await dataplane.stop();
    }
  });
});
