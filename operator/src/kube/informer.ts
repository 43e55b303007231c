/**
 * A list+watch cache of one kind, on client-node's ListWatch, that keeps itself alive: a failed
 * list or a broken watch is retried with exponential backoff (ListWatch alone stops on error).
 * A dropped watch resumes from the last resourceVersion; an expired one (410) re-lists, and objects
 * that vanished meanwhile are reported as deleted.
 */
import { KubeConfig, ListWatch, Watch } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { ExponentialBackoff } from './backoff.js';
import type { KubeObject, KubeObjectClient } from './object-client.js';

export type InformerEvent = 'add' | 'update' | 'delete';
export type InformerHandler<T> = (object: T, event: InformerEvent) => void;

export interface InformerOptions {
  kubeConfig: KubeConfig;
  client: KubeObjectClient;
  apiVersion: string;
  kind: string;
  /** Watch one namespace; all namespaces when undefined. */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  logger: Logger;
  retryBaseMs?: number;
  retryMaxMs?: number;
}

export class Informer<T extends KubeObject = KubeObject> {
  private listWatch?: ListWatch<T>;
  private readonly handlers: InformerHandler<T>[] = [];
  private readonly backoff: ExponentialBackoff;
  private retryTimer?: NodeJS.Timeout;
  private stopped = false;
  private failedSinceAttempt = false;
  private hasSynced = false;
  private resolveSynced!: () => void;
  private readonly syncedPromise = new Promise<void>((resolve) => (this.resolveSynced = resolve));

  constructor(private readonly options: InformerOptions) {
    this.backoff = new ExponentialBackoff(options.retryBaseMs ?? 500, options.retryMaxMs ?? 30_000);
  }

  get kind(): string {
    return this.options.kind;
  }

  get synced(): boolean {
    return this.hasSynced;
  }

  on(handler: InformerHandler<T>): void {
    this.handlers.push(handler);
  }

  /** Resolves once the initial list has been delivered to the handlers (retrying until then). */
  async start(): Promise<void> {
    this.stopped = false;
    void this.attempt();
    await Promise.race([this.syncedPromise, this.whenStopped()]);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    await this.listWatch?.stop();
    this.stopWaiters.forEach((resolve) => resolve());
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.listWatch?.get(name, namespace);
  }

  list(namespace?: string): readonly T[] {
    return this.listWatch?.list(namespace) ?? [];
  }

  private readonly stopWaiters: (() => void)[] = [];
  private whenStopped(): Promise<void> {
    return new Promise((resolve) => this.stopWaiters.push(resolve));
  }

  private async attempt(): Promise<void> {
    if (this.stopped) return;
    this.failedSinceAttempt = false;
    try {
      const listWatch = this.listWatch ?? (await this.createListWatch());
      await listWatch.start();
      if (!this.failedSinceAttempt && listWatch.latestResourceVersion()) {
        this.backoff.reset();
        if (!this.hasSynced) {
          this.hasSynced = true;
          this.resolveSynced();
        }
      }
    } catch (err) {
      this.onError(err);
    }
  }

  private async createListWatch(): Promise<ListWatch<T>> {
    const { client, apiVersion, kind, namespace, labelSelector, fieldSelector, kubeConfig } = this.options;
    const path = await client.collectionPath(apiVersion, kind, namespace);
    const list = () => client.list<T>(apiVersion, kind, namespace, labelSelector, fieldSelector);
    const listWatch = new ListWatch<T>(path, new Watch(kubeConfig), list, false, labelSelector, fieldSelector);
    listWatch.on('add', (object) => this.emit(object, 'add'));
    listWatch.on('update', (object) => this.emit(object, 'update'));
    listWatch.on('delete', (object) => this.emit(object, 'delete'));
    listWatch.on('error', (err) => this.onError(err));
    this.listWatch = listWatch;
    return listWatch;
  }

  private emit(object: T, event: InformerEvent): void {
    for (const handler of this.handlers) {
      try {
        handler(object, event);
      } catch (err) {
        this.options.logger.error({ err, kind: this.options.kind }, 'informer handler failed');
      }
    }
  }

  private onError(err: unknown): void {
    this.failedSinceAttempt = true;
    if (this.stopped || this.retryTimer) return;
    const delay = this.backoff.next();
    this.options.logger.warn(
      { kind: this.options.kind, err: err instanceof Error ? err.message : String(err), retryInMs: delay },
      'list/watch failed; retrying',
    );
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.attempt();
    }, delay);
  }
}
