/**
 * The administrative API in a cluster: `/_admin/datasets` writes Dataset custom resources in the
 * data plane's namespace through the Kubernetes API (the operator renders a Role that lets the
 * data plane's ServiceAccount get, list, create, patch and delete Datasets there, and nothing
 * else), so the operator stays the one writer of everything a Dataset renders into. Only Datasets
 * of this Environment are listed or changed.
 */
import { CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { DatasetConfig, DatasetSpec, EnvironmentConfig } from '../../../model/types.js';
import type { Caller } from '../auth/caller.js';
import type { ConfigStore } from '../config/store.js';
import { ApiError } from '../engine/errors.js';
import { checkNewDataset, storeClaims, type AdminSettings } from './admin-checks.js';
import { adminRoute, authenticateAdmin, datasetManifest, notFound, type AdminRequest } from './files-admin.js';

const GROUP = 'dataaccess.dev';
const VERSION = 'v1alpha1';
const PLURAL = 'datasets';

type DatasetObject = { metadata: { name: string; generation?: number }; spec: { environment?: string; paused?: boolean; location?: DatasetSpec['location'] }; status?: { conditions?: { type: string; status: string; reason: string }[] } };

export class KubeAdmin {
  private readonly api: CustomObjectsApi;

  constructor(
    private readonly namespace: string,
    private readonly store: ConfigStore,
    kubeConfig?: KubeConfig,
    private readonly settings: AdminSettings = {},
  ) {
    const config = kubeConfig ?? new KubeConfig();
    if (!kubeConfig) config.loadFromDefault();
    this.api = config.makeApiClient(CustomObjectsApi);
  }

  authenticate(authkind: string, env: EnvironmentConfig, iam: (admins: DatasetConfig) => Promise<Caller>): Promise<void> {
    return authenticateAdmin(authkind, env, iam);
  }

  async handle(request: AdminRequest, env: EnvironmentConfig): Promise<{ status: number; body: unknown }> {
    const route = adminRoute(request);
    const ref = { group: GROUP, version: VERSION, namespace: this.namespace, plural: PLURAL };
    try {
      switch (route.kind) {
        case 'list': {
          const list = (await this.api.listNamespacedCustomObject(ref)) as { items: DatasetObject[] };
          const items = list.items.filter((d) => d.spec.environment === env.id).map((d) => this.describe(d));
          return { status: 200, body: { items: items.sort((a, b) => (a.id < b.id ? -1 : 1)) } };
        }
        case 'create': {
          const { name, manifest } = datasetManifest(request.body, env);
          // Every Dataset of the namespace, whatever its Environment: they may share a database (the operator applies the same rule).
          const existing = (await this.api.listNamespacedCustomObject(ref)) as { items: DatasetObject[] };
          const claims = existing.items.flatMap((d) => (d.spec.location ? [{ id: d.metadata.name, location: d.spec.location }] : []));
          await checkNewDataset(name, manifest.spec as unknown as DatasetSpec, [...claims, ...storeClaims(this.store)], this.store, this.settings);
          await this.api.createNamespacedCustomObject({ ...ref, body: manifest });
          return { status: 201, body: { id: name, status: 'pending', managed: true } };
        }
        case 'get':
          return { status: 200, body: this.describe(await this.get(route.id, env)) };
        case 'delete':
          await this.get(route.id, env);
          await this.api.deleteNamespacedCustomObject({ ...ref, name: route.id });
          return { status: 200, body: { id: route.id, deleted: true } };
        default: {
          await this.get(route.id, env);
          const paused = route.kind === 'pause';
          // A merge patch: null removes the field on resume.
          await this.api.patchNamespacedCustomObject({ ...ref, name: route.id, body: { spec: { paused: paused ? true : null } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
          return { status: 200, body: { id: route.id, paused } };
        }
      }
    } catch (err) {
      const code = (err as { code?: number }).code;
      if (code === 409) throw new ApiError(409, 'DATASET_EXISTS', `a Dataset with that name exists in namespace "${this.namespace}"`);
      if (code === 404) throw notFound('id' in route ? route.id : '');
      if (code === 403) throw new ApiError(503, 'ADMIN_NOT_PERMITTED', 'the data plane may not change Datasets: its Role lacks the permission (does the Environment list admin principals?)', [], 30);
      if (code === 422) throw new ApiError(400, 'INVALID_MANIFEST', `the Kubernetes API refused the Dataset: ${String((err as { body?: unknown }).body).slice(0, 500)}`);
      throw err;
    }
  }

  private async get(id: string, env: EnvironmentConfig): Promise<DatasetObject> {
    const dataset = (await this.api.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: this.namespace, plural: PLURAL, name: id })) as DatasetObject;
    if (dataset.spec.environment !== env.id) throw notFound(id);
    return dataset;
  }

  private describe(dataset: DatasetObject) {
    const id = dataset.metadata.name;
    const state = this.store.dataset(id);
    const ready = dataset.status?.conditions?.find((c) => c.type === 'Ready');
    return {
      id,
      status: state ? state.status : 'pending',
      paused: dataset.spec.paused === true,
      managed: true,
      ...(dataset.metadata.generation ? { generation: dataset.metadata.generation } : {}),
      ...(ready ? { ready: { status: ready.status, reason: ready.reason } } : {}),
    };
  }
}
