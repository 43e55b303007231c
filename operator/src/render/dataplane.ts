/**
 * The data plane of one Environment: ServiceAccount, the Role that lets it watch its ConfigMaps,
 * and the Deployment (container port 8080, config from ConfigMaps, hot-reloaded; the connection
 * Secrets of its Datasets as read-only files, refreshed by the kubelet; the Environment's imports
 * claim, if it names one, read-only as the import root of `file://` bulk loads).
 */
import type { V1Deployment, V1Role, V1RoleBinding, V1ServiceAccount } from '@kubernetes/client-node';
import type { EnvironmentResource, SecretKeyRef } from '../../../model/types.js';
import { COMPONENT, componentLabels, componentSelector, objectNames } from '../names.js';
import { ownedMetadata, type OwnerRef } from './meta.js';
import { containerSecurityContext, httpProbes, podSecurityContext, scratchMounts, scratchVolumes } from './pod.js';
import { SECRETS_DIR_ENV, SECRETS_MOUNT_ROOT } from '../../../model/secrets.js';
import { environmentSecretRefs, secretVolumeMounts, secretVolumes } from './secrets.js';
import { importsParts } from './imports.js';
import { HTTP_PORT, withCreateOnly, type RenderSettings, type Rendered } from './types.js';
import { DATAPLANE_DEFAULT_RESOURCES } from '../../../model/workloads.js';
import { deploymentReplicas, elasticPodSpec, initialReplicas, shutdownEnv, workloadResources, type Workload } from './workload.js';

export const DEFAULT_DATAPLANE_REPLICAS = 2;
const DATA_DIR = '/var/lib/data-access';
/**
 * The group of the data-plane image's user (UID 10001). As the pod's fsGroup it owns the mounted
 * Secret files (mode 0440) and is a supplementary group of the process, so the files are readable
 * by the data plane whatever UID the image runs as, and by no other user.
 */
export const DATAPLANE_FS_GROUP = 10001;

export function dataplaneLabels(env: string): Record<string, string> {
  return componentLabels(env, 'data-access-dataplane', COMPONENT.dataplane);
}

export function dataplaneWorkload(env: EnvironmentResource): Workload {
  const name = env.metadata.name;
  return { name: objectNames.dataplane(name), labels: dataplaneLabels(name), selector: componentSelector(name, COMPONENT.dataplane), spec: env.spec.dataplane, defaultReplicas: DEFAULT_DATAPLANE_REPLICAS };
}

export function renderDataplaneServiceAccount(env: EnvironmentResource, owner: OwnerRef, namespace: string): Rendered<V1ServiceAccount> {
  const name = env.metadata.name;
  return {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    // IRSA and other workload identities read the role from the ServiceAccount's annotations.
    metadata: ownedMetadata(objectNames.dataplane(name), namespace, owner, dataplaneLabels(name), env.spec.dataplane?.serviceAccountAnnotations),
  };
}

/**
 * Read access to ConfigMaps: a label-selected watch cannot be narrowed by resourceNames. No
 * Secrets: the connection Secrets reach the container as secret volumes, which the kubelet reads.
 * When the Environment names admin principals, the administrative API's Datasets too (in this
 * namespace only): the data plane writes Dataset resources, the operator everything they render.
 * Always the Datasets' status, to get and patch: the data plane's StorageRetained condition.
 */
export function renderDataplaneRole(env: EnvironmentResource, owner: OwnerRef, namespace: string): Rendered<V1Role> {
  const name = env.metadata.name;
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: ownedMetadata(objectNames.dataplane(name), namespace, owner, dataplaneLabels(name)),
    rules: [
      { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] },
      // The one condition only the data plane can know (StorageRetained, dataplane/src/config/kube-status.ts).
      { apiGroups: ['dataaccess.dev'], resources: ['datasets/status'], verbs: ['get', 'patch'] },
      ...(env.spec.admin?.principals?.length ? [{ apiGroups: ['dataaccess.dev'], resources: ['datasets'], verbs: ['get', 'list', 'create', 'patch', 'delete'] }] : []),
    ],
  };
}

export function renderDataplaneRoleBinding(env: EnvironmentResource, owner: OwnerRef, namespace: string): Rendered<V1RoleBinding> {
  const name = env.metadata.name;
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: ownedMetadata(objectNames.dataplane(name), namespace, owner, dataplaneLabels(name)),
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: objectNames.dataplane(name) },
    subjects: [{ kind: 'ServiceAccount', name: objectNames.dataplane(name), namespace }],
  };
}

/**
 * `secretRefs`: the `location.connectionSecretRef`s of the Environment's Datasets, in any order and
 * with repeats (see `datasetSecretRefs`); the Environment's own bulk-load S3 credentials Secret is
 * added here (`environmentSecretRefs`). A change of that set changes the pod template, so it rolls
 * the Deployment out; a new value in a Secret does not need to: the kubelet rewrites the mounted
 * file and the data plane re-reads it.
 */
export function renderDataplaneDeployment(
  env: EnvironmentResource,
  owner: OwnerRef,
  namespace: string,
  settings: RenderSettings,
  secretRefs: readonly SecretKeyRef[] = [],
): Rendered<V1Deployment> {
  const name = env.metadata.name;
  const spec = env.spec.dataplane ?? {};
  const labels = dataplaneLabels(name);
  const mounted = [...secretRefs, ...environmentSecretRefs(env)];
  const imports = importsParts(env);
  return withCreateOnly({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: ownedMetadata(objectNames.dataplane(name), namespace, owner, labels),
    spec: {
      ...deploymentReplicas(spec, DEFAULT_DATAPLANE_REPLICAS),
      selector: { matchLabels: componentSelector(name, COMPONENT.dataplane) },
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName: objectNames.dataplane(name),
          ...elasticPodSpec(componentSelector(name, COMPONENT.dataplane)),
          securityContext: { ...podSecurityContext, fsGroup: DATAPLANE_FS_GROUP },
          containers: [
            {
              name: 'dataplane',
              image: spec.image ?? settings.dataplaneImage,
              imagePullPolicy: settings.imagePullPolicy,
              env: [
                { name: 'DAS_CONFIG_SOURCE', value: 'kubernetes' },
                { name: 'DAS_NAMESPACE', value: namespace },
                { name: 'DAS_ENVIRONMENT', value: name },
                { name: 'PORT', value: String(HTTP_PORT) },
                { name: 'HOST', value: '0.0.0.0' },
                { name: 'DATA_DIR', value: DATA_DIR },
                { name: 'LOG_LEVEL', value: spec.logLevel ?? 'info' },
                { name: SECRETS_DIR_ENV, value: SECRETS_MOUNT_ROOT },
                ...shutdownEnv(),
                ...imports.env,
                ...(settings.telemetryEnv ?? []),
              ],
              ...httpProbes(),
              resources: workloadResources(spec, DATAPLANE_DEFAULT_RESOURCES),
              securityContext: containerSecurityContext,
              volumeMounts: [...scratchMounts, { name: 'data', mountPath: DATA_DIR }, ...imports.volumeMounts, ...secretVolumeMounts(mounted)],
            },
          ],
          volumes: [...scratchVolumes, { name: 'data', emptyDir: {} }, ...imports.volumes, ...secretVolumes(mounted)],
        },
      },
    },
  }, initialReplicas(spec));
}
