/**
 * Two operator replicas against one API server: only the Lease holder reconciles; a leader that
 * shuts down releases the Lease and the standby takes over; a leader that loses the Lease exits.
 */
import { expect } from 'chai';
import { join } from 'node:path';
import { startKubeCluster, type KubeCluster } from '../peers/kube/cluster.js';
import { REPO_ROOT, createNamespace, getObject, kubectl, startOperator, waitFor, waitForCondition, type OperatorProcess } from './harness.js';

const LEASE = 'data-access-operator';
const EXAMPLES = join(REPO_ROOT, 'examples');

describe('operator leader election e2e (kube-apiserver)', function () {
  this.timeout(120_000);
  let cluster: KubeCluster;
  const running: OperatorProcess[] = [];

  const replica = async (identity: string, leaseNamespace: string) => {
    const operator = await startOperator(cluster.kubeconfigPath, {
      POD_NAME: identity,
      LEASE_NAMESPACE: leaseNamespace,
      LEASE_DURATION_SECONDS: '3',
      LEASE_RENEW_DEADLINE_SECONDS: '2',
      LEASE_RETRY_PERIOD_SECONDS: '0.25',
    });
    running.push(operator);
    return operator;
  };
  const isLeader = async (operator: OperatorProcess) => (await operator.metrics()).sum('data_access_operator_leader') === 1;
  const holder = async (namespace: string) => (await getObject(cluster, namespace, 'lease', LEASE))?.spec?.holderIdentity as string | undefined;

  before(async () => {
    cluster = await startKubeCluster();
    await kubectl(cluster, ['apply', '-f', join(REPO_ROOT, 'crds')]);
    await waitFor('the CRDs to be served', async () => (await cluster.kubectl(['get', 'environments', '-A'])).code === 0);
  });
  after(async () => {
    for (const operator of running) await operator.stop('SIGKILL');
    await cluster?.stop();
  });

  it('only the Lease holder reconciles; on SIGTERM it releases the Lease and the standby takes over', async () => {
    const leases = await createNamespace(cluster, 'lease');
    const a = await replica('replica-a', leases);
    await waitFor('replica-a to lead', () => isLeader(a));
    const b = await replica('replica-b', leases);
    expect(await holder(leases)).to.equal('replica-a');

    const ns = await createNamespace(cluster, 'le');
    await kubectl(cluster, ['-n', ns, 'apply', '-f', EXAMPLES]);
    await waitForCondition(cluster, ns, 'dataset', 'demo', 'Ready', 'True');
    expect(await isLeader(b)).to.equal(false);
    expect((await b.metrics()).writes()).to.equal(0); // the standby wrote nothing
    expect((await a.metrics()).writes()).to.be.greaterThan(0);

    expect(await a.stop('SIGTERM')).to.equal(0);
    expect(a.output()).to.contain('released the lease');
    await waitFor('replica-b to lead', () => isLeader(b));
    expect(await holder(leases)).to.equal('replica-b');

    // The new leader reconciles what changes next.
    await kubectl(cluster, ['-n', ns, 'patch', 'dataset', 'sealed', '--type', 'merge', '-p', JSON.stringify({ spec: { auth: { iam: { rawSqlEndpointEnabled: true } } } })]);
    await waitFor('the new leader to publish the change', async () => {
      const cm = await getObject(cluster, ns, 'configmap', 'local-dataset-sealed');
      return JSON.parse(cm.data['dataset.json']).auth.iam.rawSqlEndpointEnabled === true;
    });
    await b.stop();
  });

  it('a leader killed without releasing is replaced once its Lease expires', async () => {
    const leases = await createNamespace(cluster, 'lease');
    const a = await replica('replica-c', leases);
    await waitFor('replica-c to lead', () => isLeader(a));
    const b = await replica('replica-d', leases);
    await a.stop('SIGKILL');
    expect(await holder(leases)).to.equal('replica-c'); // nobody released it
    await waitFor('replica-d to take over the expired Lease', () => isLeader(b));
    expect((await getObject(cluster, leases, 'lease', LEASE)).spec.leaseTransitions).to.equal(1);
    await b.stop();
  });

  it('a leader that loses its Lease stops (exit 1) instead of reconciling alongside the new holder', async () => {
    const leases = await createNamespace(cluster, 'lease');
    const a = await replica('replica-e', leases);
    await waitFor('replica-e to lead', () => isLeader(a));
    const lease = await getObject(cluster, leases, 'lease', LEASE);
    // Another holder takes the Lease over (as a partitioned standby would after expiry).
    await kubectl(cluster, ['-n', leases, 'patch', 'lease', LEASE, '--type', 'merge', '-p', JSON.stringify({ spec: { holderIdentity: 'intruder', leaseDurationSeconds: 3600 } })]);
    expect(lease.spec.holderIdentity).to.equal('replica-e');
    const code = await waitFor('replica-e to exit', async () => (a.child.exitCode !== null ? { code: a.child.exitCode } : undefined));
    expect(code.code).to.equal(1);
    expect(a.output()).to.contain('leadership lost');
  });
});
