/**
 * The operator end to end with warehouse Datasets (examples/warehouse): a snowflake and an iceberg
 * Dataset. The chart's operator checks their location settings, renders their config and mounts the
 * credentials Secret's key into the data-plane Deployment; the data plane, run as its container
 * would with the Secret's file where the kubelet puts it, serves both datasets through the real
 * snowflake-sdk from the Snowflake TEST PEER (e2e/peers/snowflake), on the executor's warehouse when
 * a request names one.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { secretVolumeName } from '../../model/secrets.js';
import { testPostgresAdminUrl } from '../../dataplane/test-support/postgres.js';
import { startSnowflakeTestPeer, type SnowflakeTestPeerHandle } from '../peers/snowflake/peer.js';
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

const RELEASE = 'wh';
// Databases of their own on the shared test PostgreSQL (other suites in this process use the same examples).
const RUN = randomBytes(4).toString('hex').toUpperCase();
const LOGIN = JSON.stringify({ username: 'das', password: 'das' });

const example = (file: string) => parseAllDocuments(readFileSync(join(REPO_ROOT, 'examples/warehouse', file), 'utf8'))[0].toJS();

describe('operator e2e: warehouse Datasets (snowflake and iceberg, served through snowflake-sdk from the test peer)', function () {
  this.timeout(240_000);
  let cluster: KubeCluster;
  let operator: OperatorProcess;
  let peer: SnowflakeTestPeerHandle;

  before(async () => {
    peer = await startSnowflakeTestPeer({ adminUrl: await testPostgresAdminUrl() });
    cluster = await startKubeCluster({ controllerManager: true });
    operator = await startChartOperator(cluster, RELEASE, `e2e-wh-${process.pid}`);
  });
  after(async () => {
    await operator?.stop();
    await cluster?.stop();
    await peer?.stop();
  });

  it('refuses a warehouse Dataset missing its settings, naming them in status', async () => {
    const ns = await createNamespace(cluster, 'whbad');
    await apply(cluster, ns, JSON.stringify(example('environment.yaml')));
    const dataset = example('dataset-lake.yaml');
    delete dataset.spec.location.externalVolume;
    dataset.spec.location.tablePrefix = 'x-';
    await apply(cluster, ns, JSON.stringify(dataset));
    const object = await waitForCondition(cluster, ns, 'dataset', 'lake', 'Ready', 'False');
    const ready = object.status.conditions.find((c: { type: string }) => c.type === 'Ready');
    expect(ready.message).to.contain('$.spec.location.externalVolume: iceberg locations need "externalVolume"');
    expect(ready.message).to.contain('$.spec.location.tablePrefix: is not a setting of iceberg locations (it belongs to dynamodb)');
  });

  it('renders both kinds, mounts the login Secret key, and the data plane serves them from the warehouse (executor warehouse, ATOMIC_ALL refused on iceberg)', async () => {
    const ns = await createNamespace(cluster, 'warehouse');
    await kubectl(cluster, ['-n', ns, 'create', 'secret', 'generic', 'warehouse-login', `--from-literal=login=${LOGIN}`]);
    await apply(cluster, ns, JSON.stringify(example('environment.yaml')));
    for (const file of ['dataset-sales.yaml', 'dataset-lake.yaml']) {
      const dataset = example(file);
      // Each run gets its own databases on the shared peer.
      dataset.spec.location = { ...dataset.spec.location, accessUrl: peer.url, database: `${dataset.spec.location.database}_${RUN}` };
      await apply(cluster, ns, JSON.stringify(dataset));
    }
    await waitForCondition(cluster, ns, 'dataset', 'sales', 'Ready', 'True');
    await waitForCondition(cluster, ns, 'dataset', 'lake', 'Ready', 'True');

    const sales = JSON.parse((await getObject(cluster, ns, 'configmap', 'local-dataset-sales')).data['dataset.json']);
    expect(sales.location).to.deep.include({ kind: 'snowflake', accessUrl: peer.url, warehouse: 'LOADING_WH', readOnlyRole: 'SERVICE_READONLY', defaultConsistency: 'ATOMIC' });
    const lake = JSON.parse((await getObject(cluster, ns, 'configmap', 'local-dataset-lake')).data['dataset.json']);
    expect(lake.location).to.deep.include({ kind: 'iceberg', externalVolume: 'LAKE_VOLUME', baseLocation: 'das/lake', catalog: 'SNOWFLAKE' });
    const volumes = await waitFor('the data-plane Deployment to mount the login Secret', async () => {
      const pod = (await getObject(cluster, ns, 'deployment', 'local-dataplane'))?.spec.template.spec;
      const found = (pod?.volumes ?? []).filter((v: { secret?: unknown }) => v.secret);
      return found.length ? found : undefined;
    });
    expect(volumes).to.deep.equal([
      { name: secretVolumeName('warehouse-login'), secret: { secretName: 'warehouse-login', items: [{ key: 'login', path: 'login' }], defaultMode: 0o440, optional: false } },
    ]);

    // The data plane as its container runs it, the Secret's file laid out as the kubelet mounts it.
    const dataDir = dataPlaneDataDir('wh');
    const secretsDir = join(dataDir, 'secrets');
    mkdirSync(join(secretsDir, 'warehouse-login'), { recursive: true });
    writeFileSync(join(secretsDir, 'warehouse-login', 'login'), LOGIN);
    const { dataplane, port } = await startClusterDataPlane(cluster, ns, { env: { DAS_SECRETS_DIR: secretsDir, DATA_DIR: dataDir } });
    try {
      await waitFor('the data plane to be ready', async () => {
        if (dataplane.child.exitCode !== null) throw new Error(`data plane exited: ${dataplane.output()}`);
        const ready = await httpGet(port, '/readyz').catch(() => ({ status: 0, body: '' }));
        return ready.status === 200 && JSON.parse(ready.body).status === 'ready';
      }, 120_000);
      const as = (principal: string, extra: Record<string, string> = {}) => ({ host: 'iam.localhost', authorization: `Proxy ${principal}`, 'content-type': 'application/json', ...extra });

      peer.clearQueries();
      const created = await httpRequest(port, 'POST', '/sales', as('sales-admin', { 'executor-name': 'reporting' }), JSON.stringify({ create: { schema: 'sales.Customer', id: 'acme', data: { name: 'Acme', region: 'EU' } } }));
      expect(created.status, created.body).to.equal(201);
      const writes = peer.queries().filter((q) => /^\s*(MERGE|INSERT)/i.test(q.sqlText));
      expect(writes.length, 'the create wrote through the warehouse').to.be.greaterThan(0);
      expect([...new Set(writes.map((q) => q.warehouse))], 'on the executor\'s warehouse').to.deep.equal(['REPORTING_WH']);
      const read = await httpGet(port, '/sales/sales.Customer/acme', as('sales-admin'));
      expect(read.status, read.body).to.equal(200);
      expect(JSON.parse(read.body)).to.deep.include({ id: 'acme', version: 1, name: 'Acme', region: 'EU' });

      const device = await httpRequest(port, 'POST', '/lake', as('lake-admin'), JSON.stringify({ create: { schema: 'lake.Device', id: 'd1', data: { name: 'Probe', installed: '2026-01-02' } } }));
      expect(device.status, device.body).to.equal(201);
      expect(JSON.parse((await httpGet(port, '/lake/lake.Device/d1', as('lake-admin'))).body)).to.deep.include({ id: 'd1', name: 'Probe', installed: '2026-01-02' });
      expect((await peer.icebergTables(lake.location.database)).map((t) => t.table).sort()).to.include.members(['LAKE_DEVICE']);
      peer.clearQueries();
      const refused = await httpRequest(port, 'POST', '/lake', as('lake-admin'), JSON.stringify({ create: { schema: 'lake.Device', id: 'd2', data: { name: 'X' }, consistency: 'ATOMIC_ALL' } }));
      expect(refused.status, refused.body).to.equal(400);
      // Health pings and the transaction runner's background claims (DAS_TRANSACTIONS) are not the request's.
      expect(peer.queries().filter((q) => !/^\s*SELECT 1\b/i.test(q.sqlText) && !q.sqlText.includes('"DAS_TRANSACTIONS"')), 'nothing sent for a refused ATOMIC_ALL').to.deep.equal([]);
    } finally {
      await dataplane.stop();
    }
  });
});
