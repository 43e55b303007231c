/** What the reconcilers work with: caches, the applier, writers for the custom resources, events. */
import type { Logger } from 'pino';
import type { EventSink } from '../kube/events.js';
import type { MutationCache } from '../kube/mutation-cache.js';
import { apiErrorMessage, type KubeObject, type ObjectWriter } from '../kube/object-client.js';
import type { DesiredObject, RenderSettings } from '../render/types.js';
import type { ClusterCapabilities } from '../render/capabilities.js';
import { OwnershipConflictError, type Applier, type Change } from './applier.js';
import { readyTransition, type Condition } from './conditions.js';
import type { ResourceWriter } from './resource-writer.js';
import type { Outcome } from './status.js';

export interface ReconcileContext {
  environments: MutationCache;
  datasets: MutationCache;
  /** Caches of the kinds the operator creates, by kind. */
  owned: ReadonlyMap<string, MutationCache>;
  applier: Applier;
  /** Writes cluster-scoped objects (trust verified's ClusterRoleBindings); absent in tests that need none. */
  clusterWriter?: ObjectWriter;
  environmentWriter: ResourceWriter;
  datasetWriter: ResourceWriter;
  events: EventSink;
  settings: RenderSettings;
  /** What the cluster serves now (API versions, the PodMonitor CRD); absent: the oldest supported cluster. */
  capabilities?: () => ClusterCapabilities;
  logger: Logger;
  now: () => Date;
}

export interface ReconcileResult {
  /** Look again after this long even without an event (waiting for the garbage collector). */
  requeueAfterMs?: number;
}

export const WAIT_REQUEUE_MS = 2_000;

export function ownedCache(ctx: ReconcileContext, kind: string): MutationCache {
  const cache = ctx.owned.get(kind);
  if (!cache) throw new Error(`no informer for kind ${kind}`);
  return cache;
}

const REASONS = { created: 'Created', updated: 'Updated', deleted: 'Deleted' } as const;

/** One Event per change the operator made, on the resource that caused it. */
export async function recordChange(ctx: ReconcileContext, involved: KubeObject, change: Change, detail = ''): Promise<void> {
  const verb = REASONS[change.action];
  ctx.logger.info({ resource: `${involved.kind}/${involved.metadata.namespace}/${involved.metadata.name}`, ...change }, `${change.action} ${change.kind}`);
  const fields = change.fields?.length ? ` (${change.fields.join(', ')})` : '';
  await ctx.events.record(involved, 'Normal', verb, `${verb} ${change.kind} ${change.name}${fields}${detail}`);
}

/** Writes the status if it changed, with an Event when Ready flips or changes reason. */
export async function publishStatus(ctx: ReconcileContext, writer: ResourceWriter, resource: KubeObject, status: { conditions: Condition[] }): Promise<KubeObject> {
  const previous = (resource.status as { conditions?: Condition[] } | undefined)?.conditions;
  const written = await writer.writeStatus(resource, status);
  const transition = readyTransition(previous, status.conditions);
  if (transition && written !== resource) await ctx.events.record(written, transition.type, transition.reason, transition.message);
  return written;
}

/**
 * Applies the desired objects of one owner, deletes the objects of `pruneKinds` it controls but no
 * longer wants, and records an Event per change.
 */
export async function applyOwned(
  ctx: ReconcileContext,
  owner: KubeObject,
  desired: readonly DesiredObject[],
  pruneKinds: readonly string[],
): Promise<Outcome> {
  const ownerUid = owner.metadata.uid ?? '';
  const waits: string[] = [];
  for (const object of desired) {
    const result = await ctx.applier.apply(object, ownerUid);
    if ('change' in result) await recordChange(ctx, owner, result.change);
    if ('waiting' in result) waits.push(result.waiting);
  }
  for (const change of await ctx.applier.prune(ownerUid, owner.metadata.namespace ?? 'default', desired, pruneKinds)) {
    await recordChange(ctx, owner, change);
  }
  return waits.length ? { kind: 'waiting', message: waits.join(' ') } : { kind: 'applied' };
}

/** The outcome a failed apply reports (the error itself goes on to the retry with backoff). */
export function failureOutcome(err: unknown): Outcome {
  return err instanceof OwnershipConflictError ? { kind: 'conflict', message: err.message } : { kind: 'failed', message: apiErrorMessage(err) };
}
