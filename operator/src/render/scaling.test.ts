/**
 * Elastic workloads and monitoring as rendered for an Environment: HorizontalPodAutoscaler,
 * PodDisruptionBudget, topology spread, grace period, resources and PodMonitor, for both workloads.
 */
import { expect } from 'chai';
import { loadManifests } from '../../../model/manifests.js';
import type { EnvironmentResource, EnvironmentSpec } from '../../../model/types.js';
import { OLDEST_CAPABILITIES, capabilitiesFromGroups, type ClusterCapabilities } from './capabilities.js';
import { renderEnvironmentObjects } from './environment.js';
import { creationManifest, DEFAULT_RENDER_SETTINGS, type DesiredObject } from './types.js';

const examples = loadManifests('examples');
const DP = 'local-dataplane';
const FG = 'service-local-function-service-gateway';
const NEWEST: ClusterCapabilities = { autoscaling: 'autoscaling/v2', policy: 'policy/v1', podMonitors: true };

function render(spec: Partial<EnvironmentSpec> = {}, cluster: ClusterCapabilities = OLDEST_CAPABILITIES): DesiredObject[] {
  const base = examples.environments.find((e) => e.metadata.name === 'local')!;
  const env: EnvironmentResource = { ...base, metadata: { ...base.metadata, namespace: 'team-a', uid: 'env-uid-1' }, spec: { ...base.spec, ...spec } };
  return renderEnvironmentObjects(env, DEFAULT_RENDER_SETTINGS, [], cluster);
}

const find = (objects: DesiredObject[], kind: string, name: string): any => objects.find((o) => o.kind === kind && o.metadata.name === name);
const names = (objects: DesiredObject[], kind: string) => objects.filter((o) => o.kind === kind).map((o) => o.metadata.name);
const podSpec = (objects: DesiredObject[], name: string) => find(objects, 'Deployment', name).spec.template.spec;
const envOf = (objects: DesiredObject[], name: string) => Object.fromEntries(podSpec(objects, name).containers[0].env.map((e: { name: string; value: string }) => [e.name, e.value]));

describe('operator: elastic workloads and monitoring (rendering)', () => {
  it('served API versions: the newer where the cluster serves it, else the older (the 1.20 peer: v2beta2, v1beta1)', () => {
    expect(capabilitiesFromGroups(new Set(['autoscaling/v1', 'autoscaling/v2beta2', 'policy/v1beta1']), false)).to.deep.equal(OLDEST_CAPABILITIES);
    expect(capabilitiesFromGroups(new Set(['autoscaling/v2', 'autoscaling/v2beta2', 'policy/v1', 'policy/v1beta1']), true)).to.deep.equal(NEWEST);
  });

  it('no autoscaling: a fixed replica count (2 for the data plane, 1 for the function gateway) and no HPA', () => {
    const objects = render();
    expect(find(objects, 'Deployment', DP).spec.replicas).to.equal(2);
    expect(find(objects, 'Deployment', FG).spec.replicas).to.equal(1);
    expect(names(objects, 'HorizontalPodAutoscaler')).to.deep.equal([]);
    expect(find(render({ dataplane: { replicas: 5 } }), 'Deployment', DP).spec.replicas).to.equal(5);
  });

  it('autoscaling: an HPA named like the Deployment, in the version given, and the Deployment leaves replicas to it', () => {
    const spec = {
      dataplane: { replicas: 3, autoscaling: { minReplicas: 2, maxReplicas: 10, targetMemoryUtilizationPercentage: 80 } },
      functionGateway: { autoscaling: { maxReplicas: 4, targetCPUUtilizationPercentage: 50 } },
    };
    for (const cluster of [OLDEST_CAPABILITIES, NEWEST]) {
      const objects = render(spec, cluster);
      const hpa = find(objects, 'HorizontalPodAutoscaler', DP);
      expect(hpa.apiVersion).to.equal(cluster.autoscaling);
      expect(hpa.spec).to.deep.equal({
        scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: DP },
        minReplicas: 2,
        maxReplicas: 10,
        metrics: [
          { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } } },
          { type: 'Resource', resource: { name: 'memory', target: { type: 'Utilization', averageUtilization: 80 } } },
        ],
      });
      const gateway = find(objects, 'HorizontalPodAutoscaler', FG);
      expect(gateway.spec).to.include({ minReplicas: 1, maxReplicas: 4 });
      expect(gateway.spec.metrics).to.deep.equal([{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 50 } } }]);
      // Absent, not 0 or the spec's 3: the applier then leaves the autoscaler's count alone.
      expect(find(objects, 'Deployment', DP).spec).to.not.have.property('replicas');
      expect(find(objects, 'Deployment', FG).spec).to.not.have.property('replicas');
      // A new Deployment starts where the autoscaler would put it, not at Kubernetes' default of 1:
      // the spec's replicas within [min, max], else the minimum.
      expect((creationManifest(find(objects, 'Deployment', DP)) as any).spec.replicas).to.equal(3);
      expect((creationManifest(find(objects, 'Deployment', FG)) as any).spec.replicas).to.equal(1);
      expect(JSON.parse(JSON.stringify(find(objects, 'Deployment', DP))).spec, 'create-only fields are not part of what is compared or sent on update').to.not.have.property('replicas');
      expect(hpa.metadata.labels).to.deep.equal(find(objects, 'Deployment', DP).metadata.labels);
      expect(hpa.metadata.ownerReferences[0]).to.include({ kind: 'Environment', name: 'local', controller: true });
    }
  });

  it('the count a new autoscaled Deployment starts with: the spec\'s replicas kept within [min, max], else the minimum', () => {
    const initial = (dataplane: EnvironmentSpec['dataplane']) => (creationManifest(find(render({ dataplane }), 'Deployment', DP)) as any).spec.replicas;
    expect(initial({ autoscaling: { minReplicas: 3, maxReplicas: 5 } })).to.equal(3);
    expect(initial({ replicas: 1, autoscaling: { minReplicas: 2, maxReplicas: 5 } })).to.equal(2);
    expect(initial({ replicas: 9, autoscaling: { minReplicas: 2, maxReplicas: 5 } })).to.equal(5);
    expect(initial({ autoscaling: { maxReplicas: 5 } })).to.equal(1);
    expect(initial({ replicas: 4 }), 'without autoscaling: the replicas, always compared').to.equal(4);
  });

  it('a PodDisruptionBudget (maxUnavailable 1, the Deployment\'s selector) exactly when 2 or more replicas run or may run', () => {
    const pdbs = (spec: Partial<EnvironmentSpec>) => names(render(spec), 'PodDisruptionBudget');
    expect(pdbs({})).to.deep.equal([DP]); // data plane 2, function gateway 1
    expect(pdbs({ dataplane: { replicas: 1 }, functionGateway: { replicas: 3 } })).to.deep.equal([FG]);
    expect(pdbs({ dataplane: { replicas: 0 } })).to.deep.equal([]);
    expect(pdbs({ dataplane: { autoscaling: { maxReplicas: 5 } } })).to.deep.equal([]); // minReplicas 1
    expect(pdbs({ dataplane: { replicas: 1, autoscaling: { minReplicas: 2, maxReplicas: 5 } } })).to.deep.equal([DP]);
    for (const cluster of [OLDEST_CAPABILITIES, NEWEST]) {
      const objects = render({}, cluster);
      const pdb = find(objects, 'PodDisruptionBudget', DP);
      expect(pdb.apiVersion).to.equal(cluster.policy);
      expect(pdb.spec).to.deep.equal({ maxUnavailable: 1, selector: find(objects, 'Deployment', DP).spec.selector });
    }
  });

  it('pods spread across nodes and zones without ever staying Pending for it', () => {
    const objects = render();
    for (const name of [DP, FG]) {
      const selector = find(objects, 'Deployment', name).spec.selector.matchLabels;
      expect(podSpec(objects, name).topologySpreadConstraints).to.deep.equal([
        { maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: selector } },
        { maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: selector } },
      ]);
    }
  });

  it('the grace period covers the shutdown delay and timeout the container is given; readiness on /readyz', () => {
    const objects = render();
    for (const name of [DP, FG]) {
      const env = envOf(objects, name);
      const covered = Math.ceil((Number(env.DAS_SHUTDOWN_DELAY_MS) + Number(env.SHUTDOWN_TIMEOUT_MS)) / 1000);
      expect(env).to.include({ DAS_SHUTDOWN_DELAY_MS: '5000', SHUTDOWN_TIMEOUT_MS: '25000' });
      expect(podSpec(objects, name).terminationGracePeriodSeconds).to.be.greaterThan(covered).and.to.equal(35);
      expect(podSpec(objects, name).containers[0].readinessProbe.httpGet).to.deep.equal({ path: '/readyz', port: 'http' });
    }
  });

  it('resources: the documented defaults, or the spec\'s (replacing them whole) in the API server\'s canonical form', () => {
    const defaults = render();
    expect(podSpec(defaults, DP).containers[0].resources).to.deep.equal({ requests: { cpu: '250m', memory: '256Mi' }, limits: { memory: '768Mi' } });
    expect(podSpec(defaults, FG).containers[0].resources).to.deep.equal({ requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '256Mi' } });
    const custom = render({ dataplane: { resources: { requests: { cpu: '0.5', memory: '1024Mi' }, limits: { cpu: '1000m', memory: '1.5Gi' } } } });
    expect(podSpec(custom, DP).containers[0].resources).to.deep.equal({ requests: { cpu: '500m', memory: '1Gi' }, limits: { cpu: '1', memory: '1536Mi' } });
  });

  it('PodMonitors per workload only when the cluster has the CRD and the Environment does not opt out', () => {
    expect(names(render({}, OLDEST_CAPABILITIES), 'PodMonitor')).to.deep.equal([]);
    const objects = render({}, NEWEST);
    expect(names(objects, 'PodMonitor')).to.have.members([DP, FG]);
    const monitor = find(objects, 'PodMonitor', DP);
    expect(monitor.apiVersion).to.equal('monitoring.coreos.com/v1');
    expect(monitor.spec).to.deep.equal({ selector: find(objects, 'Deployment', DP).spec.selector, podMetricsEndpoints: [{ port: 'http', path: '/metrics' }] });
    // The port it names is the container's.
    expect(podSpec(objects, DP).containers[0].ports.map((p: { name: string }) => p.name)).to.include('http');
    expect(names(render({ monitoring: { podMonitor: false } }, NEWEST), 'PodMonitor')).to.deep.equal([]);
    expect(names(render({ functionGateway: { enabled: false } }, NEWEST), 'PodMonitor')).to.deep.equal([DP]);
  });
});
