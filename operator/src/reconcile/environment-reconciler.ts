/**
 * Environment → data plane (ServiceAccount, Role, RoleBinding, config ConfigMap, Deployment), the
 * Services, the firewall NetworkPolicies and the function gateway. Deleting the Environment deletes
 * them through their ownerReferences (garbage collection); only trust verified's cluster-scoped
 * ClusterRoleBindings need a finalizer (cluster-bindings.ts). Its Datasets
 * count too: their connection Secrets are mounted into the data plane (the controller queues the
 * Environment whenever one of its Datasets changes).
 */
import { checkDatasetSpec, checkEnvironmentSpec } from '../../../model/validate.js';
import type { EnvironmentResource, EnvironmentSpec, SecretKeyRef } from '../../../model/types.js';
import type { KubeObject } from '../kube/object-client.js';
import { objectNames } from '../names.js';
import { renderEnvironmentObjects } from '../render/environment.js';
import { finalizeClusterBindings, reconcileClusterBindings } from './cluster-bindings.js';
import { datasetSecretRefs, publishedSecretRefs, type WithConnectionSecret } from '../render/secrets.js';
import { WAIT_REQUEUE_MS, applyOwned, failureOutcome, ownedCache, publishStatus, type ReconcileContext, type ReconcileResult } from './context.js';
import { environmentStatus, type DeploymentView, type Outcome } from './status.js';

export const ENVIRONMENT_OWNED_KINDS = [
  'ServiceAccount',
  'Role',
  'RoleBinding',
  'ConfigMap',
  'Deployment',
  'Service',
  'NetworkPolicy',
  'HorizontalPodAutoscaler',
  'PodDisruptionBudget',
  'PodMonitor',
] as const;

type EnvironmentObject = KubeObject & { spec: EnvironmentSpec };
type DatasetObject = KubeObject & WithConnectionSecret & { spec?: { environment?: string } };

export async function reconcileEnvironment(ctx: ReconcileContext, namespace: string, name: string): Promise<ReconcileResult> {
  const cached = ctx.environments.get(namespace, name) as EnvironmentObject | undefined;
  if (!cached) return {};
  // Owned objects go by garbage collection; the cluster-scoped bindings by this finalizer.
  if (cached.metadata.deletionTimestamp) {
    await finalizeClusterBindings(ctx, cached);
    return {};
  }
  let env = cached;

  let outcome: Outcome;
  let failure: unknown;
  const datasets = environmentDatasets(ctx, namespace, name);
  const problems = checkEnvironmentSpec(env.spec);
  if (problems.length) {
    outcome = { kind: 'invalid', problems };
  } else {
    try {
      const secretRefs = neededSecretRefs(ctx, namespace, name, datasets);
      env = (await reconcileClusterBindings(ctx, env)) as EnvironmentObject;
      const desired = renderEnvironmentObjects(env as unknown as EnvironmentResource, ctx.settings, secretRefs, ctx.capabilities?.());
      // A kind the cluster does not have (PodMonitor without its CRD) has no cache and nothing to prune.
      outcome = await applyOwned(ctx, env, desired, ENVIRONMENT_OWNED_KINDS.filter((kind) => ctx.owned.has(kind)));
    } catch (err) {
      failure = err;
      outcome = failureOutcome(err);
    }
  }

  const status = environmentStatus(
    env,
    outcome,
    {
      datasets: datasets.length,
      dataplane: ownedCache(ctx, 'Deployment').get(namespace, objectNames.dataplane(name)) as DeploymentView | undefined,
    },
    ctx.now(),
  );
  await publishStatus(ctx, ctx.environmentWriter, env, status);
  if (failure) throw failure;
  return outcome.kind === 'waiting' ? { requeueAfterMs: WAIT_REQUEUE_MS } : {};
}

/** The Datasets of this Environment that are not being deleted (from the cache). */
function environmentDatasets(ctx: ReconcileContext, namespace: string, environment: string): DatasetObject[] {
  return (ctx.datasets.list(namespace) as DatasetObject[]).filter((d) => d.spec?.environment === environment && !d.metadata.deletionTimestamp);
}

/**
 * The connection Secrets the data plane needs: the one of each Dataset's published config (what
 * it serves now) and the one of each valid spec (what it is about to be given). An invalid edit is
 * never published, so the Secret it names is not mounted and the published one stays.
 */
function neededSecretRefs(ctx: ReconcileContext, namespace: string, environment: string, datasets: DatasetObject[]): SecretKeyRef[] {
  const configMaps = ownedCache(ctx, 'ConfigMap');
  const sources: WithConnectionSecret[] = [];
  for (const dataset of datasets) {
    if (checkDatasetSpec(dataset.spec).length === 0) sources.push(dataset);
    const published = publishedSecretRefs(configMaps.get(namespace, objectNames.datasetConfigMap(environment, dataset.metadata.name)) as { data?: Record<string, string> } | undefined);
    sources.push(...published.map((ref) => ({ spec: { location: { connectionSecretRef: ref } } })));
  }
  return datasetSecretRefs(sources);
}
