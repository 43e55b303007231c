/**
 * Wires informers to the work queue and the queue to the reconcilers. Informer events become keys
 * (`Environment/ns/name`, `Dataset/ns/name`); workers take keys, reconcile, and requeue failures
 * with per-key exponential backoff. A periodic resync re-queues every custom resource.
 */
import { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { EventSink } from './kube/events.js';
import { Informer } from './kube/informer.js';
import { MutationCache } from './kube/mutation-cache.js';
import { statusCodeOf, type KubeObject, type KubeObjectClient } from './kube/object-client.js';
import type { OperatorMetrics } from './metrics.js';
import { API_GROUP_VERSION, LABELS, MANAGED_BY, objectKey, parseObjectKey, type PrimaryKind } from './names.js';
import { WorkQueue } from './queue/work-queue.js';
import { Applier, OwnershipConflictError, controllerOf } from './reconcile/applier.js';
import type { ReconcileContext, ReconcileResult } from './reconcile/context.js';
import { reconcileDataset } from './reconcile/dataset-reconciler.js';
import { reconcileEnvironment } from './reconcile/environment-reconciler.js';
import { inSpan } from '../../model/telemetry/tracing.js';
import { ResourceWriter } from './reconcile/resource-writer.js';
import type { RenderSettings } from './render/types.js';
import { OLDEST_CAPABILITIES, POD_MONITOR_API_VERSION, POD_MONITOR_CRD, type ClusterCapabilities } from './render/capabilities.js';
import { OptionalKind } from './kube/optional-kind.js';

/** The kinds the operator creates, watched through the managed-by label. */
const OWNED_KINDS: readonly { apiVersion: string; kind: string }[] = [
  { apiVersion: 'v1', kind: 'ConfigMap' },
  { apiVersion: 'v1', kind: 'ServiceAccount' },
  { apiVersion: 'v1', kind: 'Service' },
  { apiVersion: 'apps/v1', kind: 'Deployment' },
  { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy' },
  { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role' },
  { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding' },
];

/** Kinds whose served version depends on the cluster (see kube/discovery.ts). */
function versionedKinds(cluster: ClusterCapabilities): { apiVersion: string; kind: string }[] {
  return [
    { apiVersion: cluster.autoscaling, kind: 'HorizontalPodAutoscaler' },
    { apiVersion: cluster.policy, kind: 'PodDisruptionBudget' },
  ];
}

export interface ControllerOptions {
  kubeConfig: KubeConfig;
  client: KubeObjectClient;
  /** Watch one namespace; all namespaces when undefined. */
  namespace?: string;
  settings: RenderSettings;
  logger: Logger;
  metrics: OperatorMetrics;
  events: EventSink;
  workers?: number;
  resyncPeriodMs?: number;
  now?: () => Date;
  /** Served API versions (discovered at start); PodMonitor support is found by the controller itself. */
  cluster?: ClusterCapabilities;
}

export class Controller {
  readonly queue: WorkQueue;
  private readonly environments: Informer;
  private readonly datasets: Informer;
  private readonly owned: Informer[];
  /** PodMonitors, watched while their CRD exists. */
  private readonly podMonitors: OptionalKind;
  private readonly capabilities: ClusterCapabilities;
  private readonly context: ReconcileContext;
  private readonly workers: Promise<void>[] = [];
  private resyncTimer?: NodeJS.Timeout;
  /** uid and deletion state last seen per Environment: a change wakes its Datasets. */
  private readonly environmentIdentity = new Map<string, string>();
  /** Environment last seen per Dataset: a Dataset that moves wakes both Environments. */
  private readonly datasetEnvironment = new Map<string, string>();
  /** Keys of the running full resync not yet reconciled. */
  private resyncPending = new Set<string>();

  constructor(private readonly options: ControllerOptions) {
    const { metrics, logger, client, kubeConfig, namespace } = options;
    this.queue = new WorkQueue({ onDepthChange: (depth) => metrics.queueDepth.set(depth) });
    const informer = (apiVersion: string, kind: string, labelSelector?: string) =>
      new Informer({ kubeConfig, client, apiVersion, kind, namespace, labelSelector, logger });
    this.environments = informer(API_GROUP_VERSION, 'Environment');
    this.datasets = informer(API_GROUP_VERSION, 'Dataset');
    const managedBy = `${LABELS.managedBy}=${MANAGED_BY}`;
    this.capabilities = { ...(options.cluster ?? OLDEST_CAPABILITIES), podMonitors: false };
    this.owned = [...OWNED_KINDS, ...versionedKinds(this.capabilities)].map(({ apiVersion, kind }) => informer(apiVersion, kind, managedBy));

    const environments = new MutationCache(this.environments);
    const datasets = new MutationCache(this.datasets);
    const owned = new Map<string, MutationCache>(this.owned.map((i) => [i.kind, new MutationCache(i)] as const));
    this.podMonitors = new OptionalKind({
      kubeConfig,
      client,
      logger,
      crdName: POD_MONITOR_CRD,
      informer: () => informer(POD_MONITOR_API_VERSION, 'PodMonitor', managedBy),
      onAvailable: (podMonitors) => {
        owned.set(podMonitors.kind, new MutationCache(podMonitors));
        podMonitors.on((object) => this.onOwned(object));
        this.capabilities.podMonitors = true;
        this.requeueEnvironments();
      },
      onGone: () => {
        owned.delete('PodMonitor');
        this.capabilities.podMonitors = false;
        this.requeueEnvironments();
      },
    });
    this.context = {
      environments,
      datasets,
      owned,
      applier: new Applier(client, owned),
      clusterWriter: client,
      environmentWriter: new ResourceWriter(client, environments),
      datasetWriter: new ResourceWriter(client, datasets),
      events: options.events,
      settings: options.settings,
      capabilities: () => this.capabilities,
      logger,
      now: options.now ?? (() => new Date()),
    };

    this.environments.on((env, event) => this.onEnvironment(env, event));
    this.datasets.on((dataset, event) => this.onDataset(dataset, event));
    for (const i of this.owned) i.on((object) => this.onOwned(object));
  }

  /** Fills every cache, then starts the workers and the periodic resync. */
  async start(): Promise<void> {
    const { logger } = this.options;
    await Promise.all([this.environments, this.datasets, ...this.owned, this.podMonitors].map((i) => i.start()));
    logger.info({ namespace: this.options.namespace ?? '(all)' }, 'caches synced; reconciling');
    for (let i = 0; i < (this.options.workers ?? 4); i++) this.workers.push(this.work());
    const period = this.options.resyncPeriodMs ?? 10 * 60_000;
    if (period > 0) this.resyncTimer = setInterval(() => this.resync(), period);
  }

  /** Queues every Environment and Dataset (what a periodic resync does). Returns how many. */
  resync(): number {
    const keys = [
      ...this.environments.list().map((o) => keyFor('Environment', o)),
      ...this.datasets.list().map((o) => keyFor('Dataset', o)),
    ];
    this.resyncPending = new Set(keys);
    if (keys.length === 0) this.options.metrics.resyncsCompleted.inc();
    keys.forEach((key) => this.queue.add(key));
    this.options.logger.debug({ keys: keys.length }, 'resync');
    return keys.length;
  }

  /** Resolves when no key is queued or in process. */
  whenIdle(): Promise<void> {
    return this.queue.whenIdle();
  }

  /** Finishes the reconciles in process, then stops watching. */
  async stop(): Promise<void> {
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    this.queue.shutDown();
    await Promise.all(this.workers);
    await Promise.all([this.environments, this.datasets, ...this.owned, this.podMonitors].map((i) => i.stop()));
  }

  /** Every Environment once more: what they render depends on the cluster's kinds (PodMonitor). */
  private requeueEnvironments(): void {
    for (const env of this.environments.list()) this.queue.add(keyFor('Environment', env));
  }

  private async work(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      await this.process(key);
    }
  }

  private async process(key: string): Promise<void> {
    const { metrics, logger } = this.options;
    const { kind, namespace, name } = parseObjectKey(key);
    const endTimer = metrics.reconcileDuration.startTimer({ kind });
    try {
      const result: ReconcileResult =
        // One span per reconcile (a root span: a reconcile follows a watch event, not a request).
        await inSpan(`reconcile ${kind}`, () => ({ 'k8s.namespace.name': namespace, 'das.kind': kind, 'das.name': name }), () =>
          kind === 'Environment' ? reconcileEnvironment(this.context, namespace, name) : reconcileDataset(this.context, namespace, name),
        );
      this.queue.forget(key);
      metrics.reconciles.inc({ kind, result: 'success' });
      if (result.requeueAfterMs) this.queue.addAfter(key, result.requeueAfterMs);
    } catch (err) {
      metrics.reconciles.inc({ kind, result: 'error' });
      metrics.reconcileErrors.inc({ kind, reason: errorReason(err) });
      const retryInMs = this.queue.addRateLimited(key);
      logger.warn({ key, err: err instanceof Error ? err.message : String(err), retryInMs }, 'reconcile failed; requeued');
    } finally {
      endTimer();
      this.queue.done(key);
      if (this.resyncPending.delete(key) && this.resyncPending.size === 0) metrics.resyncsCompleted.inc();
    }
  }

  private onEnvironment(env: KubeObject, event: string): void {
    const key = keyFor('Environment', env);
    this.queue.add(key);
    const identity = `${env.metadata.uid}|${Boolean(env.metadata.deletionTimestamp)}`;
    const changed = event === 'delete' || this.environmentIdentity.get(key) !== identity;
    if (event === 'delete') this.environmentIdentity.delete(key);
    else this.environmentIdentity.set(key, identity);
    // Datasets wait for their Environment: wake them when it appears, goes, or is replaced.
    if (!changed) return;
    for (const dataset of this.datasets.list(env.metadata.namespace)) {
      if (environmentOf(dataset) === env.metadata.name) this.queue.add(keyFor('Dataset', dataset));
    }
  }

  private onDataset(dataset: KubeObject, event: string): void {
    const key = keyFor('Dataset', dataset);
    this.queue.add(key);
    const namespace = dataset.metadata.namespace ?? 'default';
    const environment = environmentOf(dataset);
    const previous = this.datasetEnvironment.get(key);
    if (event === 'delete') this.datasetEnvironment.delete(key);
    else if (environment) this.datasetEnvironment.set(key, environment);
    // The Environment's status counts its Datasets.
    for (const env of new Set([environment, previous])) {
      if (env) this.queue.add(objectKey('Environment', namespace, env));
    }
  }

  private onOwned(object: KubeObject): void {
    const owner = controllerOf(object);
    if (owner?.apiVersion !== API_GROUP_VERSION) return;
    if (owner.kind === 'Environment' || owner.kind === 'Dataset') {
      this.queue.add(objectKey(owner.kind, object.metadata.namespace ?? 'default', owner.name));
    }
  }
}

function keyFor(kind: PrimaryKind, object: KubeObject): string {
  return objectKey(kind, object.metadata.namespace ?? 'default', object.metadata.name);
}

function environmentOf(dataset: KubeObject): string | undefined {
  return (dataset.spec as { environment?: string } | undefined)?.environment;
}

function errorReason(err: unknown): string {
  if (err instanceof OwnershipConflictError) return 'ownership';
  const code = statusCodeOf(err);
  if (code === 409) return 'conflict';
  if (code !== undefined) return 'api';
  return 'internal';
}
