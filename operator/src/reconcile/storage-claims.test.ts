/** The operator keeps Datasets' storage apart (storage-claims.ts, model/storage.ts): the later one is Degraded, its config not published. */
import { expect } from 'chai';
import { loadManifests } from '../../../model/manifests.js';
import { FakeCluster, fakeContext } from '../../test/fake-cluster.js';
import type { KubeObject } from '../kube/object-client.js';
import { reconcileDataset } from './dataset-reconciler.js';
import { storageConflict } from './storage-claims.js';

const NS = 'team-a';
const examples = loadManifests('examples');
const environment = () => ({ ...structuredClone(examples.environments[0]), metadata: { name: 'local', namespace: NS } }) as unknown as KubeObject;
/** The demo example under another name, on the given PostgreSQL schema. */
const dataset = (name: string, databaseSchema: string, principals = ['mallory']) => {
  const demo = structuredClone(examples.datasets.find((d) => d.metadata.name === 'demo')!);
  return { ...demo, metadata: { name, namespace: NS }, spec: { ...demo.spec, location: { kind: 'postgres', databaseSchema }, auth: { iam: { principals } } } } as unknown as KubeObject;
};
const condition = (object: KubeObject | undefined, type: string) =>
  ((object?.status as { conditions?: { type: string; status: string; reason: string; message: string }[] })?.conditions ?? []).find((c) => c.type === type);

describe('operator: Datasets may not share storage', () => {
  it('a Dataset naming a published Dataset\'s schema gets Degraded naming it, and no ConfigMap; it publishes once the schema is free', async () => {
    const cluster = new FakeCluster();
    const { ctx } = fakeContext(cluster);
    cluster.seed(environment());
    cluster.seed(dataset('demo', 'demo', ['demo-admin']));
    cluster.sync();
    await reconcileDataset(ctx, NS, 'demo');
    cluster.sync();
    expect(cluster.get('ConfigMap', NS, 'local-dataset-demo')).to.not.equal(undefined);

    // "attack" sorts before "demo": the published one still holds the schema.
    cluster.seed(dataset('attack', 'demo'));
    cluster.sync();
    const result = await reconcileDataset(ctx, NS, 'attack');
    cluster.sync();
    expect(cluster.get('ConfigMap', NS, 'local-dataset-attack')).to.equal(undefined);
    const degraded = condition(cluster.get('Dataset', NS, 'attack'), 'Degraded');
    expect(degraded?.status).to.equal('True');
    expect(degraded?.reason).to.equal('StorageInUse');
    expect(degraded?.message).to.contain('Dataset "demo"').and.contain('PostgreSQL schema "demo"');
    expect(condition(cluster.get('Dataset', NS, 'attack'), 'Ready')?.status).to.equal('False');
    expect(result.requeueAfterMs).to.be.greaterThan(0);
    // demo itself is untouched.
    await reconcileDataset(ctx, NS, 'demo');
    expect(condition(cluster.get('Dataset', NS, 'demo'), 'Degraded')?.status).to.equal('False');

    // demo goes (finalizer runs, ConfigMap deleted): the schema is free and "attack" publishes.
    await cluster.delete({ apiVersion: 'dataaccess.dev/v1alpha1', kind: 'Dataset', namespace: NS, name: 'demo' });
    cluster.sync();
    await reconcileDataset(ctx, NS, 'demo');
    cluster.sync();
    await reconcileDataset(ctx, NS, 'attack');
    cluster.sync();
    expect(cluster.get('ConfigMap', NS, 'local-dataset-attack')).to.not.equal(undefined);
    expect(condition(cluster.get('Dataset', NS, 'attack'), 'Degraded')?.status).to.equal('False');
  });

  it('a system schema is an invalid spec', async () => {
    const cluster = new FakeCluster();
    const { ctx } = fakeContext(cluster);
    cluster.seed(environment());
    cluster.seed(dataset('meta', 'information_schema'));
    cluster.sync();
    await reconcileDataset(ctx, NS, 'meta');
    cluster.sync();
    expect(cluster.get('ConfigMap', NS, 'local-dataset-meta')).to.equal(undefined);
    expect(condition(cluster.get('Dataset', NS, 'meta'), 'Degraded')?.message).to.contain('information_schema').and.contain('belongs to the store itself');
  });

  it('between Datasets that publish nothing yet, the first by name holds the storage; a published one keeps it whatever its name', () => {
    const view = (name: string, schema: string, published?: string) => ({
      name,
      spec: { environment: 'local', location: { kind: 'postgres' as const, databaseSchema: schema }, schemas: {} },
      ...(published ? { published: { kind: 'postgres' as const, databaseSchema: published } } : {}),
    });
    expect(storageConflict(view('b', 'x'), [view('a', 'x')])?.dataset).to.equal('a');
    expect(storageConflict(view('a', 'x'), [view('b', 'x')])).to.equal(undefined);
    expect(storageConflict(view('a', 'x'), [view('b', 'x', 'x')])?.dataset).to.equal('b');
    expect(storageConflict(view('b', 'x', 'x'), [view('a', 'x')])).to.equal(undefined);
    expect(storageConflict(view('b', 'y'), [view('a', 'x')])).to.equal(undefined);
  });
});
