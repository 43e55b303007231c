import { expect } from 'chai';
import { checkDatasetSpec } from '../../../model/validate.js';
import { findCondition, readyTransition, setConditions, type Condition } from './conditions.js';
import { datasetStatus, environmentStatus, type Outcome } from './status.js';
import { withForeignConditions } from './resource-writer.js';

const t0 = new Date('2025-01-01T00:00:00.000Z');
const t1 = new Date('2025-01-01T00:05:00.000Z');

describe('operator: status conditions', () => {
  it('have the metav1.Condition shape, in a fixed order', () => {
    const conditions = setConditions(
      undefined,
      [
        { type: 'Degraded', status: 'False', reason: 'AsExpected', message: 'ok' },
        { type: 'Ready', status: 'True', reason: 'Fine', message: 'ok' },
      ],
      7,
      t0,
    );
    expect(conditions.map((c) => c.type)).to.deep.equal(['Ready', 'Degraded']);
    expect(conditions[0]).to.deep.equal({ type: 'Ready', status: 'True', reason: 'Fine', message: 'ok', observedGeneration: 7, lastTransitionTime: '2025-01-01T00:00:00Z' });
  });

  it('keep lastTransitionTime while the status holds (so recomputing writes nothing), and move it on a flip', () => {
    const first = setConditions(undefined, [{ type: 'Ready', status: 'False', reason: 'A', message: 'a' }], 1, t0);
    const sameStatus = setConditions(first, [{ type: 'Ready', status: 'False', reason: 'B', message: 'b' }], 2, t1);
    expect(sameStatus[0].lastTransitionTime).to.equal('2025-01-01T00:00:00Z');
    expect(sameStatus[0]).to.include({ reason: 'B', observedGeneration: 2 });
    const flipped = setConditions(sameStatus, [{ type: 'Ready', status: 'True', reason: 'C', message: 'c' }], 2, t1);
    expect(flipped[0].lastTransitionTime).to.equal('2025-01-01T00:05:00Z');
  });

  it('an Event goes with a change of Ready status or reason, not with a repeat', () => {
    const notReady = setConditions(undefined, [{ type: 'Ready', status: 'False', reason: 'InvalidSpec', message: 'x' }], 1, t0);
    expect(readyTransition(undefined, notReady)).to.deep.equal({ type: 'Warning', reason: 'InvalidSpec', message: 'x' });
    expect(readyTransition(notReady, notReady)).to.equal(undefined);
    const ready = setConditions(notReady, [{ type: 'Ready', status: 'True', reason: 'ConfigPublished', message: 'y' }], 2, t1);
    expect(readyTransition(notReady, ready)).to.deep.equal({ type: 'Normal', reason: 'ConfigPublished', message: 'y' });
  });
});

describe('operator: Dataset status', () => {
  const dataset = { metadata: { name: 'demo', namespace: 'ns', generation: 3 }, spec: { environment: 'local' } };
  const byType = (conditions: Condition[]) => Object.fromEntries(conditions.map((c) => [c.type, c]));

  it('published: Ready, Reconciled, not Degraded, naming the ConfigMap', () => {
    const status = datasetStatus(dataset, { kind: 'applied' }, { configMap: 'local-dataset-demo' }, t0);
    const c = byType(status.conditions);
    expect(status.observedGeneration).to.equal(3);
    expect(status.configMap).to.equal('local-dataset-demo');
    expect([c.Ready.status, c.Reconciled.status, c.Degraded.status]).to.deep.equal(['True', 'True', 'False']);
    expect(c.Ready.message).to.contain('local-dataset-demo');
  });

  it('an invalid spec: not Ready, Degraded, and the message names the JSON path', () => {
    const spec = {
      environment: 'local',
      location: { kind: 'postgres' },
      schemas: { 'demo.Person': { properties: { employer: { type: 'link', schema: 'demo.Nowhere' } } } },
    };
    const problems = checkDatasetSpec(spec);
    expect(problems).to.have.length(1);
    const status = datasetStatus(dataset, { kind: 'invalid', problems }, { configMap: undefined }, t0);
    const c = byType(status.conditions);
    expect([c.Ready.status, c.Reconciled.status, c.Degraded.status]).to.deep.equal(['False', 'False', 'True']);
    expect(c.Ready.reason).to.equal('InvalidSpec');
    expect(c.Degraded.message).to.contain('$.spec.schemas["demo.Person"].properties.employer.schema');
    expect(c.Degraded.message).to.contain('demo.Nowhere');
  });

  it('a missing Environment: says which and what to do; a previously published config keeps serving', () => {
    const outcome: Outcome = { kind: 'environment-missing', environment: 'local', namespace: 'ns' };
    const status = datasetStatus(dataset, outcome, { configMap: 'local-dataset-demo' }, t0);
    const c = byType(status.conditions);
    expect(c.Ready.reason).to.equal('EnvironmentNotFound');
    expect(c.Ready.message).to.match(/Environment "local" does not exist in namespace "ns"/);
    expect(c.Ready.message).to.contain('keeps serving');
  });

  it('spec.paused: a Paused condition (True while paused, False otherwise), Ready unchanged', () => {
    const paused = byType(datasetStatus({ ...dataset, spec: { ...dataset.spec, paused: true } }, { kind: 'applied' }, { configMap: 'local-dataset-demo' }, t0).conditions);
    expect([paused.Paused.status, paused.Paused.reason, paused.Ready.status]).to.deep.equal(['True', 'PausedBySpec', 'True']);
    expect(paused.Paused.message).to.contain('DATASET_PAUSED');
    const serving = byType(datasetStatus(dataset, { kind: 'applied' }, { configMap: 'local-dataset-demo' }, t0).conditions);
    expect([serving.Paused.status, serving.Paused.reason]).to.deep.equal(['False', 'NotPaused']);
  });

  it('is identical when recomputed from its own result (no write on a resync)', () => {
    const first = datasetStatus(dataset, { kind: 'applied' }, { configMap: 'local-dataset-demo' }, t0);
    const again = datasetStatus({ ...dataset, status: first }, { kind: 'applied' }, { configMap: 'local-dataset-demo' }, t1);
    expect(again).to.deep.equal(first);
  });
});

describe('operator: Environment status', () => {
  const env = { metadata: { name: 'local', namespace: 'ns', generation: 2 }, spec: { type: 'internal' } };

  it('Ready follows data plane availability once everything is applied', () => {
    const unavailable = environmentStatus(env, { kind: 'applied' }, { datasets: 2, dataplane: { spec: { replicas: 2 }, status: {} } }, t0);
    const ready = findCondition(unavailable.conditions, 'Ready')!;
    expect(ready).to.include({ status: 'False', reason: 'DataPlaneUnavailable' });
    expect(ready.message).to.contain('kubectl -n ns describe pods -l dataaccess.dev/environment=local,app.kubernetes.io/component=dataplane');
    expect(findCondition(unavailable.conditions, 'Reconciled')!.status).to.equal('True');
    expect(unavailable.datasets).to.equal(2);

    const available = environmentStatus(env, { kind: 'applied' }, { datasets: 2, dataplane: { spec: { replicas: 2 }, status: { availableReplicas: 1 } } }, t0);
    expect(findCondition(available.conditions, 'Ready')).to.include({ status: 'True', reason: 'DataPlaneAvailable' });
  });

  it('lists the in-cluster endpoints', () => {
    const status = environmentStatus(env, { kind: 'applied' }, { datasets: 0, dataplane: undefined }, t0);
    expect(status.endpoints).to.deep.equal({
      api: 'local-api.ns.svc:80',
      internal: 'local-internal.ns.svc:80',
      functionGateway: 'service-local-function-service-gateway',
    });
    const publicEnv = environmentStatus({ ...env, spec: { type: 'public', functionGateway: { enabled: false } } }, { kind: 'applied' }, { datasets: 0, dataplane: undefined }, t0);
    expect(publicEnv.endpoints).to.deep.equal({ api: 'local-api.ns.svc:80' });
  });

  it('an ownership conflict is Degraded with the message saying what to delete or rename', () => {
    const status = environmentStatus(env, { kind: 'conflict', message: 'Service ns/local-api already exists and is not managed by data-access-operator; delete or rename it.' }, { datasets: 0, dataplane: undefined }, t0);
    expect(findCondition(status.conditions, 'Degraded')).to.include({ status: 'True', reason: 'OwnershipConflict' });
  });

  it('waiting for garbage collection is not Degraded', () => {
    const status = environmentStatus(env, { kind: 'waiting', message: 'waiting' }, { datasets: 0, dataplane: undefined }, t0);
    expect(findCondition(status.conditions, 'Degraded')!.status).to.equal('False');
    expect(findCondition(status.conditions, 'Reconciled')).to.include({ status: 'False', reason: 'WaitingForGarbageCollection' });
  });
});

describe('operator: the data plane\'s StorageRetained condition', () => {
  const retained = { type: 'StorageRetained' as const, status: 'True' as const, observedGeneration: 2, lastTransitionTime: '2025-01-01T00:00:00Z', reason: 'StorageRetained', message: 'its storage holds the data of dataset "team-a"' };

  it('a status write carries the stored StorageRetained, never the stale copy computed from an older read', () => {
    const computed = { observedGeneration: 2, conditions: [{ ...retained, status: 'False' as const, reason: 'OwnStorage' }] };
    const merged = withForeignConditions(computed, { conditions: [retained] }) as { conditions: Condition[] };
    expect(merged.conditions).to.deep.equal([retained]);
    // Ours stay ours, whatever the stored status says of them.
    const ready = { type: 'Ready' as const, status: 'True' as const, observedGeneration: 2, lastTransitionTime: '2025-01-01T00:00:00Z', reason: 'ConfigPublished', message: 'ok' };
    expect((withForeignConditions({ conditions: [ready] }, { conditions: [{ ...ready, status: 'False' }] }) as { conditions: Condition[] }).conditions).to.deep.equal([ready]);
  });

  it('is the Degraded reason StorageRetained outcome, naming the old dataset', () => {
    const dataset = { metadata: { name: 'mallory', generation: 2 }, spec: { environment: 'local' }, status: { conditions: [retained] } };
    const status = datasetStatus(dataset, { kind: 'storage-retained', message: retained.message }, { configMap: 'local-dataset-mallory' }, t1);
    expect(findCondition(status.conditions, 'Degraded')).to.include({ status: 'True', reason: 'StorageRetained' });
    expect(findCondition(status.conditions, 'Degraded')!.message).to.contain('dataset "team-a"');
    expect(findCondition(status.conditions, 'Ready')).to.include({ status: 'False', reason: 'StorageRetained' });
    // Kept as the data plane wrote it.
    expect(findCondition(status.conditions, 'StorageRetained')).to.deep.equal(retained);
  });
});
