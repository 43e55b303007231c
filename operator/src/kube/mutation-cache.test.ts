import { expect } from 'chai';
import { FakeCluster } from '../../test/fake-cluster.js';
import { MutationCache } from './mutation-cache.js';
import type { KubeObject } from './object-client.js';

const configMap = (data: string): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'ns' }, data: { k: data } });

describe('operator: mutation cache (own writes before the watch catches up)', () => {
  it('returns the written object while the informer still shows the version it replaced', async () => {
    const cluster = new FakeCluster();
    const cache = new MutationCache(cluster.informer('ConfigMap'));
    const before = cluster.seed(configMap('v1'));
    cluster.sync();
    const after = await cluster.replace({ ...before, data: { k: 'v2' } });
    cache.recordWrite(before, after);
    expect(cache.get('ns', 'cm')?.data).to.deep.equal({ k: 'v2' });
    cluster.sync();
    expect(cache.get('ns', 'cm')?.metadata.resourceVersion).to.equal(after.metadata.resourceVersion);
  });

  it('a newer version from someone else wins over the remembered write', async () => {
    const cluster = new FakeCluster();
    const cache = new MutationCache(cluster.informer('ConfigMap'));
    const before = cluster.seed(configMap('v1'));
    cluster.sync();
    const mine = await cluster.replace({ ...before, data: { k: 'mine' } });
    cache.recordWrite(before, mine);
    await cluster.replace({ ...mine, data: { k: 'theirs' } });
    cluster.sync();
    expect(cache.get('ns', 'cm')?.data).to.deep.equal({ k: 'theirs' });
  });

  it('a created object is visible at once; a deleted one is gone at once', async () => {
    const cluster = new FakeCluster();
    const cache = new MutationCache(cluster.informer('ConfigMap'));
    const created = await cluster.create(configMap('v1'));
    cache.recordWrite(undefined, created);
    expect(cache.get('ns', 'cm')?.data).to.deep.equal({ k: 'v1' });
    expect(cache.list('ns')).to.have.length(1);
    cluster.sync();
    await cluster.delete({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name: 'cm' });
    cache.recordDelete(created);
    expect(cache.get('ns', 'cm')).to.equal(undefined);
    expect(cache.list('ns')).to.deep.equal([]);
  });
});
