/**
 * A kind that exists only once its CRD is installed (the Prometheus Operator's PodMonitor): a watch
 * on that one CustomResourceDefinition (field selector on its name) starts an informer of the kind
 * when the CRD is established, and stops it when the CRD is deleted, so the operator picks up a CRD
 * installed after it started without a restart. Needs get/list/watch on customresourcedefinitions.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { Informer } from './informer.js';
import type { KubeObject, KubeObjectClient } from './object-client.js';

export interface OptionalKindOptions {
  kubeConfig: KubeConfig;
  client: KubeObjectClient;
  logger: Logger;
  crdName: string;
  /** Informer of the kind (namespace, label selector…), made when the CRD is established. */
  informer: () => Informer;
  /** The kind's informer has synced: its cache can be used. */
  onAvailable: (informer: Informer) => void;
  /** The CRD is gone (its objects with it). */
  onGone: () => void;
}

export function isEstablished(crd: KubeObject): boolean {
  const conditions = (crd.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ?? [];
  return conditions.some((c) => c.type === 'Established' && c.status === 'True');
}

export class OptionalKind {
  private readonly crds: Informer;
  private current?: Informer;

  constructor(private readonly options: OptionalKindOptions) {
    const { kubeConfig, client, logger, crdName } = options;
    this.crds = new Informer({
      kubeConfig,
      client,
      logger,
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      fieldSelector: `metadata.name=${crdName}`,
    });
    this.crds.on((crd, event) => {
      if (event === 'delete') void this.disable();
      else if (isEstablished(crd)) void this.enable();
    });
  }

  get available(): boolean {
    return this.current?.synced ?? false;
  }

  /**
   * Resolves once the CRD watch has synced. The kind's own informer syncs on its own time
   * (`onAvailable`): a kind the operator may not list (RBAC of an older chart) must not hold up
   * everything else.
   */
  async start(): Promise<void> {
    await this.crds.start();
  }

  async stop(): Promise<void> {
    await this.crds.stop();
    await this.current?.stop();
    this.current = undefined;
  }

  private async enable(): Promise<void> {
    if (this.current) return;
    const informer = this.options.informer();
    this.current = informer;
    this.options.logger.info({ crd: this.options.crdName }, 'CRD established: watching its objects');
    await informer.start();
    if (this.current === informer && informer.synced) this.options.onAvailable(informer);
  }

  private async disable(): Promise<void> {
    const informer = this.current;
    if (!informer) return;
    this.current = undefined;
    this.options.logger.info({ crd: this.options.crdName }, 'CRD deleted: no longer watching its objects');
    await informer.stop();
    this.options.onGone();
  }
}
