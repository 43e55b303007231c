/**
 * Compare-and-apply of desired objects (CloudNativePG style): read the live object from the cache,
 * write only when a field the operator owns differs, create what is missing, delete what an owner
 * no longer wants. 409 conflicts are retried with a fresh read.
 */
import { MANAGED_BY, LABELS } from '../names.js';
import type { MutationCache } from '../kube/mutation-cache.js';
import { refOf, statusCodeOf, type KubeObject, type ObjectWriter } from '../kube/object-client.js';
import { creationManifest, type DesiredObject } from '../render/types.js';
import { differingPaths, isUpToDate, mergeForUpdate } from './compare.js';

export type ChangeAction = 'created' | 'updated' | 'deleted';

export interface Change {
  action: ChangeAction;
  kind: string;
  namespace: string;
  name: string;
  /** For updates: the fields that differed. */
  fields?: string[];
}

/** The result of applying one object. */
export type ApplyResult = { change: Change } | { unchanged: true } | { waiting: string };

/** An object of the wanted name exists and belongs to someone else: the operator never takes it over. */
export class OwnershipConflictError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OwnershipConflictError';
  }
}

const MAX_CONFLICT_RETRIES = 3;

export class Applier {
  constructor(
    private readonly client: ObjectWriter,
    private readonly caches: ReadonlyMap<string, MutationCache>,
  ) {}

  private cache(kind: string): MutationCache {
    const cache = this.caches.get(kind);
    if (!cache) throw new Error(`no informer for kind ${kind}`);
    return cache;
  }

  async apply(desired: DesiredObject, ownerUid: string): Promise<ApplyResult> {
    const cache = this.cache(desired.kind);
    const { namespace, name } = desired.metadata;
    const change = (action: ChangeAction, fields?: string[]): { change: Change } => ({
      change: { action, kind: desired.kind, namespace, name, ...(fields ? { fields } : {}) },
    });
    let live: KubeObject | undefined = cache.get(namespace, name);
    for (let attempt = 0; ; attempt++) {
      const retry = attempt < MAX_CONFLICT_RETRIES;
      if (!live) {
        try {
          cache.recordWrite(undefined, await this.client.create(creationManifest(desired) as KubeObject));
          return change('created');
        } catch (err) {
          if (statusCodeOf(err) !== 409 || !retry) throw err;
          live = await this.client.read(refOf(desired as KubeObject)); // it exists after all: compare with it
          continue;
        }
      }
      const waiting = checkOwnership(live, desired, ownerUid);
      if (waiting) return { waiting };
      if (live.metadata.deletionTimestamp) return { waiting: `${desired.kind} ${namespace}/${name} is being deleted; it is recreated afterwards.` };
      if (isUpToDate(desired as KubeObject, live)) return { unchanged: true };
      try {
        const before: KubeObject = live;
        const fields = differingPaths(desired as KubeObject, before);
        cache.recordWrite(before, await this.client.replace(mergeForUpdate(before, desired as KubeObject)));
        return change('updated', fields);
      } catch (err) {
        const code = statusCodeOf(err);
        if ((code !== 409 && code !== 404) || !retry) throw err;
        live = await this.client.read(refOf(desired as KubeObject));
      }
    }
  }

  /**
   * Deletes the objects of the given kinds that `ownerUid` controls in `namespace` but that are not
   * in `keep` (the function gateway after an opt-out, the internal load balancer of a public
   * environment…).
   */
  async prune(ownerUid: string, namespace: string, keep: readonly DesiredObject[], kinds: readonly string[]): Promise<Change[]> {
    const wanted = new Set(keep.map((o) => `${o.kind}/${o.metadata.name}`));
    const changes: Change[] = [];
    for (const kind of kinds) {
      for (const live of this.cache(kind).list(namespace)) {
        if (wanted.has(`${kind}/${live.metadata.name}`) || live.metadata.deletionTimestamp) continue;
        if (!isControlledBy(live, ownerUid)) continue;
        const change = await this.delete(live);
        if (change) changes.push(change);
      }
    }
    return changes;
  }

  /** Deletes one object (if it is still the one we saw: uid precondition). */
  async delete(live: KubeObject): Promise<Change | undefined> {
    try {
      const deleted = await this.client.delete(refOf(live), { uid: live.metadata.uid });
      this.cache(live.kind).recordDelete(live);
      if (!deleted) return undefined;
    } catch (err) {
      if (statusCodeOf(err) === 409) return undefined; // replaced by a different object meanwhile
      throw err;
    }
    return { action: 'deleted', kind: live.kind, namespace: live.metadata.namespace ?? '', name: live.metadata.name };
  }
}

export function controllerOf(object: KubeObject) {
  return object.metadata.ownerReferences?.find((ref) => ref.controller);
}

export function isControlledBy(object: KubeObject, ownerUid: string): boolean {
  return controllerOf(object)?.uid === ownerUid;
}

/**
 * Undefined when the operator may write the live object. Objects of a deleted previous owner of the
 * same kind and name are left to the garbage collector (a wait); anything else that is not ours is
 * a conflict. An unowned object labelled as ours (orphaned) is adopted.
 */
function checkOwnership(live: KubeObject, desired: DesiredObject, ownerUid: string): string | undefined {
  const controller = controllerOf(live);
  const wantedOwner = desired.metadata.ownerReferences?.[0];
  const what = `${live.kind} ${live.metadata.namespace}/${live.metadata.name}`;
  if (controller) {
    if (controller.uid === ownerUid) return undefined;
    if (wantedOwner && controller.kind === wantedOwner.kind && controller.name === wantedOwner.name) {
      return `${what} still belongs to a deleted ${controller.kind} of the same name; waiting for the garbage collector to remove it.`;
    }
    throw new OwnershipConflictError(`${what} already exists and is controlled by ${controller.kind} "${controller.name}"; delete or rename it.`);
  }
  if (live.metadata.labels?.[LABELS.managedBy] === MANAGED_BY) return undefined;
  throw new OwnershipConflictError(`${what} already exists and is not managed by ${MANAGED_BY}; delete or rename it.`);
}
