/**
 * The administrative API in a cluster, against a real kube-apiserver: it writes Dataset resources
 * (create, pause and resume as a merge patch of spec.paused, delete) in its namespace, lists and
 * changes only its Environment's Datasets, and the Role the operator renders for the data plane's
 * ServiceAccount allows exactly that, in that namespace only (checked by the apiserver's authorizer).
 */
import { expect } from 'chai';
import { KubeConfig } from '@kubernetes/client-node';
import { join } from 'node:path';
import { KubeAdmin } from '../../dataplane/src/admin/kube-admin.js';
import type { ConfigStore } from '../../dataplane/src/config/store.js';
import type { EnvironmentConfig, EnvironmentResource } from '../../model/types.js';
import { renderDataplaneRole, renderDataplaneRoleBinding } from '../../operator/src/render/dataplane.js';
import { startKubeCluster, type KubeCluster } from '../peers/kube/cluster.js';
import { apply, createNamespace, kubectl, kubectlJson, REPO_ROOT } from './harness.js';

describe('administrative API on Kubernetes (kube-apiserver)', function () {
  this.timeout(180_000);
  let cluster: KubeCluster;
  let ns: string;
  let admin: KubeAdmin;
  const env = { id: 'local', admin: { principals: ['ops-*'] } } as unknown as EnvironmentConfig;
  const store = { dataset: () => undefined, datasetIds: () => [] } as unknown as ConfigStore;
  const request = (method: string, path: string, body?: unknown) => admin.handle({ method, segments: path.split('/').filter(Boolean), body }, env);
  const orders = {
    metadata: { name: 'orders' },
    spec: { location: { kind: 'postgres', databaseSchema: 'orders' }, schemas: { 'shop.Order': { properties: { total: { type: 'number' } } } } },
  };

  before(async () => {
    cluster = await startKubeCluster();
    await kubectl(cluster, ['apply', '-f', join(REPO_ROOT, 'crds')]);
    await kubectl(cluster, ['wait', '--for=condition=established', '--timeout=60s', 'crd/datasets.dataaccess.dev']);
    ns = await createNamespace(cluster, 'admin');
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(cluster.kubeconfigPath);
    admin = new KubeAdmin(ns, store, kubeConfig);
  });
  after(async () => cluster?.stop());

  it("the data plane's Role lets its ServiceAccount change Datasets in its namespace only, and only with admin principals", async () => {
    const environment = (spec: object) => ({ apiVersion: 'dataaccess.dev/v1alpha1', kind: 'Environment', metadata: { name: 'local', namespace: ns, uid: 'u' }, spec: { type: 'internal', ...spec } }) as unknown as EnvironmentResource;
    const owner = { apiVersion: 'dataaccess.dev/v1alpha1', kind: 'Environment', name: 'local', uid: 'u' };
    // Applied without their owner reference: no Environment object exists in this test.
    const plain = <T extends { metadata: { ownerReferences?: unknown } }>(o: T) => ({ ...o, metadata: { ...o.metadata, ownerReferences: undefined } });
    await apply(cluster, ns, JSON.stringify({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'local-dataplane' } }));
    await apply(cluster, ns, JSON.stringify(plain(renderDataplaneRole(environment({ admin: { principals: ['ops-*'] } }), owner as never, ns) as never)));
    await apply(cluster, ns, JSON.stringify(plain(renderDataplaneRoleBinding(environment({}), owner as never, ns) as never)));
    const can = async (verb: string, resource: string, namespace = ns) =>
      (await cluster.kubectl(['auth', 'can-i', verb, resource, '-n', namespace, `--as=system:serviceaccount:${ns}:local-dataplane`])).stdout.trim();
    for (const verb of ['get', 'list', 'create', 'patch', 'delete']) expect(await can(verb, 'datasets.dataaccess.dev'), verb).to.equal('yes');
    expect(await can('update', 'datasets.dataaccess.dev')).to.equal('no');
    expect(await can('create', 'datasets.dataaccess.dev', 'default')).to.equal('no');
    expect(await can('create', 'configmaps')).to.equal('no');
    expect(await can('get', 'secrets')).to.equal('no');
    // Without admin principals the Role grants no Datasets.
    await apply(cluster, ns, JSON.stringify(plain(renderDataplaneRole(environment({}), owner as never, ns) as never)));
    expect(await can('create', 'datasets.dataaccess.dev')).to.equal('no');
    expect(await can('list', 'configmaps')).to.equal('yes');
  });

  it('creates, lists, pauses, resumes and deletes Dataset resources; refuses bad ones and leaves other Environments alone', async () => {
    const created = await request('POST', 'datasets', orders);
    expect(created).to.deep.equal({ status: 201, body: { id: 'orders', status: 'pending', managed: true } });
    const resource = await kubectlJson(cluster, ['-n', ns, 'get', 'dataset', 'orders']);
    expect(resource.spec).to.deep.include({ environment: 'local', location: { kind: 'postgres', databaseSchema: 'orders' } });
    await request('POST', 'datasets', orders).then(
      () => expect.fail('a second create must be refused'),
      (err) => expect(err.status).to.equal(409),
    );
    await request('POST', 'datasets', { metadata: { name: 'bad' }, spec: { location: { kind: 'postgres' }, schemas: { 'shop.Order': { properties: { total: { type: 'money' } } } } } }).then(
      () => expect.fail('an invalid Dataset must be refused'),
      (err) => expect([err.status, err.code]).to.deep.equal([400, 'INVALID_MANIFEST']),
    );

    await apply(cluster, ns, JSON.stringify({ apiVersion: 'dataaccess.dev/v1alpha1', kind: 'Dataset', metadata: { name: 'elsewhere' }, spec: { ...orders.spec, environment: 'other' } }));
    const list = await request('GET', 'datasets');
    expect((list.body as { items: { id: string }[] }).items.map((d) => d.id)).to.deep.equal(['orders']);
    await request('GET', 'datasets/elsewhere').then(
      () => expect.fail('another Environment\'s Dataset must not be shown'),
      (err) => expect(err.status).to.equal(404),
    );

    expect((await request('POST', 'datasets/orders/pause')).body).to.deep.equal({ id: 'orders', paused: true });
    expect((await kubectlJson(cluster, ['-n', ns, 'get', 'dataset', 'orders'])).spec.paused).to.equal(true);
    expect((await request('GET', 'datasets/orders')).body).to.include({ id: 'orders', paused: true });
    expect((await request('POST', 'datasets/orders/resume')).body).to.deep.equal({ id: 'orders', paused: false });
    expect((await kubectlJson(cluster, ['-n', ns, 'get', 'dataset', 'orders'])).spec).to.not.have.property('paused');

    expect((await request('DELETE', 'datasets/orders')).body).to.deep.equal({ id: 'orders', deleted: true });
    const gone = await cluster.kubectl(['-n', ns, 'get', 'dataset', 'orders']);
    expect(`${gone.stdout}${gone.stderr}`).to.match(/NotFound|not found/);
    await request('DELETE', 'datasets/elsewhere').then(
      () => expect.fail('another Environment\'s Dataset must not be deleted'),
      (err) => expect(err.status).to.equal(404),
    );
  });

  it('refuses a Dataset on storage another Dataset of the namespace holds, whatever its Environment (409 STORAGE_IN_USE); nothing is created', async () => {
    // "elsewhere" (Environment "other", applied above) holds schema orders.
    await request('POST', 'datasets', { metadata: { name: 'orders-copy' }, spec: { ...orders.spec, auth: { iam: { principals: ['mallory'] } } } }).then(
      () => expect.fail('a Dataset on another\'s schema must be refused'),
      (err) => {
        expect([err.status, err.code]).to.deep.equal([409, 'STORAGE_IN_USE']);
        expect(err.message).to.contain('dataset "elsewhere"');
      },
    );
    const missing = await cluster.kubectl(['-n', ns, 'get', 'dataset', 'orders-copy']);
    expect(`${missing.stdout}${missing.stderr}`).to.match(/NotFound|not found/);
    await request('POST', 'datasets', { metadata: { name: 'meta' }, spec: { ...orders.spec, location: { kind: 'postgres', databaseSchema: 'information_schema' } } }).then(
      () => expect.fail('a system schema must be refused'),
      (err) => expect([err.status, err.code]).to.deep.equal([400, 'INVALID_MANIFEST']),
    );
  });
});
