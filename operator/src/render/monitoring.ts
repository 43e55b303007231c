/**
 * A Prometheus Operator PodMonitor per workload (same name as its Deployment), scraping /metrics
 * on the container's `http` port: only when the cluster has the CRD, and not when the Environment
 * opts out (`spec.monitoring.podMonitor: false`).
 */
import type { EnvironmentResource } from '../../../model/types.js';
import { POD_MONITOR_API_VERSION, type ClusterCapabilities } from './capabilities.js';
import { ownedMetadata, type OwnerRef } from './meta.js';
import type { DesiredObject } from './types.js';
import type { Workload } from './workload.js';

export function podMonitorsWanted(env: EnvironmentResource, cluster: ClusterCapabilities): boolean {
  return cluster.podMonitors && env.spec.monitoring?.podMonitor !== false;
}

/** The fields of the Prometheus Operator's PodMonitor the operator sets. */
export interface PodMonitor extends DesiredObject {
  spec: { selector: { matchLabels: Record<string, string> }; podMetricsEndpoints: { port: string; path: string }[] };
}

export function renderPodMonitor(workload: Workload, owner: OwnerRef, namespace: string): PodMonitor {
  return {
    apiVersion: POD_MONITOR_API_VERSION,
    kind: 'PodMonitor',
    metadata: ownedMetadata(workload.name, namespace, owner, workload.labels),
    spec: {
      selector: { matchLabels: workload.selector },
      podMetricsEndpoints: [{ port: 'http', path: '/metrics' }],
    },
  };
}
