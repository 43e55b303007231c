/**
 * Writes to the custom resources themselves: the status subresource and the finalizer list. Each
 * write happens only when the value differs, goes through the mutation cache, and is retried on a
 * 409 conflict with a fresh read (as long as the spec generation is the one we worked on).
 */
import type { MutationCache } from '../kube/mutation-cache.js';
import { refOf, statusCodeOf, type KubeObject, type ObjectWriter } from '../kube/object-client.js';
import { canonicalJson } from '../render/canonical-json.js';
import { FOREIGN_CONDITIONS, type Condition } from './conditions.js';

const MAX_CONFLICT_RETRIES = 3;

export function sameJson(a: unknown, b: unknown): boolean {
  return canonicalJson(a ?? null) === canonicalJson(b ?? null);
}

/** `status` with the stored conditions of the types another writer owns (FOREIGN_CONDITIONS) in place of its copies. */
export function withForeignConditions(status: object, stored: unknown): object {
  const conditions = (status as { conditions?: Condition[] }).conditions;
  if (!conditions) return status;
  const theirs = ((stored as { conditions?: Condition[] } | undefined)?.conditions ?? []).filter((c) => FOREIGN_CONDITIONS.includes(c.type));
  const ours = conditions.filter((c) => !FOREIGN_CONDITIONS.includes(c.type));
  return { ...status, conditions: [...ours, ...theirs] };
}

export class ResourceWriter {
  constructor(
    private readonly client: ObjectWriter,
    private readonly cache: MutationCache,
  ) {}

  /** Sets status; returns the object as now stored (the input when nothing had to change). */
  async writeStatus(resource: KubeObject, status: object): Promise<KubeObject> {
    return this.update(
      resource,
      (current) => {
        const next = withForeignConditions(status, current.status);
        return sameJson(current.status, next) ? undefined : { ...current, status: next };
      },
      (o) => this.client.replaceStatus(o),
      { generationBound: true },
    );
  }

  async addFinalizer(resource: KubeObject, finalizer: string): Promise<KubeObject> {
    return this.update(
      resource,
      (current) => {
        const finalizers = current.metadata.finalizers ?? [];
        if (finalizers.includes(finalizer)) return undefined;
        return { ...current, metadata: { ...current.metadata, finalizers: [...finalizers, finalizer] } };
      },
      (o) => this.client.replace(o),
    );
  }

  async removeFinalizer(resource: KubeObject, finalizer: string): Promise<KubeObject> {
    return this.update(
      resource,
      (current) => {
        const finalizers = current.metadata.finalizers ?? [];
        if (!finalizers.includes(finalizer)) return undefined;
        return { ...current, metadata: { ...current.metadata, finalizers: finalizers.filter((f) => f !== finalizer) } };
      },
      (o) => this.client.replace(o),
    );
  }

  private async update(
    resource: KubeObject,
    change: (current: KubeObject) => KubeObject | undefined,
    write: (object: KubeObject) => Promise<KubeObject>,
    options: { generationBound?: boolean } = {},
  ): Promise<KubeObject> {
    let current = resource;
    for (let attempt = 0; ; attempt++) {
      const next = change(current);
      if (!next) return current;
      try {
        const written = await write(next);
        this.cache.recordWrite(current, written);
        return written;
      } catch (err) {
        if (statusCodeOf(err) === 404) return current; // gone meanwhile: nothing left to update
        if (statusCodeOf(err) !== 409 || attempt >= MAX_CONFLICT_RETRIES) throw err;
        const fresh = await this.client.read(refOf(resource));
        if (!fresh) return current;
        // A status computed for an older generation is stale; the newer one gets its own reconcile.
        if (options.generationBound && fresh.metadata.generation !== resource.metadata.generation) return fresh;
        current = fresh;
      }
    }
  }
}
