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
import { iamAudiences, PROJECTED_TOKEN_PATH, projectedTokenParts, verifiedCallers } from './verified-callers.js';
import { functionGatewayAudience } from '../../../model/render.js';
import { HTTP_PORT, SERVICE_HTTP_PORT, SERVICE_PORT, withCreateOnly, type RenderSettings, type Rendered } from './types.js';
import { FUNCTION_GATEWAY_DEFAULT_RESOURCES } from '../../../model/workloads.js';
import { deploymentReplicas, elasticPodSpec, initialReplicas, shutdownEnv, workloadResources, type Workload } from './workload.js';
import { SECRETS_DIR_ENV, SECRETS_MOUNT_ROOT } from '../../../model/secrets.js';
import { DATAPLANE_FS_GROUP } from './dataplane.js';
import { secretVolumeMounts, secretVolumes } from './secrets.js';

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
  const trust = functionGatewayTrustParts(env, namespace);
  const keys = accessKeyParts(env);
  return withCreateOnly({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: ownedMetadata(objectNames.functionGateway(name), namespace, owner, labels),
    spec: {
      ...deploymentReplicas(env.spec.functionGateway, DEFAULT_FUNCTION_GATEWAY_REPLICAS),
      selector: { matchLabels: componentSelector(name, COMPONENT.functionGateway) },
      template: {
        metadata: { labels },
        spec: {
          // network: it only forwards HTTP and needs no Kubernetes API access at all. verified: its
          // own ServiceAccount, whose API token makes TokenReviews (system:auth-delegator only).
          ...trust.pod,
          ...elasticPodSpec(componentSelector(name, COMPONENT.functionGateway)),
          securityContext: keys.volumes.length ? { ...podSecurityContext, fsGroup: DATAPLANE_FS_GROUP } : podSecurityContext,
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
                { name: 'HOST', value: '0.0.0.0' },
                ...trust.env,
                ...keys.env,
                ...shutdownEnv(),
                ...(settings.telemetryEnv ?? []),
              ],
              ...httpProbes(),
              resources: workloadResources(env.spec.functionGateway, FUNCTION_GATEWAY_DEFAULT_RESOURCES),
              securityContext: containerSecurityContext,
              volumeMounts: [...scratchMounts, ...trust.volumeMounts, ...keys.volumeMounts],
            },
          ],
          volumes: [...scratchVolumes, ...trust.volumes, ...keys.volumes],
        },
      },
    },
  }, initialReplicas(env.spec.functionGateway));
}

/**
 * The Lambda Invoke API's access keys: the list as DAS_ACCESS_KEYS (ids, names and Secret refs, no
 * secret), and each referenced Secret key mounted as a file below DAS_SECRETS_DIR, as the data
 * plane's Secrets are (0440, readable through the pod's fsGroup). Nothing without keys, so existing
 * gateways are not rolled out.
 */
function accessKeyParts(env: EnvironmentResource) {
  const keys = env.spec.functionGateway?.accessKeys ?? [];
  if (!keys.length) return { env: [], volumes: [], volumeMounts: [] };
  const refs = keys.map((k) => k.secretRef);
  return {
    env: [
      { name: 'DAS_ACCESS_KEYS', value: JSON.stringify(keys.map(({ name, accessKeyId, secretRef }) => ({ name, accessKeyId, secretRef: { name: secretRef.name, key: secretRef.key } }))) },
      { name: SECRETS_DIR_ENV, value: SECRETS_MOUNT_ROOT },
    ],
    volumes: secretVolumes(refs),
    volumeMounts: secretVolumeMounts(refs),
  };
}

/** The pod settings of trust verified: identity, token volume, and what the gateway checks. */
function functionGatewayTrustParts(env: EnvironmentResource, namespace: string) {
  if (!verifiedCallers(env)) return { pod: { automountServiceAccountToken: false }, env: [], volumes: [], volumeMounts: [] };
  const token = projectedTokenParts(iamAudiences(env, namespace)[0]);
  return {
    pod: { serviceAccountName: objectNames.functionGateway(env.metadata.name), automountServiceAccountToken: true },
    env: [
      { name: 'DAS_TRUST', value: 'verified' },
      { name: 'DAS_TOKEN_AUDIENCE', value: functionGatewayAudience(namespace, env.metadata.name) },
      { name: 'DAS_INVOKERS', value: JSON.stringify(env.spec.functionGateway?.invokers ?? []) },
      { name: 'DAS_UPSTREAM_TOKEN_FILE', value: PROJECTED_TOKEN_PATH },
    ],
    ...token,
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
