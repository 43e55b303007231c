/**
 * The Environment's cluster-scoped objects (the system:auth-delegator and
 * system:service-account-issuer-discovery ClusterRoleBindings of trust verified). No informer watches them (that would need cluster-wide list/watch): they are applied
 * by name, remembered once written, and removed by the Environment's finalizer, because a
 * cluster-scoped object cannot be owned by a namespaced one.
 */
import { sameJson } from './resource-writer.js';
import { statusCodeOf, refOf, type KubeObject, type ObjectWriter } from '../kube/object-client.js';
import { CLUSTER_BINDINGS_FINALIZER, possibleBindingNames, renderVerifyingBindings } from '../render/verified-callers.js';
import type { EnvironmentResource } from '../../../model/types.js';
import { recordChange, type ReconcileContext } from './context.js';

/** What was last written (or found up to date) per binding name: spares a GET on every reconcile. */
const known = new WeakMap<ObjectWriter, Map<string, string>>();

function memo(client: ObjectWriter): Map<string, string> {
  let map = known.get(client);
  if (!map) known.set(client, (map = new Map()));
  return map;
}

/** Known not to exist (deleted, or never needed): no DELETE on every reconcile. */
const ABSENT = '';
const wanted = (o: KubeObject) => JSON.stringify({ labels: o.metadata.labels, roleRef: o.roleRef, subjects: o.subjects });

/**
 * Puts the finalizer on first (so nothing can outlive the Environment), then creates or updates
 * the bindings trust verified needs, and deletes those it no longer needs (then the finalizer goes).
 * Returns the Environment as now stored.
 */
export async function reconcileClusterBindings(ctx: ReconcileContext, env: KubeObject): Promise<KubeObject> {
  const client = ctx.clusterWriter;
  const resource = env as unknown as EnvironmentResource;
  const namespace = env.metadata.namespace ?? 'default';
  const desired = renderVerifyingBindings(resource, namespace);
  if (desired.length === 0) {
    if (!env.metadata.finalizers?.includes(CLUSTER_BINDINGS_FINALIZER)) return env;
    return finalizeClusterBindings(ctx, env);
  }
  if (!client) throw new Error('trust verified needs ClusterRoleBindings, but this operator has no client for cluster-scoped objects');
  const stored = await ctx.environmentWriter.addFinalizer(env, CLUSTER_BINDINGS_FINALIZER);
  const written = memo(client);
  for (const binding of desired) {
    const name = binding.metadata.name;
    if (written.get(name) === wanted(binding)) continue;
    const live = await client.read(refOf(binding));
    if (!live) {
      await client.create(binding);
      await recordChange(ctx, env, { action: 'created', kind: binding.kind, namespace: '', name });
    } else if (!sameJson(JSON.parse(wanted(live)), JSON.parse(wanted(binding)))) {
      // roleRef cannot change in place; ours never does, so a differing live object is replaced whole.
      await client.replace({ ...binding, metadata: { ...binding.metadata, resourceVersion: live.metadata.resourceVersion } });
      await recordChange(ctx, env, { action: 'updated', kind: binding.kind, namespace: '', name, fields: ['subjects'] });
    }
    written.set(name, wanted(binding));
  }
  for (const name of possibleBindingNames(resource, namespace)) {
    if (!desired.some((b) => b.metadata.name === name) && written.get(name) !== ABSENT) await deleteBinding(ctx, env, name);
  }
  return stored;
}

/** The Environment is going (or no longer verified): its bindings are deleted, then the finalizer removed. */
export async function finalizeClusterBindings(ctx: ReconcileContext, env: KubeObject): Promise<KubeObject> {
  if (!env.metadata.finalizers?.includes(CLUSTER_BINDINGS_FINALIZER)) return env;
  for (const name of possibleBindingNames(env as unknown as EnvironmentResource, env.metadata.namespace ?? 'default')) await deleteBinding(ctx, env, name);
  return ctx.environmentWriter.removeFinalizer(env, CLUSTER_BINDINGS_FINALIZER);
}

async function deleteBinding(ctx: ReconcileContext, env: KubeObject, name: string): Promise<void> {
  const client = ctx.clusterWriter;
  if (!client) return;
  memo(client).delete(name);
  try {
    const deleted = await client.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', name });
    if (deleted) await recordChange(ctx, env, { action: 'deleted', kind: 'ClusterRoleBinding', namespace: '', name });
  } catch (err) {
    if (statusCodeOf(err) !== 404) throw err;
  }
  memo(client).set(name, ABSENT);
}
