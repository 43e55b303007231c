/**
 * In a cluster, the data plane tells a Dataset what only the data plane can know: that its storage
 * holds another (deleted, deletionPolicy Retain) dataset's data, so it is not served
 * (config/ownership.ts). It owns one condition type on the Dataset's status, `StorageRetained`,
 * written by server-side apply under its own field manager; the operator keeps that condition and
 * turns a True one for the current generation into `Degraded` (reason StorageRetained). Every
 * replica reads the same marker and so writes the same condition; a write happens only when the
 * condition differs from what the Dataset shows.
 */
import { CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { API_GROUP_VERSION, STORAGE_RETAINED_CONDITION } from '../../../model/types.js';

const [GROUP, VERSION] = API_GROUP_VERSION.split('/');
const FIELD_MANAGER = 'data-access-dataplane';

/** The verdict for one dataset generation: retained (naming the owner) or its own. */
export interface StorageVerdict {
  generation: number;
  /** The deleted dataset whose data the storage holds; undefined when the dataset was served. */
  owner?: string;
  message?: string;
}

type Condition = { type: string; status: string; observedGeneration?: number; lastTransitionTime?: string; reason: string; message: string };

/** The condition for a verdict. Pure. */
export function storageRetainedCondition(verdict: StorageVerdict): Omit<Condition, 'lastTransitionTime'> {
  return verdict.owner
    ? { type: STORAGE_RETAINED_CONDITION, status: 'True', observedGeneration: verdict.generation, reason: 'StorageRetained', message: verdict.message ?? `storage holds the data of dataset "${verdict.owner}"` }
    : { type: STORAGE_RETAINED_CONDITION, status: 'False', observedGeneration: verdict.generation, reason: 'OwnStorage', message: 'The storage holds no other dataset\'s retained data.' };
}

export class DatasetStatusReporter {
  private readonly api: CustomObjectsApi;
  /** One write at a time per dataset, in verdict order. */
  private readonly chains = new Map<string, Promise<void>>();

  constructor(
    private readonly namespace: string,
    private readonly logger: Logger,
    kubeConfig?: KubeConfig,
  ) {
    const config = kubeConfig ?? new KubeConfig();
    if (!kubeConfig) config.loadFromDefault();
    this.api = config.makeApiClient(CustomObjectsApi);
  }

  /** Reports the verdict on Dataset `id`; a failure is logged, never thrown (the next verdict tries again). */
  report(id: string, verdict: StorageVerdict): Promise<void> {
    const chain = (this.chains.get(id) ?? Promise.resolve()).then(() =>
      this.write(id, verdict).catch((err) => this.logger.warn({ dataset: id, err: (err as Error).message }, 'could not report the StorageRetained condition on the Dataset')),
    );
    this.chains.set(id, chain);
    return chain;
  }

  private async write(id: string, verdict: StorageVerdict): Promise<void> {
    const ref = { group: GROUP, version: VERSION, namespace: this.namespace, plural: 'datasets', name: id };
    let current: { status?: { conditions?: Condition[] } };
    try {
      current = (await this.api.getNamespacedCustomObjectStatus(ref)) as typeof current;
    } catch (err) {
      if ((err as { code?: number }).code === 404) return; // a ConfigMap without its Dataset (deleted meanwhile)
      throw err;
    }
    const shown = current.status?.conditions?.find((c) => c.type === STORAGE_RETAINED_CONDITION);
    const wanted = storageRetainedCondition(verdict);
    // Nothing to clear on a Dataset that never showed the condition.
    if (!shown && wanted.status === 'False') return;
    if (shown && shown.status === wanted.status && shown.reason === wanted.reason && shown.message === wanted.message && shown.observedGeneration === wanted.observedGeneration) return;
    const lastTransitionTime = shown && shown.status === wanted.status && shown.lastTransitionTime ? shown.lastTransitionTime : new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    const body = { apiVersion: API_GROUP_VERSION, kind: 'Dataset', metadata: { name: id }, status: { conditions: [{ ...wanted, lastTransitionTime }] } };
    await this.api.patchNamespacedCustomObjectStatus({ ...ref, body, fieldManager: FIELD_MANAGER, force: true }, setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply));
    this.logger.info({ dataset: id, condition: wanted }, 'reported StorageRetained on the Dataset');
  }
}
