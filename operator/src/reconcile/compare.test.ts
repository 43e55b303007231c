import { expect } from 'chai';
import type { KubeObject } from '../kube/object-client.js';
import { differingPaths, isSubset, isUpToDate, mergeForUpdate } from './compare.js';

const owner = { apiVersion: 'dataaccess.dev/v1alpha1', kind: 'Environment', name: 'local', uid: 'u1', controller: true, blockOwnerDeletion: true };

function service(spec: Record<string, unknown>, metadata: Partial<KubeObject['metadata']> = {}): KubeObject {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name: 'local-internal', namespace: 'ns', labels: { a: '1' }, ownerReferences: [owner], ...metadata }, spec };
}

describe('operator: desired vs live comparison', () => {
  it('ignores what the API server added (defaults, assigned values)', () => {
    const desired = service({ type: 'LoadBalancer', ports: [{ port: 80, targetPort: 'http', protocol: 'TCP' }] });
    const live = service(
      { type: 'LoadBalancer', clusterIP: '10.0.0.7', sessionAffinity: 'None', ports: [{ port: 80, targetPort: 'http', protocol: 'TCP', nodePort: 31000 }] },
      { resourceVersion: '42', uid: 'svc-uid', labels: { a: '1', extra: 'x' }, annotations: { 'other-controller/seen': 'yes' } },
    );
    expect(isUpToDate(desired, live)).to.equal(true);
    expect(differingPaths(desired, live)).to.deep.equal([]);
  });

  it('sees a changed value, a changed list length, a removed list entry', () => {
    const desired = service({ ports: [{ port: 80 }], selector: { app: 'x' } });
    expect(differingPaths(desired, service({ ports: [{ port: 81 }], selector: { app: 'x' } }))).to.deep.equal(['spec.ports[0].port']);
    expect(differingPaths(desired, service({ ports: [{ port: 80 }, { port: 81 }], selector: { app: 'x' } }))).to.deep.equal(['spec.ports']);
    expect(differingPaths(desired, service({ ports: [{ port: 80 }], selector: { app: 'y' } }))).to.deep.equal(['spec.selector.app']);
  });

  it('an explicit empty list demands an empty (or absent) list: clearing an except list is a change', () => {
    expect(isSubset({ except: [] }, {})).to.equal(true);
    expect(isSubset({ except: [] }, { except: [] })).to.equal(true);
    expect(isSubset({ except: [] }, { except: ['10.1.0.0/16'] })).to.equal(false);
  });

  it('an empty map demands nothing (other controllers\' annotations are left alone)', () => {
    expect(isSubset({}, { 'deployment.kubernetes.io/revision': '1' })).to.equal(true);
    expect(isSubset({ emptyDir: {} }, { emptyDir: {} })).to.equal(true);
    expect(isSubset({ emptyDir: {} }, {})).to.equal(true);
  });

  it('compares scalars by value and type', () => {
    expect(isSubset({ port: 8080 }, { port: '8080' })).to.equal(false);
    expect(isSubset({ enabled: false }, { enabled: false })).to.equal(true);
    expect(isSubset({ enabled: false }, {})).to.equal(false);
  });

  it('sees a missing owner reference, or another controller', () => {
    const desired = service({});
    expect(differingPaths(desired, service({}, { ownerReferences: [] }))).to.deep.equal(['metadata.ownerReferences']);
    const otherController = { ...owner, uid: 'u2', name: 'other' };
    expect(isUpToDate(desired, service({}, { ownerReferences: [owner, otherController] }))).to.equal(false);
    const nonControllerRef = { apiVersion: 'v1', kind: 'ConfigMap', name: 'x', uid: 'u3' };
    expect(isUpToDate(desired, service({}, { ownerReferences: [owner, nonControllerRef] }))).to.equal(true);
  });

  it('merges desired fields into the live object, keeping server-assigned values and the resourceVersion', () => {
    const desired = service({ type: 'LoadBalancer', ports: [{ port: 80, targetPort: 'http' }] }, { annotations: { mine: 'yes' } });
    const live = service(
      { type: 'LoadBalancer', clusterIP: '10.0.0.7', ports: [{ port: 8080, targetPort: 'http', nodePort: 31000 }] },
      { resourceVersion: '42', labels: { extra: 'x' }, annotations: { theirs: 'yes' } },
    );
    const merged = mergeForUpdate(live, desired);
    expect(merged.metadata.resourceVersion).to.equal('42');
    expect(merged.metadata.labels).to.deep.equal({ extra: 'x', a: '1' });
    expect(merged.metadata.annotations).to.deep.equal({ theirs: 'yes', mine: 'yes' });
    expect(merged.spec).to.deep.equal({ type: 'LoadBalancer', clusterIP: '10.0.0.7', ports: [{ port: 80, targetPort: 'http', nodePort: 31000 }] });
    expect(isUpToDate(desired, merged)).to.equal(true);
    expect((live.spec as { ports: { port: number }[] }).ports[0].port).to.equal(8080); // live untouched
  });

  it('replaces a list whose length changed', () => {
    const desired = service({ ports: [{ port: 80 }] });
    const merged = mergeForUpdate(service({ ports: [{ port: 80, nodePort: 1 }, { port: 81, nodePort: 2 }] }), desired);
    expect((merged.spec as { ports: unknown[] }).ports).to.deep.equal([{ port: 80 }]);
  });

  it('replaces our owner reference but keeps other owners\' non-controller references', () => {
    const nonControllerRef = { apiVersion: 'v1', kind: 'ConfigMap', name: 'x', uid: 'u3' };
    const merged = mergeForUpdate(service({}, { ownerReferences: [{ ...owner, blockOwnerDeletion: false }, nonControllerRef] }), service({}));
    expect(merged.metadata.ownerReferences).to.deep.equal([owner, nonControllerRef]);
  });
});
