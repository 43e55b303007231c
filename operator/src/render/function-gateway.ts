/**
 * The function gateway `service-E-function-service-gateway`: a Deployment and a Service, created by
 * default in every environment. It proxies invocation payloads to the environment's internal REST
 * endpoint (the internal load balancer; the API gateway Service for environments of type public).
 */
import type { V1Deployment, V1Service } from '@kubernetes/client-node';
import type { EnvironmentResource } from '../../../model/types.js';
import { COMPONENT, componentLabels, componentSelector, objectNames } from '../names.js';
import { ownedMetadata, type OwnerRef } from './meta.js';
import { containerSecurityContext, httpProbes, podSecurityContext, scratchMounts, scratchVolumes } from './pod.js';
import { HTTP_PORT, SERVICE_HTTP_PORT, SERVICE_PORT, type RenderSettings, type Rendered } from './types.js';
import { FUNCTION_GATEWAY_DEFAULT_RESOURCES } from '../../../model/workloads.js';
import { deploymentReplicas, elasticPodSpec, shutdownEnv, workloadResources, type Workload } from './workload.js';

export const DEFAULT_FUNCTION_GATEWAY_REPLICAS = 1;

export function functionGatewayEnabled(env: EnvironmentResource): boolean {
  return env.spec.functionGateway?.enabled !== false;
}

export function functionGatewayLabels(env: string): Record<string, string> {
  return componentLabels(env, 'data-access-function-gateway', COMPONENT.functionGateway);
}

export function functionGatewayWorkload(env: EnvironmentResource): Workload {
  const name = env.metadata.name;
  const selector = componentSelector(name, COMPONENT.functionGateway);
  return { name: objectNames.functionGateway(name), labels: functionGatewayLabels(name), selector, spec: env.spec.functionGateway, defaultReplicas: DEFAULT_FUNCTION_GATEWAY_REPLICAS };
}

/** The in-cluster URL of the REST API the function gateway forwards to. */
export function functionGatewayUpstream(env: EnvironmentResource, namespace: string): string {
  const name = env.metadata.name;
  const service = env.spec.type === 'internal' ? objectNames.internalService(name) : objectNames.apiService(name);
  return `http://${service}.${namespace}.svc:${SERVICE_PORT}`;
}

export function renderFunctionGatewayDeployment(
  env: EnvironmentResource,
  owner: OwnerRef,
  namespace: string,
  settings: RenderSettings,
): Rendered<V1Deployment> {
  const name = env.metadata.name;
  const labels = functionGatewayLabels(name);
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: ownedMetadata(objectNames.functionGateway(name), namespace, owner, labels),
    spec: {
      ...deploymentReplicas(env.spec.functionGateway, DEFAULT_FUNCTION_GATEWAY_REPLICAS),
      selector: { matchLabels: componentSelector(name, COMPONENT.functionGateway) },
      template: {
        metadata: { labels },
        spec: {
          // It only forwards HTTP; it needs no Kubernetes API access at all.
          automountServiceAccountToken: false,
          ...elasticPodSpec(componentSelector(name, COMPONENT.functionGateway)),
          securityContext: podSecurityContext,
          containers: [
            {
              name: 'function-gateway',
              image: env.spec.functionGateway?.image ?? settings.functionGatewayImage,
              imagePullPolicy: settings.imagePullPolicy,
              env: [
                { name: 'DAS_MODE', value: 'function-gateway' },
                { name: 'DAS_FUNCTION_NAME', value: objectNames.functionGateway(name) },
                { name: 'DAS_ENVIRONMENT', value: name },
                { name: 'DAS_UPSTREAM_URL', value: functionGatewayUpstream(env, namespace) },
                { name: 'PORT', value: String(HTTP_PORT) },
                ...shutdownEnv(),
              ],
              ...httpProbes(),
              resources: workloadResources(env.spec.functionGateway, FUNCTION_GATEWAY_DEFAULT_RESOURCES),
              securityContext: containerSecurityContext,
              volumeMounts: scratchMounts,
            },
          ],
          volumes: scratchVolumes,
        },
      },
    },
  };
}

export function renderFunctionGatewayService(env: EnvironmentResource, owner: OwnerRef, namespace: string): Rendered<V1Service> {
  const name = env.metadata.name;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: ownedMetadata(objectNames.functionGateway(name), namespace, owner, functionGatewayLabels(name)),
    spec: {
      type: 'ClusterIP',
      selector: componentSelector(name, COMPONENT.functionGateway),
      ports: [SERVICE_HTTP_PORT],
    },
  };
}
