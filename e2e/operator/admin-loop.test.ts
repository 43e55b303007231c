/**
 * The administrative API's whole loop in a cluster, against a real kube-apiserver (with
 * kube-controller-manager): the chart's operator running as its ServiceAccount, and a data plane
 * process in cluster mode (config from the operator's ConfigMaps, KUBECONFIG of the data plane's
 * ServiceAccount, so its requests pass exactly the Role the operator rendered). An admin principal
 * POSTs /_admin/datasets on the iam gateway → the Dataset resource appears → the operator
 * reconciles it (ConfigMap, Ready) → the data plane serves it → pause (kubectl get datasets, the
 * Paused condition, 503 DATASET_PAUSED with Retry-After) → resume → DELETE → the finalizer runs
 * and the data plane answers 404 DATASET_NOT_FOUND. A non-admin is refused and creates nothing.
 * Also: the Environment's bulk-load S3 credentials Secret and its imports claim mounted into the data-plane Deployment.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { secretVolumeName } from '../../model/secrets.js';
import { freshDatabase } from '../../dataplane/test-support/postgres.js';
import { startKubeCluster, type KubeCluster } from '../peers/kube/cluster.js';
import {
  REPO_ROOT,
  apply,
  callJson,
  condition,
  createNamespace,
  getObject,
  kubectl,
  resyncAndCountWrites,
  startChartOperator,
  startReadyClusterDataPlane,
  waitFor,
  waitForCondition,
  type JsonAnswer,
  type ManagedProcess,
  type OperatorProcess,
} from './harness.js';

const RELEASE = 'adm';

/** One request to the data plane as an iam principal. */
function call(port: number, method: string, path: string, principal: string, body?: unknown): Promise<JsonAnswer> {
  return callJson(port, method, path, { host: 'iam.localhost', authorization: `Proxy ${principal}` }, body);
}

describe('administrative API loop e2e (kube-apiserver, operator, data plane in cluster mode)', function () {
  this.timeout(180_000);
  let cluster: KubeCluster;
  let operator: OperatorProcess;
  let dataplane: ManagedProcess | undefined;
  let ns: string;
  let port: number;

  const admin = (method: string, path: string, body?: unknown) => call(port, method, path, 'demo-admin', body);
  const datasetNames = async () => (await kubectl(cluster, ['-n', ns, 'get', 'datasets', '-o', 'name'])).trim().split('\n').filter(Boolean);

  before(async () => {
    cluster = await startKubeCluster({ controllerManager: true });
    operator = await startChartOperator(cluster, RELEASE, `e2e-admin-${process.pid}`);

    // The example Environment (admin principals: demo-admin), with bulk-load S3 credentials from a Secret.
    ns = await createNamespace(cluster, 'admin-loop');
    await kubectl(cluster, ['-n', ns, 'create', 'secret', 'generic', 's3-loader', '--from-literal=accessKeyId=AKIDLOADER', '--from-literal=secretAccessKey=loader-secret']);
    const environment = parseAllDocuments(readFileSync(join(REPO_ROOT, 'examples', 'environment.yaml'), 'utf8'))[0].toJS();
    environment.spec.bulkLoad = { s3: { endpoint: 'http://127.0.0.1:1', credentialsSecretRef: { name: 's3-loader' } }, imports: { claimName: 'bulk-imports', subPath: 'loads' } };
    await apply(cluster, ns, JSON.stringify(environment));
    await waitForCondition(cluster, ns, 'environment', 'local', 'Reconciled', 'True');

    // The data plane as its Pod runs it: cluster mode, its own ServiceAccount, the operator's Role.
    // The test process's PostgreSQL (a fresh database) rather than an embedded one per data plane: faster, same server code.
    ({ dataplane, port } = await startReadyClusterDataPlane(cluster, ns, { dataDirPrefix: 'admin', env: { DATABASE_URL: await freshDatabase() } }));
  });

  after(async () => {
    await dataplane?.stop();
    await operator?.stop();
    await cluster?.stop();
  });

  it('the Environment\'s bulk-load S3 credentials Secret is mounted into the data-plane Deployment (read-only; session token optional), with no rewrite on a resync', async () => {
    const name = secretVolumeName('s3-loader');
    const spec = await waitFor('the data-plane Deployment to mount the S3 credentials Secret', async () => {
      const pod = (await getObject(cluster, ns, 'deployment', 'local-dataplane'))?.spec.template.spec;
      return pod?.volumes?.some((v: { name: string }) => v.name === name) ? pod : undefined;
    });
    // As the API server stores it.
    expect(spec.volumes.find((v: { name: string }) => v.name === name)).to.deep.equal({
      name,
      projected: {
        defaultMode: 0o440,
        sources: [
          { secret: { name: 's3-loader', items: [{ key: 'accessKeyId', path: 'accessKeyId' }, { key: 'secretAccessKey', path: 'secretAccessKey' }], optional: false } },
          { secret: { name: 's3-loader', items: [{ key: 'sessionToken', path: 'sessionToken' }], optional: true } },
        ],
      },
    });
    expect(spec.containers[0].volumeMounts.filter((m: { name: string }) => m.name === name)).to.deep.equal([{ name, mountPath: '/var/run/dataaccess/secrets/s3-loader', readOnly: true }]);
    // The imports claim (spec.bulkLoad.imports, kept by the CRD's schema): a read-only PVC, mounted read-only as DAS_IMPORT_ROOT.
    expect(spec.volumes.filter((v: { name: string }) => v.name === 'imports')).to.deep.equal([{ name: 'imports', persistentVolumeClaim: { claimName: 'bulk-imports', readOnly: true } }]);
    expect(spec.containers[0].volumeMounts.filter((m: { name: string }) => m.name === 'imports')).to.deep.equal([{ name: 'imports', mountPath: '/var/lib/data-access-imports', readOnly: true, subPath: 'loads' }]);
    expect(spec.containers[0].env).to.deep.include({ name: 'DAS_IMPORT_ROOT', value: '/var/lib/data-access-imports' });
    const config = JSON.parse((await getObject(cluster, ns, 'configmap', 'local-dataplane')).data['environment.json']);
    expect(config.bulkLoad.s3.credentialsSecretRef).to.deep.equal({ name: 's3-loader' });
    expect((await resyncAndCountWrites(operator)).writes).to.equal(0);
  });

  it('a non-admin principal is refused (403) and no Dataset is created', async () => {
    const refused = await call(port, 'POST', '/_admin/datasets', 'mallory', { metadata: { name: 'sneaky' }, spec: { location: { kind: 'postgres' }, schemas: { 'x.Y': { properties: {} } } } });
    expect(refused.status, refused.text).to.equal(403);
    expect(refused.json.error.code).to.equal('NOT_AN_ADMIN');
    expect((await call(port, 'GET', '/_admin/datasets', 'mallory')).status).to.equal(403);
    expect(await datasetNames()).to.deep.equal([]);
  });

  it('create → the Dataset resource → reconciled (ConfigMap, Ready) → served; pause → kubectl and conditions show it, 503 DATASET_PAUSED; resume; delete → finalizer, 404', async () => {
    const started = Date.now();
    const manifest = {
      metadata: { name: 'orders' },
      spec: {
        location: { kind: 'postgres', databaseSchema: 'orders' },
        auth: { iam: { principals: ['demo-admin'] } },
        schemas: { 'shop.Order': { properties: { item: { type: 'string' }, total: { type: 'number' } } } },
      },
    };
    const created = await admin('POST', '/_admin/datasets', manifest);
    expect(created.status, created.text).to.equal(201);
    expect(created.json).to.deep.equal({ id: 'orders', status: 'pending', managed: true });

    // The resource, written by the data plane through its Role; the operator takes it from there.
    const resource = await getObject(cluster, ns, 'dataset', 'orders');
    expect(resource.spec).to.deep.include({ environment: 'local', location: { kind: 'postgres', databaseSchema: 'orders' } });
    const ready = await waitForCondition(cluster, ns, 'dataset', 'orders', 'Ready', 'True');
    expect(ready.metadata.finalizers).to.deep.equal(['dataaccess.dev/finalizer']);
    expect(condition(ready, 'Paused')).to.include({ status: 'False', reason: 'NotPaused' });
    const configMap = await getObject(cluster, ns, 'configmap', 'local-dataset-orders');
    expect(Object.keys(JSON.parse(configMap.data['dataset.json']).schemas)).to.deep.equal(['shop.Order']);

    // Served by the running data plane once its ConfigMap watch delivers it.
    const write = await waitFor('the data plane to serve orders', async () => {
      const res = await admin('POST', '/orders', { create: { schema: 'shop.Order', id: 'o1', data: { item: 'tea', total: 4.5 } } });
      return res.status === 201 ? res : undefined;
    });
    expect(write.json).to.include({ id: 'o1', version: 1 });
    const read = await admin('GET', '/orders/shop.Order/o1');
    expect(read.status, read.text).to.equal(200);
    expect(read.json).to.deep.equal({ id: 'o1', version: 1, item: 'tea', total: 4.5 });
    const listed = await admin('GET', '/_admin/datasets');
    expect(listed.json.items).to.deep.equal([{ id: 'orders', status: 'ready', paused: false, managed: true, generation: 1, ready: { status: 'True', reason: 'ConfigPublished' } }]);

    // Pause: the resource, its condition, kubectl's Paused column, and the data plane's answer.
    expect((await admin('POST', '/_admin/datasets/orders/pause')).json).to.deep.equal({ id: 'orders', paused: true });
    const paused = await waitForCondition(cluster, ns, 'dataset', 'orders', 'Paused', 'True', 'PausedBySpec');
    expect(paused.spec.paused).to.equal(true);
    const table = await kubectl(cluster, ['-n', ns, 'get', 'datasets']);
    const [header, row] = table.trim().split('\n');
    const columns = header.split(/\s+/);
    expect(columns).to.include('PAUSED');
    expect(row.split(/\s+/)[columns.indexOf('PAUSED')]).to.equal('true');
    const refusedWhilePaused = await waitFor('the data plane to answer 503 DATASET_PAUSED', async () => {
      const res = await admin('GET', '/orders/shop.Order/o1');
      return res.status === 503 && res.json?.error?.code === 'DATASET_PAUSED' ? res : undefined;
    });
    expect(refusedWhilePaused.headers['retry-after']).to.equal('30');
    const pausedWrite = await admin('POST', '/orders', { create: { schema: 'shop.Order', id: 'o2', data: { item: 'cake' } } });
    expect([pausedWrite.status, pausedWrite.json.error.code]).to.deep.equal([503, 'DATASET_PAUSED']);

    // Resume: served again, the stored record kept.
    expect((await admin('POST', '/_admin/datasets/orders/resume')).json).to.deep.equal({ id: 'orders', paused: false });
    await waitForCondition(cluster, ns, 'dataset', 'orders', 'Paused', 'False', 'NotPaused');
    const resumed = await waitFor('the data plane to serve orders again', async () => {
      const res = await admin('GET', '/orders/shop.Order/o1');
      return res.status === 200 ? res : undefined;
    });
    expect(resumed.json).to.deep.equal({ id: 'o1', version: 1, item: 'tea', total: 4.5 });

    // Delete: the finalizer removes the ConfigMap, then the Dataset goes; the data plane stops serving it.
    const deleted = await admin('DELETE', '/_admin/datasets/orders');
    expect(deleted.json).to.deep.equal({ id: 'orders', deleted: true });
    await waitFor('the Dataset to be gone', async () => (await getObject(cluster, ns, 'dataset', 'orders')) === undefined);
    expect(await getObject(cluster, ns, 'configmap', 'local-dataset-orders')).to.equal(undefined);
    const gone = await waitFor('the data plane to answer 404 DATASET_NOT_FOUND', async () => {
      const res = await admin('GET', '/orders/shop.Order/o1');
      return res.status === 404 ? res : undefined;
    });
    expect(gone.json.error.code).to.equal('DATASET_NOT_FOUND');
    expect((await admin('GET', '/_admin/datasets/orders')).status).to.equal(404);
    expect(await datasetNames()).to.deep.equal([]);
    // The loop itself, cluster and data plane start-up aside.
    expect(Date.now() - started).to.be.below(60_000);
  });
});
