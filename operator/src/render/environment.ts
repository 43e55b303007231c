/** Everything an Environment owns, as desired objects: a pure function of the resource, the settings and its Datasets' Secret refs. */
import type { EnvironmentResource, SecretKeyRef } from '../../../model/types.js';
import { renderEnvironmentConfigMap } from './configmaps.js';
import { renderAutoscaler } from './autoscaling.js';
import { OLDEST_CAPABILITIES, type ClusterCapabilities } from './capabilities.js';
import { renderDisruptionBudget } from './disruption.js';
import { podMonitorsWanted, renderPodMonitor } from './monitoring.js';
import type { Workload } from './workload.js';
import {
  dataplaneWorkload,
  renderDataplaneDeployment,
  renderDataplaneRole,
  renderDataplaneRoleBinding,
  renderDataplaneServiceAccount,
} from './dataplane.js';
import { functionGatewayEnabled, functionGatewayWorkload, renderFunctionGatewayDeployment, renderFunctionGatewayService } from './function-gateway.js';
import type { OwnerRef } from './meta.js';
import { renderFirewall, renderFunctionGatewayFirewall } from './network-policy.js';
import { renderFunctionGatewayServiceAccount, verifiedCallers } from './verified-callers.js';
import { renderApiService, renderInternalService } from './services.js';
import type { DesiredObject, RenderSettings } from './types.js';

export function environmentOwner(env: EnvironmentResource): OwnerRef {
  if (!env.metadata.uid) throw new Error(`Environment ${env.metadata.name} has no uid (not read from the API server?)`);
  return { apiVersion: env.apiVersion, kind: 'Environment', name: env.metadata.name, uid: env.metadata.uid };
}

/**
 * In apply order: identity and permissions first, then config, workloads, and the ways in. Objects
 * that are not in the list (the internal load balancer of a public environment, the function
 * gateway when opted out) are deleted by the reconciler. `secretRefs`: the connection Secrets of the
 * Environment's Datasets (`datasetSecretRefs`), mounted into the data plane. `cluster`: the API
 * versions the cluster serves and whether it has the PodMonitor CRD.
 */
export function renderEnvironmentObjects(
  env: EnvironmentResource,
  settings: RenderSettings,
  secretRefs: readonly SecretKeyRef[] = [],
  cluster: ClusterCapabilities = OLDEST_CAPABILITIES,
): DesiredObject[] {
  const owner = environmentOwner(env);
  const namespace = env.metadata.namespace ?? 'default';
  const objects: DesiredObject[] = [
    renderDataplaneServiceAccount(env, owner, namespace),
    ...(verifiedCallers(env) && functionGatewayEnabled(env) ? [renderFunctionGatewayServiceAccount(env, owner, namespace)] : []),
    renderDataplaneRole(env, owner, namespace),
    renderDataplaneRoleBinding(env, owner, namespace),
    renderEnvironmentConfigMap(env, owner, namespace),
    renderDataplaneDeployment(env, owner, namespace, settings, secretRefs),
  ];
  if (env.spec.type === 'internal') objects.push(renderInternalService(env, owner, namespace));
  objects.push(renderApiService(env, owner, namespace));
  if (functionGatewayEnabled(env)) {
    objects.push(renderFunctionGatewayDeployment(env, owner, namespace, settings), renderFunctionGatewayService(env, owner, namespace));
  }
  objects.push(renderFirewall(env, owner, namespace));
  if (functionGatewayEnabled(env)) objects.push(renderFunctionGatewayFirewall(env, owner, namespace));
  const workloads = [dataplaneWorkload(env), ...(functionGatewayEnabled(env) ? [functionGatewayWorkload(env)] : [])];
  objects.push(...workloads.flatMap((workload) => scalingObjects(env, workload, owner, namespace, cluster)));
  return objects;
}

/** A workload's HorizontalPodAutoscaler, PodDisruptionBudget and PodMonitor, each when it applies. */
function scalingObjects(env: EnvironmentResource, workload: Workload, owner: OwnerRef, namespace: string, cluster: ClusterCapabilities): DesiredObject[] {
  return [
    renderAutoscaler(workload, owner, namespace, cluster.autoscaling),
    renderDisruptionBudget(workload, owner, namespace, cluster.policy),
    podMonitorsWanted(env, cluster) ? renderPodMonitor(workload, owner, namespace) : undefined,
  ].filter((object): object is DesiredObject => object !== undefined);
}
