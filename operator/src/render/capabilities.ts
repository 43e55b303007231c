/**
 * What the cluster serves that changes what the operator renders: the API versions of
 * HorizontalPodAutoscaler and PodDisruptionBudget, and whether the Prometheus Operator's PodMonitor
 * CRD exists. Discovered at run time (kube/discovery.ts) and passed to the pure renderers.
 */
export type AutoscalingApiVersion = 'autoscaling/v2' | 'autoscaling/v2beta2';
export type PolicyApiVersion = 'policy/v1' | 'policy/v1beta1';

export interface ClusterCapabilities {
  autoscaling: AutoscalingApiVersion;
  policy: PolicyApiVersion;
  /** `podmonitors.monitoring.coreos.com` is served. */
  podMonitors: boolean;
}

/** What every supported cluster (1.20 and later) serves: the assumption when discovery fails. */
export const OLDEST_CAPABILITIES: ClusterCapabilities = { autoscaling: 'autoscaling/v2beta2', policy: 'policy/v1beta1', podMonitors: false };

export const POD_MONITOR_API_VERSION = 'monitoring.coreos.com/v1';
export const POD_MONITOR_CRD = 'podmonitors.monitoring.coreos.com';

/** The newer version where served, else the older one. */
export function capabilitiesFromGroups(servedGroupVersions: ReadonlySet<string>, podMonitors: boolean): ClusterCapabilities {
  return {
    autoscaling: servedGroupVersions.has('autoscaling/v2') ? 'autoscaling/v2' : 'autoscaling/v2beta2',
    policy: servedGroupVersions.has('policy/v1') ? 'policy/v1' : 'policy/v1beta1',
    podMonitors,
  };
}
