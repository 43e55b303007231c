/**
 * An informer cache that also knows the operator's own latest writes.
 *
 * After a write, the watch event that brings the new version arrives a little later. Reconciling in
 * between from the stale cache would send a needless (and conflicting) write. So each write is
 * remembered together with the resourceVersion it replaced; as long as the cache still shows that
 * old version, reads return the written object instead. Any newer version from the watch wins.
 */
import type { InformerHandler } from './informer.js';
import type { KubeObject } from './object-client.js';

/** What the mutation cache needs of an informer. */
export interface CacheSource<T> {
  readonly kind: string;
  on(handler: InformerHandler<T>): void;
  get(namespace: string | undefined, name: string): T | undefined;
  list(namespace?: string): readonly T[];
}

interface Overlay<T> {
  /** resourceVersion the cache shows until it catches up (undefined: not in the cache yet). */
  staleResourceVersion: string | undefined;
  /** What the operator wrote; undefined after a delete. */
  latest: T | undefined;
}

export class MutationCache<T extends KubeObject = KubeObject> {
  private readonly overlays = new Map<string, Overlay<T>>();

  constructor(private readonly informer: CacheSource<T>) {
    informer.on((object) => this.observe(object));
  }

  get kind(): string {
    return this.informer.kind;
  }

  get(namespace: string | undefined, name: string): T | undefined {
    const cached = this.informer.get(namespace, name);
    const key = keyOf(namespace, name);
    const overlay = this.overlays.get(key);
    if (!overlay) return cached;
    if (cached?.metadata.resourceVersion === overlay.staleResourceVersion) return overlay.latest;
    this.overlays.delete(key);
    return cached;
  }

  /** Cached objects of a namespace with the operator's own writes applied. */
  list(namespace?: string): T[] {
    const result: T[] = [];
    const seen = new Set<string>();
    for (const cached of this.informer.list(namespace)) {
      const key = keyOf(cached.metadata.namespace, cached.metadata.name);
      seen.add(key);
      const current = this.get(cached.metadata.namespace, cached.metadata.name);
      if (current) result.push(current);
    }
    for (const [key, overlay] of this.overlays) {
      if (seen.has(key) || !overlay.latest) continue;
      if (namespace !== undefined && overlay.latest.metadata.namespace !== namespace) continue;
      if (overlay.staleResourceVersion === undefined) result.push(overlay.latest);
    }
    return result;
  }

  /** Records a write: `before` is the version the write replaced (undefined for a create). */
  recordWrite(before: T | undefined, after: T): void {
    this.overlays.set(keyOf(after.metadata.namespace, after.metadata.name), {
      staleResourceVersion: before?.metadata.resourceVersion,
      latest: after,
    });
  }

  recordDelete(before: T): void {
    this.overlays.set(keyOf(before.metadata.namespace, before.metadata.name), {
      staleResourceVersion: before.metadata.resourceVersion,
      latest: undefined,
    });
  }

  private observe(object: T): void {
    const key = keyOf(object.metadata.namespace, object.metadata.name);
    const overlay = this.overlays.get(key);
    if (overlay && object.metadata.resourceVersion !== overlay.staleResourceVersion) this.overlays.delete(key);
  }
}

function keyOf(namespace: string | undefined, name: string): string {
  return `${namespace ?? ''}/${name}`;
}
