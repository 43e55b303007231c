/** The HorizontalPodAutoscaler of a workload with `autoscaling` (same name as its Deployment). */
import { DEFAULT_MIN_REPLICAS, DEFAULT_TARGET_CPU_PERCENT } from '../../../model/workloads.js';
import type { V2HorizontalPodAutoscaler, V2MetricSpec } from '@kubernetes/client-node';
import type { AutoscalingApiVersion } from './capabilities.js';
import { ownedMetadata, type OwnerRef } from './meta.js';
import type { Rendered } from './types.js';
import type { Workload } from './workload.js';

/** `autoscaling/v2` and `v2beta2` share this shape. */
export function renderAutoscaler(workload: Workload, owner: OwnerRef, namespace: string, apiVersion: AutoscalingApiVersion): Rendered<V2HorizontalPodAutoscaler> | undefined {
  const scaling = workload.spec?.autoscaling;
  if (!scaling) return undefined;
  const utilization = (name: string, percent: number): V2MetricSpec => ({ type: 'Resource', resource: { name, target: { type: 'Utilization', averageUtilization: percent } } });
  const metrics = [utilization('cpu', scaling.targetCPUUtilizationPercentage ?? DEFAULT_TARGET_CPU_PERCENT)];
  if (scaling.targetMemoryUtilizationPercentage !== undefined) metrics.push(utilization('memory', scaling.targetMemoryUtilizationPercentage));
  return {
    apiVersion,
    kind: 'HorizontalPodAutoscaler',
    metadata: ownedMetadata(workload.name, namespace, owner, workload.labels),
    spec: {
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: workload.name },
      minReplicas: scaling.minReplicas ?? DEFAULT_MIN_REPLICAS,
      maxReplicas: scaling.maxReplicas,
      metrics,
    },
  };
}

