/** The operator validates spec.queries with the model's functions and reports problems in status. */
import { expect } from 'chai';
import { loadManifests } from '../../../model/manifests.js';
import { FakeCluster, fakeContext } from '../../test/fake-cluster.js';
import type { KubeObject } from '../kube/object-client.js';
import { reconcileDataset } from './dataset-reconciler.js';

const NS = 'team-q';
const examples = loadManifests('examples');
const named = (object: { metadata: object }, name: string) => ({ ...structuredClone(object), metadata: { name, namespace: NS } }) as unknown as KubeObject;
const conditions = (object: KubeObject | undefined) =>
  Object.fromEntries(((object?.status as { conditions?: { type: string; status: string; reason: string; message: string }[] })?.conditions ?? []).map((c) => [c.type, c]));

async function reconcileWith(edit: (spec: any) => void) {
  const cluster = new FakeCluster();
  const { ctx, events } = fakeContext(cluster);
  cluster.seed(named(examples.environments[0], 'local'));
  const dataset = named(examples.datasets.find((d) => d.metadata.name === 'demo')!, 'demo');
  edit(dataset.spec);
  cluster.seed(dataset);
  cluster.sync();
  await reconcileDataset(ctx, NS, 'demo');
  return { cluster, events, c: conditions(cluster.get('Dataset', NS, 'demo')) };
}

describe('operator: Dataset query schemas (spec.queries)', () => {
  it('publishes the example queries in the ConfigMap', async () => {
    const { cluster, c } = await reconcileWith(() => {});
    expect(c.Ready).to.include({ status: 'True' });
    const config = JSON.parse((cluster.get('ConfigMap', NS, 'local-dataset-demo') as any).data['dataset.json']);
    expect(Object.keys(config.queries)).to.include('demo.PeopleInPostcode');
  });

  it('an undeclared ${argument} in a filter: Degraded with the JSON path and position, no ConfigMap', async () => {
    const { cluster, c, events } = await reconcileWith((spec) => {
      spec.queries['demo.PeopleInPostcode'].filter = 'address.postcode == ${postcode} and age > ${minAge}';
    });
    expect(cluster.get('ConfigMap', NS, 'local-dataset-demo')).to.equal(undefined);
    expect(c.Ready).to.include({ status: 'False', reason: 'InvalidSpec' });
    expect(c.Degraded.message).to.contain('$.spec.queries["demo.PeopleInPostcode"].filter: unknown argument ${minAge} at position 43');
    expect(events.events.map((e) => `${e.type}/${e.reason}`)).to.deep.equal(['Warning/InvalidSpec']);
  });

  it('an SQL query on a DynamoDB location is reported', async () => {
    const { c } = await reconcileWith((spec) => {
      spec.location = { kind: 'dynamodb', tablePrefix: 'demo', region: 'eu-west-1' };
    });
    expect(c.Ready).to.include({ status: 'False', reason: 'InvalidSpec' });
    expect(c.Degraded.message).to.contain('$.spec.queries["demo.HeadcountByEmployer"].sql: SQL queries run only on SQL locations');
  });
});
