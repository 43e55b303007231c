/**
 * The PodDisruptionBudget of a workload that runs 2 or more replicas (or may scale down to 2):
 * a node drain then evicts one Pod at a time, so the workload never loses every replica at once.
 * With fewer there is none: a single replica goes down in a drain anyway (`maxUnavailable: 1` allows
 * it, and a budget that refused it would block the drain). With autoscaling, `minReplicas` decides.
 */
import type { V1PodDisruptionBudget } from '@kubernetes/client-node';
import type { PolicyApiVersion } from './capabilities.js';
import { ownedMetadata, type OwnerRef } from './meta.js';
import type { Rendered } from './types.js';
import { minimumReplicas, type Workload } from './workload.js';

export const PDB_MIN_REPLICAS = 2;

/** `policy/v1` and `v1beta1` share this shape (the selector is always set, so v1beta1's empty-selector rule does not apply). */
export function renderDisruptionBudget(workload: Workload, owner: OwnerRef, namespace: string, apiVersion: PolicyApiVersion): Rendered<V1PodDisruptionBudget> | undefined {
  if (minimumReplicas(workload.spec, workload.defaultReplicas) < PDB_MIN_REPLICAS) return undefined;
  return {
    apiVersion,
    kind: 'PodDisruptionBudget',
    metadata: ownedMetadata(workload.name, namespace, owner, workload.labels),
    spec: { maxUnavailable: 1, selector: { matchLabels: workload.selector } },
  };
}
