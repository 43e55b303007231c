import { expect } from 'chai';
import { loadManifests } from '../../../model/manifests.js';
import { FakeCluster, fakeContext } from '../../test/fake-cluster.js';
import { EXAMPLE_ENVIRONMENT_OBJECTS } from '../../test/example-objects.js';
import type { KubeObject } from '../kube/object-client.js';
import { FINALIZER } from '../names.js';
import { OwnershipConflictError } from './applier.js';
import { reconcileDataset } from './dataset-reconciler.js';
import { reconcileEnvironment } from './environment-reconciler.js';

const NS = 'team-a';
const examples = loadManifests('examples');
const exampleEnvironment = () => ({ ...structuredClone(examples.environments[0]), metadata: { name: 'local', namespace: NS } }) as unknown as KubeObject;
const exampleDataset = (name = 'demo') => {
  const found = examples.datasets.find((d) => d.metadata.name === name)!;
  return { ...structuredClone(found), metadata: { name, namespace: NS } } as unknown as KubeObject;
};
const conditions = (object: KubeObject | undefined) =>
  Object.fromEntries(((object?.status as { conditions?: { type: string; status: string; reason: string; message: string }[] })?.conditions ?? []).map((c) => [c.type, c]));

function setup() {
  const cluster = new FakeCluster();
  const { ctx, events } = fakeContext(cluster);
  return { cluster, ctx, events };
}

describe('operator: Environment reconciler (fake API server)', () => {
  it('creates every owned object, reports status, and records an Event per change', async () => {
    const { cluster, ctx, events } = setup();
    cluster.seed(exampleEnvironment());
    cluster.sync();
    await reconcileEnvironment(ctx, NS, 'local');
    const created = cluster.writes.filter((w) => w.verb === 'create').map((w) => `${w.kind}/${w.name}`);
    expect(created).to.have.members(EXAMPLE_ENVIRONMENT_OBJECTS);
    expect(events.events.filter((e) => e.reason === 'Created')).to.have.length(EXAMPLE_ENVIRONMENT_OBJECTS.length);
    const env = cluster.get('Environment', NS, 'local');
    expect(conditions(env).Reconciled.status).to.equal('True');
    expect(conditions(env).Ready.reason).to.equal('DataPlaneUnavailable'); // no pods in a fake cluster
  });

  it('makes no write at all when nothing changed', async () => {
    const { cluster, ctx, events } = setup();
    cluster.seed(exampleEnvironment());
    cluster.sync();
    await reconcileEnvironment(ctx, NS, 'local');
    cluster.sync();
    const mark = cluster.writes.length;
    const eventCount = events.events.length;
    await reconcileEnvironment(ctx, NS, 'local');
    await reconcileEnvironment(ctx, NS, 'local');
    expect(cluster.writesSince(mark)).to.deep.equal([]);
    expect(events.events.length).to.equal(eventCount);
  });

  it('mounts the connection Secrets of its Datasets into the data plane; then nothing changed, no write', async () => {
    const { cluster, ctx } = setup();
    cluster.seed(exampleEnvironment());
    const withSecret = exampleDataset();
    (withSecret.spec as any).location.connectionSecretRef = { name: 'demo-db', key: 'url' };
    cluster.seed(withSecret);
    const elsewhere = { ...exampleDataset('sealed'), spec: { ...(exampleDataset('sealed').spec as object), environment: 'other' } };
    (elsewhere.spec as any).location = { kind: 'postgres', connectionSecretRef: { name: 'other-db', key: 'url' } };
    cluster.seed(elsewhere); // another Environment's Dataset: not mounted here
    cluster.sync();
    await reconcileEnvironment(ctx, NS, 'local');
    const secretVolumes = () => ((cluster.get('Deployment', NS, 'local-dataplane') as any).spec.template.spec.volumes as any[]).filter((v) => v.secret);
    expect(secretVolumes().map((v) => v.secret)).to.deep.equal([{ secretName: 'demo-db', items: [{ key: 'url', path: 'url' }], defaultMode: 0o440, optional: false }]);
    cluster.sync();
    const mark = cluster.writes.length;
    await reconcileEnvironment(ctx, NS, 'local');
    expect(cluster.writesSince(mark)).to.deep.equal([]);

    // The Dataset is being deleted: its Secret goes from the Deployment (and only the Deployment changes).
    await cluster.delete({ apiVersion: 'dataaccess.dev/v1alpha1', kind: 'Dataset', namespace: NS, name: 'demo' });
    cluster.sync();
    const before = cluster.writes.length;
    await reconcileEnvironment(ctx, NS, 'local');
    expect(cluster.writesSince(before).filter((w) => w.verb !== 'update-status')).to.deep.equal([{ verb: 'update', kind: 'Deployment', name: 'local-dataplane' }]);
    expect(secretVolumes()).to.deep.equal([]);
  });

  it('an invalid edit of a Dataset keeps the Secret its published config uses; a valid one mounts the new Secret', async () => {
    const { cluster, ctx } = setup();
    cluster.seed(exampleEnvironment());
    const dataset = exampleDataset();
    (dataset.spec as any).location.connectionSecretRef = { name: 'old-db', key: 'url' };
    cluster.seed(dataset);
    cluster.sync();
    await reconcileDataset(ctx, NS, 'demo'); // publishes the ConfigMap naming old-db
    cluster.sync();
    const mounted = async () => {
      await reconcileEnvironment(ctx, NS, 'local');
      cluster.sync();
      const volumes = (cluster.get('Deployment', NS, 'local-dataplane') as any).spec.template.spec.volumes as any[];
      return volumes.filter((v) => v.secret).flatMap((v) => v.secret.items.map((i: { key: string }) => `${v.secret.secretName}/${i.key}`));
    };
    expect(await mounted()).to.deep.equal(['old-db/url']);

    const edit = async (change: (spec: any) => void) => {
      const current = structuredClone(cluster.get('Dataset', NS, 'demo')!);
      change(current.spec);
      await cluster.replace(current);
      cluster.sync();
      await reconcileDataset(ctx, NS, 'demo');
      cluster.sync();
    };
    // Invalid (a link to a missing schema): not published, so the data plane still needs old-db.
    await edit((spec) => {
      spec.location.connectionSecretRef = { name: 'new-db', key: 'url' };
      spec.schemas['demo.Person'].properties.employer.schema = 'demo.Nowhere';
    });
    expect(await mounted()).to.deep.equal(['old-db/url']);

    // Fixed: published with new-db, and old-db is no longer needed.
    await edit((spec) => {
      spec.schemas['demo.Person'].properties.employer.schema = 'demo.Company';
    });
    expect(await mounted()).to.deep.equal(['new-db/url']);
  });

  it('makes no write either when its cache has not yet seen its own writes', async () => {
    const { cluster, ctx } = setup();
    cluster.seed(exampleEnvironment());
    cluster.sync();
    await reconcileEnvironment(ctx, NS, 'local');
    const mark = cluster.writes.length; // no sync: the caches still show the world before the writes
    await reconcileEnvironment(ctx, NS, 'local');
    expect(cluster.writesSince(mark)).to.deep.equal([]);
  });

  it('a firewall edit updates only the NetworkPolicies (data plane, function gateway) and the environment ConfigMap', async () => {
    const { cluster, ctx } = setup();
    const env = cluster.seed(exampleEnvironment());
    cluster.sync();
    await reconcileEnvironment(ctx, NS, 'local');
    const spec = structuredClone(env.spec) as any;
    spec.gateways.api.firewall.ipAddresses = { allowed: ['10.0.0.0/8'], blocked: ['10.66.0.0/16'] };
    await cluster.replace({ ...cluster.get('Environment', NS, 'local')!, spec });
    cluster.sync();
    const mark = cluster.writes.length;
    await reconcileEnvironment(ctx, NS, 'local');
    expect(cluster.writesSince(mark).filter((w) => w.verb !== 'update-status')).to.deep.equal([
      { verb: 'update', kind: 'ConfigMap', name: 'local-dataplane' },
      { verb: 'update', kind: 'NetworkPolicy', name: 'local-firewall' },
      { verb: 'update', kind: 'NetworkPolicy', name: 'service-local-function-service-gateway' },
    ]);
    for (const name of ['local-firewall', 'service-local-function-service-gateway']) {
      const policy = cluster.get('NetworkPolicy', NS, name) as any;
      expect(policy.spec.ingress[0].from).to.deep.equal([{ ipBlock: { cidr: '10.0.0.0/8', except: ['10.66.0.0/16'] } }]);
    }
  });

  it('opting out of the function gateway deletes it; a public environment loses its internal load balancer', async () => {
    const { cluster, ctx, events } = setup();
    const env = cluster.seed(exampleEnvironment());
    cluster.sync();
    await reconcileEnvironment(ctx, NS, 'local');
    cluster.sync();
    await cluster.replace({ ...cluster.get('Environment', NS, 'local')!, spec: { ...(env.spec as object), type: 'public', functionGateway: { enabled: false } } });
    cluster.sync();
    await reconcileEnvironment(ctx, NS, 'local');
    expect(cluster.get('Deployment', NS, 'service-local-function-service-gateway')).to.equal(undefined);
    expect(cluster.get('Service', NS, 'service-local-function-service-gateway')).to.equal(undefined);
    expect(cluster.get('Service', NS, 'local-internal')).to.equal(undefined);
    expect(events.events.filter((e) => e.reason === 'Deleted').map((e) => e.message)).to.have.members([
      'Deleted Deployment service-local-function-service-gateway',
      'Deleted Service service-local-function-service-gateway',
      'Deleted NetworkPolicy service-local-function-service-gateway',
      'Deleted Service local-internal',
    ]);
  });

  it('repairs drift: an edited Deployment gets the operator\'s values back', async () => {
    const { cluster, ctx } = setup();
    cluster.seed(exampleEnvironment());
    cluster.sync();
    await reconcileEnvironment(ctx, NS, 'local');
    const deployment = cluster.get('Deployment', NS, 'local-dataplane') as any;
    await cluster.replace({ ...deployment, spec: { ...deployment.spec, replicas: 9 } });
    cluster.sync();
    await reconcileEnvironment(ctx, NS, 'local');
    expect((cluster.get('Deployment', NS, 'local-dataplane') as any).spec.replicas).to.equal(2);
  });

  it('with autoscaling, the replica count someone else set stays through a resync and through an update of another field', async () => {
    const { cluster, ctx } = setup();
    const env = exampleEnvironment();
    (env.spec as any).dataplane = { autoscaling: { minReplicas: 2, maxReplicas: 8 } };
    cluster.seed(env);
    cluster.sync();
    await reconcileEnvironment(ctx, NS, 'local');
    const scaled = cluster.get('Deployment', NS, 'local-dataplane') as any;
    await cluster.replace({ ...scaled, spec: { ...scaled.spec, replicas: 6 } }); // what the HPA does
    cluster.sync();
    const mark = cluster.writes.length;
    await reconcileEnvironment(ctx, NS, 'local');
    // Only the Environment's status, which reports the new count.
    expect(cluster.writesSince(mark)).to.deep.equal([{ verb: 'update-status', kind: 'Environment', name: 'local' }]);
    expect((cluster.get('Environment', NS, 'local') as any).status.replicas).to.equal(6);
    // A change the operator does make (the log level) is written on top of the live object.
    const current = cluster.get('Environment', NS, 'local') as any;
    await cluster.replace({ ...current, spec: { ...current.spec, dataplane: { ...current.spec.dataplane, logLevel: 'debug' } } });
    cluster.sync();
    await reconcileEnvironment(ctx, NS, 'local');
    const updated = cluster.get('Deployment', NS, 'local-dataplane') as any;
    expect(updated.spec.template.spec.containers[0].env).to.deep.include({ name: 'LOG_LEVEL', value: 'debug' });
    expect(updated.spec.replicas).to.equal(6);
  });

  it('never takes over an object of the same name that is not its own; reports how to resolve it', async () => {
    const { cluster, ctx } = setup();
    cluster.seed(exampleEnvironment());
    cluster.seed({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'local-api', namespace: NS }, spec: { type: 'ClusterIP' } });
    cluster.sync();
    let error: unknown;
    await reconcileEnvironment(ctx, NS, 'local').catch((err: unknown) => (error = err));
    expect(error).to.be.instanceOf(OwnershipConflictError);
    expect((cluster.get('Service', NS, 'local-api') as any).spec.type).to.equal('ClusterIP');
    const c = conditions(cluster.get('Environment', NS, 'local'));
    expect(c.Degraded).to.include({ status: 'True', reason: 'OwnershipConflict' });
    expect(c.Degraded.message).to.contain('Service team-a/local-api already exists and is not managed by data-access-operator');
  });

  it('an invalid spec (duplicate executor names) is reported and nothing is applied', async () => {
    const { cluster, ctx } = setup();
    const env = exampleEnvironment();
    (env.spec as any).executors = [{ name: 'a' }, { name: 'a' }];
    cluster.seed(env);
    cluster.sync();
    await reconcileEnvironment(ctx, NS, 'local');
    expect(cluster.writes.filter((w) => w.verb !== 'update-status')).to.deep.equal([]);
    expect(conditions(cluster.get('Environment', NS, 'local')).Degraded.message).to.contain('$.spec.executors[1].name');
  });
});

describe('operator: Dataset reconciler (fake API server)', () => {
  function withEnvironment() {
    const s = setup();
    s.cluster.seed(exampleEnvironment());
    s.cluster.sync();
    return s;
  }

  it('adds its finalizer, publishes the ConfigMap owned by the Dataset, and becomes Ready', async () => {
    const { cluster, ctx } = withEnvironment();
    cluster.seed(exampleDataset());
    cluster.sync();
    await reconcileDataset(ctx, NS, 'demo');
    const dataset = cluster.get('Dataset', NS, 'demo')!;
    expect(dataset.metadata.finalizers).to.deep.equal([FINALIZER]);
    const configMap = cluster.get('ConfigMap', NS, 'local-dataset-demo') as any;
    expect(configMap.metadata.ownerReferences[0]).to.include({ kind: 'Dataset', name: 'demo', uid: dataset.metadata.uid, controller: true });
    expect(JSON.parse(configMap.data['dataset.json']).auth.iam.rawSqlEndpointEnabled).to.equal(true);
    expect(conditions(dataset).Ready).to.include({ status: 'True', reason: 'ConfigPublished' });
    expect((dataset.status as any).configMap).to.equal('local-dataset-demo');
  });

  it('makes no write when nothing changed', async () => {
    const { cluster, ctx } = withEnvironment();
    cluster.seed(exampleDataset());
    cluster.sync();
    await reconcileDataset(ctx, NS, 'demo');
    cluster.sync();
    const mark = cluster.writes.length;
    await reconcileDataset(ctx, NS, 'demo');
    expect(cluster.writesSince(mark)).to.deep.equal([]);
  });

  it('a link to a schema that does not exist: Degraded with the JSON path, and no ConfigMap', async () => {
    const { cluster, ctx, events } = withEnvironment();
    const dataset = exampleDataset();
    (dataset.spec as any).schemas['demo.Person'].properties.employer.schema = 'demo.Employer';
    cluster.seed(dataset);
    cluster.sync();
    await reconcileDataset(ctx, NS, 'demo');
    expect(cluster.get('ConfigMap', NS, 'local-dataset-demo')).to.equal(undefined);
    const c = conditions(cluster.get('Dataset', NS, 'demo'));
    expect(c.Ready).to.include({ status: 'False', reason: 'InvalidSpec' });
    expect(c.Degraded.message).to.contain('$.spec.schemas["demo.Person"].properties.employer.schema: link target "demo.Employer" is not a schema of this dataset');
    expect(events.events.map((e) => `${e.type}/${e.reason}`)).to.deep.equal(['Warning/InvalidSpec']);
  });

  it('an invalid edit leaves the published ConfigMap as it was', async () => {
    const { cluster, ctx } = withEnvironment();
    cluster.seed(exampleDataset());
    cluster.sync();
    await reconcileDataset(ctx, NS, 'demo');
    cluster.sync();
    const published = structuredClone(cluster.get('ConfigMap', NS, 'local-dataset-demo'));
    const current = cluster.get('Dataset', NS, 'demo')!;
    const spec = structuredClone(current.spec) as any;
    spec.schemas['demo.Person'].required = ['nickname'];
    await cluster.replace({ ...current, spec });
    cluster.sync();
    await reconcileDataset(ctx, NS, 'demo');
    expect(cluster.get('ConfigMap', NS, 'local-dataset-demo')).to.deep.equal(published);
    expect(conditions(cluster.get('Dataset', NS, 'demo')).Ready.message).to.contain('keeps serving the config last published in ConfigMap local-dataset-demo');
  });

  it('waits for a missing Environment without writing a ConfigMap, then publishes when it appears', async () => {
    const { cluster, ctx } = setup();
    cluster.seed(exampleDataset());
    cluster.sync();
    await reconcileDataset(ctx, NS, 'demo');
    expect(cluster.get('ConfigMap', NS, 'local-dataset-demo')).to.equal(undefined);
    expect(conditions(cluster.get('Dataset', NS, 'demo')).Ready.reason).to.equal('EnvironmentNotFound');
    cluster.seed(exampleEnvironment());
    cluster.sync();
    await reconcileDataset(ctx, NS, 'demo');
    expect(cluster.get('ConfigMap', NS, 'local-dataset-demo')).to.not.equal(undefined);
    expect(conditions(cluster.get('Dataset', NS, 'demo')).Ready.status).to.equal('True');
  });

  it('moving to another Environment replaces the ConfigMap under the new name', async () => {
    const { cluster, ctx } = withEnvironment();
    cluster.seed({ ...exampleEnvironment(), metadata: { name: 'other', namespace: NS } });
    cluster.seed(exampleDataset());
    cluster.sync();
    await reconcileDataset(ctx, NS, 'demo');
    cluster.sync();
    const current = cluster.get('Dataset', NS, 'demo')!;
    await cluster.replace({ ...current, spec: { ...(current.spec as object), environment: 'other' } });
    cluster.sync();
    await reconcileDataset(ctx, NS, 'demo');
    expect(cluster.get('ConfigMap', NS, 'local-dataset-demo')).to.equal(undefined);
    expect(cluster.get('ConfigMap', NS, 'other-dataset-demo')).to.not.equal(undefined);
  });

  it('deletion with the default policy (Retain): the finalizer removes the ConfigMap, then lets the Dataset go', async () => {
    const { cluster, ctx, events } = withEnvironment();
    cluster.seed(exampleDataset());
    cluster.sync();
    await reconcileDataset(ctx, NS, 'demo');
    cluster.sync();
    await cluster.delete({ apiVersion: 'dataaccess.dev/v1alpha1', kind: 'Dataset', namespace: NS, name: 'demo' });
    expect(cluster.get('Dataset', NS, 'demo')?.metadata.deletionTimestamp).to.be.ok; // held by the finalizer
    cluster.sync();
    await reconcileDataset(ctx, NS, 'demo');
    expect(cluster.get('ConfigMap', NS, 'local-dataset-demo')).to.equal(undefined);
    expect(cluster.get('Dataset', NS, 'demo')).to.equal(undefined);
    expect(events.events.map((e) => e.message)).to.include('Deleted ConfigMap local-dataset-demo; stored data is kept (deletionPolicy Retain)');
  });

  it('deletion with policy Delete marks the ConfigMap for purging before deleting it', async () => {
    const { cluster, ctx } = withEnvironment();
    const dataset = exampleDataset();
    (dataset.spec as any).deletionPolicy = 'Delete';
    cluster.seed(dataset);
    cluster.sync();
    await reconcileDataset(ctx, NS, 'demo');
    cluster.sync();
    await cluster.delete({ apiVersion: 'dataaccess.dev/v1alpha1', kind: 'Dataset', namespace: NS, name: 'demo' });
    cluster.sync();
    const mark = cluster.writes.length;
    await reconcileDataset(ctx, NS, 'demo');
    expect(cluster.writesSince(mark).map((w) => `${w.verb} ${w.kind}`)).to.deep.equal(['update ConfigMap', 'delete ConfigMap', 'update Dataset']);
    expect(cluster.get('Dataset', NS, 'demo')).to.equal(undefined);
  });

  it('retries a 409 conflict on the finalizer write with a fresh read', async () => {
    const { cluster, ctx } = withEnvironment();
    cluster.seed(exampleDataset());
    cluster.sync(); // the cache holds this version…
    const current = cluster.get('Dataset', NS, 'demo')!;
    await cluster.replace({ ...current, metadata: { ...current.metadata, labels: { team: 'a' } } }); // …someone else writes
    await reconcileDataset(ctx, NS, 'demo');
    const stored = cluster.get('Dataset', NS, 'demo')!;
    expect(stored.metadata.finalizers).to.deep.equal([FINALIZER]);
    expect(stored.metadata.labels).to.deep.equal({ team: 'a' });
  });
});
