/**
 * The parts of a workload (the data plane, the function gateway) that make it elastic and safe to
 * roll: replicas (left to the HorizontalPodAutoscaler while autoscaling is set), resources, spread
 * across nodes and zones, and a termination grace period that covers the shutdown the container is
 * told to do.
 */
import type { V1DeploymentSpec, V1EnvVar, V1PodSpec, V1ResourceRequirements, V1TopologySpreadConstraint } from '@kubernetes/client-node';
import { canonicalResources } from '../../../model/workloads.js';
import type { ResourceRequirements, WorkloadSpec } from '../../../model/types.js';

/** One scalable workload of an Environment, as the HPA, PDB and PodMonitor renderers need it. */
export interface Workload {
  /** The Deployment's name, which its HPA, PDB and PodMonitor share. */
  name: string;
  labels: Record<string, string>;
  /** The Deployment's pod selector. */
  selector: Record<string, string>;
  spec: WorkloadSpec | undefined;
  defaultReplicas: number;
}

/** How long a replica keeps serving after SIGTERM while Kubernetes removes it from the endpoints. */
export const SHUTDOWN_DELAY_MS = 5_000;
/** How long in-flight work may take after that. */
export const SHUTDOWN_TIMEOUT_MS = 25_000;
/** Beyond both, before the kubelet's SIGKILL: closing pools and the process's own exit. */
export const GRACE_MARGIN_SECONDS = 5;

export function terminationGracePeriodSeconds(delayMs = SHUTDOWN_DELAY_MS, timeoutMs = SHUTDOWN_TIMEOUT_MS): number {
  return Math.ceil((delayMs + timeoutMs) / 1000) + GRACE_MARGIN_SECONDS;
}

/** The container's own settings, so that the process and the grace period agree. */
export function shutdownEnv(): V1EnvVar[] {
  return [
    { name: 'DAS_SHUTDOWN_DELAY_MS', value: String(SHUTDOWN_DELAY_MS) },
    { name: 'SHUTDOWN_TIMEOUT_MS', value: String(SHUTDOWN_TIMEOUT_MS) },
  ];
}

export const SPREAD_TOPOLOGY_KEYS = ['kubernetes.io/hostname', 'topology.kubernetes.io/zone'] as const;

/** One replica per node and per zone where the scheduler can; never a Pod left Pending for it. */
export function topologySpread(selector: Record<string, string>): V1TopologySpreadConstraint[] {
  return SPREAD_TOPOLOGY_KEYS.map((topologyKey) => ({ maxSkew: 1, topologyKey, whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: selector } }));
}

/**
 * `replicas` of the Deployment: absent while an autoscaler owns the count (the applier then leaves
 * the live value alone), the spec's or the default otherwise (which restores it after autoscaling
 * is removed).
 */
export function deploymentReplicas(spec: WorkloadSpec | undefined, fallback: number): Pick<V1DeploymentSpec, 'replicas'> {
  return spec?.autoscaling ? {} : { replicas: spec?.replicas ?? fallback };
}

/**
 * While an autoscaler owns the count, what a new Deployment starts with (create-only, never
 * compared): the spec's `replicas` kept within the autoscaler's bounds, else its minimum, so a new
 * Environment does not run one replica until the autoscaler first acts.
 */
export function initialReplicas(spec: WorkloadSpec | undefined): { spec: { replicas: number } } | undefined {
  const scaling = spec?.autoscaling;
  if (!scaling) return undefined;
  const min = scaling.minReplicas ?? 1;
  return { spec: { replicas: Math.min(Math.max(spec?.replicas ?? min, min), scaling.maxReplicas) } };
}

/** The workload's lowest replica count: what decides whether a disruption budget makes sense. */
export function minimumReplicas(spec: WorkloadSpec | undefined, fallback: number): number {
  return spec?.autoscaling ? (spec.autoscaling.minReplicas ?? 1) : (spec?.replicas ?? fallback);
}

/** In the API server's canonical form, so a resync finds nothing to change. */
export function workloadResources(spec: WorkloadSpec | undefined, defaults: ResourceRequirements): V1ResourceRequirements {
  return canonicalResources(spec?.resources ?? defaults);
}

/** Pod-spec fields every workload shares. */
export function elasticPodSpec(selector: Record<string, string>): Pick<V1PodSpec, 'terminationGracePeriodSeconds' | 'topologySpreadConstraints'> {
  return { terminationGracePeriodSeconds: terminationGracePeriodSeconds(), topologySpreadConstraints: topologySpread(selector) };
}
