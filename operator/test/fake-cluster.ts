/**
 * Test double of the API server for reconciler unit tests: an in-memory object store with
 * resourceVersions, optimistic concurrency (409 on a stale resourceVersion or an existing name),
 * uid preconditions on delete, a write log, and informer caches that only see changes when the test
 * calls sync() (so tests can reproduce a cache that lags behind the operator's own writes).
 */
import { ApiException } from '@kubernetes/client-node';
import { pino } from 'pino';
import type { EventSink, EventType } from '../src/kube/events.js';
import type { InformerHandler } from '../src/kube/informer.js';
import { MutationCache, type CacheSource } from '../src/kube/mutation-cache.js';
import type { KubeObject, ObjectRef, ObjectWriter } from '../src/kube/object-client.js';
import { Applier } from '../src/reconcile/applier.js';
import type { ReconcileContext } from '../src/reconcile/context.js';
import { ResourceWriter } from '../src/reconcile/resource-writer.js';
import { DEFAULT_RENDER_SETTINGS } from '../src/render/types.js';

export interface WriteRecord {
  verb: 'create' | 'update' | 'update-status' | 'delete';
  kind: string;
  name: string;
}

const key = (kind: string, namespace: string | undefined, name: string) => `${kind}/${namespace ?? ''}/${name}`;

function apiError(code: number, message: string): ApiException<unknown> {
  return new ApiException(code, message, { kind: 'Status', code, message }, {});
}

export class FakeCluster implements ObjectWriter {
  readonly objects = new Map<string, KubeObject>();
  readonly writes: WriteRecord[] = [];
  private revision = 1;
  private uidCounter = 1;
  private readonly caches = new Map<string, FakeInformerCache>();

  informer(kind: string): FakeInformerCache {
    let cache = this.caches.get(kind);
    if (!cache) this.caches.set(kind, (cache = new FakeInformerCache(kind, this)));
    return cache;
  }

  /** Delivers every change since the last sync to the informer caches. */
  sync(): void {
    for (const cache of this.caches.values()) cache.sync();
  }

  writesSince(mark: number): WriteRecord[] {
    return this.writes.slice(mark);
  }

  /** Puts an object in place as if someone else had created it (no write recorded). */
  seed(object: KubeObject): KubeObject {
    const stored = this.stamp(structuredClone(object));
    this.objects.set(key(object.kind, object.metadata.namespace, object.metadata.name), stored);
    return stored;
  }

  get(kind: string, namespace: string, name: string): KubeObject | undefined {
    return this.objects.get(key(kind, namespace, name));
  }

  async read<T extends KubeObject = KubeObject>(ref: ObjectRef): Promise<T | undefined> {
    const found = this.objects.get(key(ref.kind, ref.namespace, ref.name));
    return found ? (structuredClone(found) as T) : undefined;
  }

  async create<T extends KubeObject>(object: T): Promise<T> {
    const k = key(object.kind, object.metadata.namespace, object.metadata.name);
    this.writes.push({ verb: 'create', kind: object.kind, name: object.metadata.name });
    if (this.objects.has(k)) throw apiError(409, `${object.kind} "${object.metadata.name}" already exists`);
    const stored = this.stamp(structuredClone(object));
    this.objects.set(k, stored);
    return structuredClone(stored) as T;
  }

  async replace<T extends KubeObject>(object: T): Promise<T> {
    return this.update(object, 'update', (current, next) => ({ ...next, status: current.status }));
  }

  async replaceStatus<T extends KubeObject>(object: T): Promise<T> {
    return this.update(object, 'update-status', (current, next) => ({ ...current, status: next.status }));
  }

  async delete(ref: ObjectRef, preconditions?: { uid?: string }): Promise<boolean> {
    const k = key(ref.kind, ref.namespace, ref.name);
    this.writes.push({ verb: 'delete', kind: ref.kind, name: ref.name });
    const current = this.objects.get(k);
    if (!current) return false;
    if (preconditions?.uid && preconditions.uid !== current.metadata.uid) throw apiError(409, 'uid precondition failed');
    if (current.metadata.finalizers?.length) {
      this.objects.set(k, this.stamp({ ...current, metadata: { ...current.metadata, deletionTimestamp: new Date() } }));
    } else {
      this.objects.delete(k);
    }
    return true;
  }

  private async update<T extends KubeObject>(object: T, verb: WriteRecord['verb'], apply: (current: KubeObject, next: KubeObject) => KubeObject): Promise<T> {
    const k = key(object.kind, object.metadata.namespace, object.metadata.name);
    this.writes.push({ verb, kind: object.kind, name: object.metadata.name });
    const current = this.objects.get(k);
    if (!current) throw apiError(404, 'not found');
    if (object.metadata.resourceVersion !== current.metadata.resourceVersion) throw apiError(409, 'the object has been modified');
    const next = apply(current, structuredClone(object));
    next.metadata = { ...next.metadata, uid: current.metadata.uid, generation: current.metadata.generation };
    if (verb === 'update' && JSON.stringify((next as { spec?: unknown }).spec) !== JSON.stringify((current as { spec?: unknown }).spec)) {
      next.metadata.generation = (current.metadata.generation ?? 1) + 1;
    }
    const stored = this.stamp(next);
    // A deleting object without finalizers left is gone.
    if (stored.metadata.deletionTimestamp && !stored.metadata.finalizers?.length) this.objects.delete(k);
    else this.objects.set(k, stored);
    return structuredClone(stored) as T;
  }

  private stamp(object: KubeObject): KubeObject {
    object.metadata = {
      ...object.metadata,
      uid: object.metadata.uid ?? `uid-${this.uidCounter++}`,
      generation: object.metadata.generation ?? 1,
      resourceVersion: String(this.revision++),
    };
    return object;
  }
}

/** An informer cache over the fake cluster that lags until sync(). */
export class FakeInformerCache implements CacheSource<KubeObject> {
  private readonly handlers: InformerHandler<KubeObject>[] = [];
  private view = new Map<string, KubeObject>();

  constructor(
    readonly kind: string,
    private readonly cluster: FakeCluster,
  ) {}

  on(handler: InformerHandler<KubeObject>): void {
    this.handlers.push(handler);
  }

  get(namespace: string | undefined, name: string): KubeObject | undefined {
    return this.view.get(key(this.kind, namespace, name));
  }

  list(namespace?: string): readonly KubeObject[] {
    return [...this.view.values()].filter((o) => namespace === undefined || o.metadata.namespace === namespace);
  }

  sync(): void {
    const next = new Map([...this.cluster.objects].filter(([k]) => k.startsWith(`${this.kind}/`)).map(([k, o]) => [k, structuredClone(o)]));
    for (const [k, object] of next) {
      const old = this.view.get(k);
      if (!old) this.emit(object, 'add');
      else if (old.metadata.resourceVersion !== object.metadata.resourceVersion) this.emit(object, 'update');
    }
    for (const [k, object] of this.view) if (!next.has(k)) this.emit(object, 'delete');
    this.view = next;
  }

  private emit(object: KubeObject, event: 'add' | 'update' | 'delete'): void {
    this.handlers.forEach((h) => h(object, event));
  }
}

export class RecordingEvents implements EventSink {
  readonly events: { type: EventType; reason: string; message: string; involved: string }[] = [];

  async record(involved: KubeObject, type: EventType, reason: string, message: string): Promise<void> {
    this.events.push({ type, reason, message, involved: `${involved.kind}/${involved.metadata.name}` });
  }
}

export const OWNED_KINDS = ['ConfigMap', 'ServiceAccount', 'Service', 'Deployment', 'NetworkPolicy', 'Role', 'RoleBinding', 'HorizontalPodAutoscaler', 'PodDisruptionBudget'];

/** A reconcile context wired to a fake cluster. */
export function fakeContext(cluster: FakeCluster, now = () => new Date('2025-01-01T00:00:00Z')): { ctx: ReconcileContext; events: RecordingEvents } {
  const environments = new MutationCache(cluster.informer('Environment'));
  const datasets = new MutationCache(cluster.informer('Dataset'));
  const owned = new Map(OWNED_KINDS.map((kind) => [kind, new MutationCache(cluster.informer(kind))] as const));
  const events = new RecordingEvents();
  return {
    events,
    ctx: {
      environments,
      datasets,
      owned,
      applier: new Applier(cluster, owned),
      environmentWriter: new ResourceWriter(cluster, environments),
      datasetWriter: new ResourceWriter(cluster, datasets),
      events,
      settings: DEFAULT_RENDER_SETTINGS,
      logger: pino({ level: 'silent' }),
      now,
    },
  };
}
