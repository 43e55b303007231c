/**
 * Issue 28, finding 7, in a cluster (a real kube-apiserver, the chart's operator as its
 * ServiceAccount, a data plane process in cluster mode with its own ServiceAccount and the Role the
 * operator rendered): a Dataset deleted with deletionPolicy Retain leaves its data and ownership
 * marker; a new Dataset manifest on that storage is published by the operator but not served by
 * the data plane, which says why in its StorageRetained condition, and the operator reports
 * Degraded (reason StorageRetained) naming the old dataset. `spec.adopt` naming it clears both.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { freshDatabase } from '../../dataplane/test-support/postgres.js';
import { startKubeCluster, type KubeCluster } from '../peers/kube/cluster.js';
import {
  REPO_ROOT,
  apply,
  condition,
  createNamespace,
  getObject,
  httpGet,
  kubectl,
  startChartOperator,
  startReadyClusterDataPlane,
  waitFor,
  waitForCondition,
  type ManagedProcess,
  type OperatorProcess,
} from './harness.js';

const RELEASE = 'ret';

function datasetManifest(name: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    apiVersion: 'dataaccess.dev/v1alpha1',
    kind: 'Dataset',
    metadata: { name },
    spec: {
      environment: 'local',
      location: { kind: 'postgres', databaseSchema: 'retained_cluster' },
      auth: { iam: { principals: [name] } },
      schemas: { 'demo.Note': { properties: { text: { type: 'string' } } } },
      ...extra,
    },
  });
}

describe('retained storage in a cluster: Degraded StorageRetained naming the old Dataset (kube-apiserver, operator, data plane)', function () {
  this.timeout(240_000);
  let cluster: KubeCluster;
  let operator: OperatorProcess;
  let dataplane: ManagedProcess | undefined;
  let ns: string;
  let port: number;

  const readiness = async () => JSON.parse((await httpGet(port, '/readyz')).body);

  before(async () => {
    cluster = await startKubeCluster({ controllerManager: true });
    operator = await startChartOperator(cluster, RELEASE, `e2e-retained-${process.pid}`);
    ns = await createNamespace(cluster, 'retained');
    const environment = parseAllDocuments(readFileSync(join(REPO_ROOT, 'examples', 'environment.yaml'), 'utf8'))[0].toJS();
    await apply(cluster, ns, JSON.stringify(environment));
    await waitForCondition(cluster, ns, 'environment', 'local', 'Reconciled', 'True');

    ({ dataplane, port } = await startReadyClusterDataPlane(cluster, ns, { dataDirPrefix: 'retained', env: { DATABASE_URL: await freshDatabase() } }));
  });

  after(async () => {
    await dataplane?.stop();
    await operator?.stop();
    await cluster?.stop();
  });

  it('team-a is served and deleted (Retain); mallory\'s Dataset on that storage is Degraded, reason StorageRetained, naming team-a; adopt clears it', async () => {
    await apply(cluster, ns, datasetManifest('team-a'));
    await waitFor('team-a to be served', async () => (await readiness()).datasets?.['team-a']?.status === 'ready');
    await kubectl(cluster, ['-n', ns, 'delete', 'dataset', 'team-a', '--wait=true']);
    await waitFor('team-a to be unloaded', async () => !(await readiness()).datasets?.['team-a']);

    await apply(cluster, ns, datasetManifest('mallory'));
    const degraded = await waitForCondition(cluster, ns, 'dataset', 'mallory', 'Degraded', 'True', 'StorageRetained').catch((err: Error) => {
      throw new Error(`${err.message}\ndata plane output (tail):\n${dataplane!.output().slice(-3000)}`);
    });
    expect(condition(degraded, 'Degraded')!.message).to.contain('dataset "team-a"').and.contain('spec.adopt: "team-a"');
    expect(condition(degraded, 'Ready')).to.include({ status: 'False', reason: 'StorageRetained' });
    // The data plane's own condition, for this generation; the data plane does not serve it.
    expect(condition(degraded, 'StorageRetained')).to.include({ status: 'True', reason: 'StorageRetained', observedGeneration: degraded.metadata.generation });
    expect((await readiness()).datasets.mallory).to.include({ status: 'failed' });
    // The data plane's log is batched (written up to 100 ms after the line) and reaches this process
    // through a pipe: the condition above can arrive first.
    await waitFor('the refusal in the data plane\'s log', async () => dataplane!.output().includes('storage holds another dataset\'s retained data'));

    // The operator's next status writes keep the data plane's condition (a resync rewrites nothing away).
    await apply(cluster, ns, datasetManifest('mallory', { adopt: 'team-a' }));
    const adopted = await waitForCondition(cluster, ns, 'dataset', 'mallory', 'Degraded', 'False');
    await waitFor('the data plane to serve mallory', async () => (await readiness()).datasets?.mallory?.status === 'ready');
    const cleared = await waitFor('StorageRetained to clear', async () => {
      const object = await getObject(cluster, ns, 'dataset', 'mallory');
      return condition(object, 'StorageRetained')?.status === 'False' ? object : undefined;
    });
    expect(condition(cleared, 'StorageRetained')).to.include({ reason: 'OwnStorage', observedGeneration: adopted.metadata.generation });
    expect(condition(cleared, 'Ready')).to.include({ status: 'True' });
  });
});
