/**
 * Dataset → ConfigMap `E-dataset-D` with the rendered dataset config, owned by the Dataset.
 *
 * A Dataset whose spec is invalid in ways the CRD schema cannot express, or whose Environment does
 * not exist, is reported in status and left unapplied: its ConfigMap (if any) keeps the last valid
 * config. The finalizer removes the ConfigMap before the Dataset goes, so the data plane unloads it
 * at once; with `deletionPolicy: Delete` the ConfigMap is first marked so the data plane drops the
 * stored data too (Retain, the default, keeps it).
 */
import { checkDatasetSpec } from '../../../model/validate.js';
import type { DatasetResource, DatasetSpec } from '../../../model/types.js';
import type { KubeObject } from '../kube/object-client.js';
import { FINALIZER, PURGE_ANNOTATION, objectNames } from '../names.js';
import { renderDatasetObjects } from '../render/dataset.js';
import { isControlledBy } from './applier.js';
import { WAIT_REQUEUE_MS, applyOwned, failureOutcome, ownedCache, publishStatus, recordChange, type ReconcileContext, type ReconcileResult } from './context.js';
import { datasetStatus, type Outcome } from './status.js';
import { findCondition, type Condition } from './conditions.js';
import { publishedLocation, storageConflict, type DatasetView } from './storage-claims.js';

type DatasetObject = KubeObject & { spec: DatasetSpec };

export async function reconcileDataset(ctx: ReconcileContext, namespace: string, name: string): Promise<ReconcileResult> {
  const cached = ctx.datasets.get(namespace, name) as DatasetObject | undefined;
  if (!cached) return {};
  if (cached.metadata.deletionTimestamp) return finalizeDataset(ctx, cached);
  // The finalizer goes on before anything is created, so nothing can outlive the Dataset.
  const dataset = (await ctx.datasetWriter.addFinalizer(cached, FINALIZER)) as DatasetObject;

  let outcome: Outcome;
  let failure: unknown;
  let conflict: { dataset: string; message: string } | undefined;
  const problems = checkDatasetSpec(dataset.spec, '$.spec', name);
  const environment = problems.length ? undefined : ctx.environments.get(namespace, dataset.spec.environment);
  if (problems.length) {
    outcome = { kind: 'invalid', problems };
  } else if (!environment || environment.metadata.deletionTimestamp) {
    outcome = { kind: 'environment-missing', environment: dataset.spec.environment, namespace };
  } else if ((conflict = storageConflictOf(ctx, dataset))) {
    outcome = { kind: 'storage-in-use', ...conflict };
  } else {
    try {
      // Pruning ConfigMaps: after spec.environment changed, the one under the old name goes.
      outcome = await applyOwned(ctx, dataset, renderDatasetObjects(dataset as unknown as DatasetResource), ['ConfigMap']);
      if (outcome.kind === 'applied') outcome = retainedStorageOf(dataset) ?? outcome;
    } catch (err) {
      failure = err;
      outcome = failureOutcome(err);
    }
  }

  const published =
    outcome.kind === 'applied' ? objectNames.datasetConfigMap(dataset.spec.environment, name) : configMapsOf(ctx, dataset)[0]?.metadata.name;
  const status = datasetStatus(dataset, outcome, { configMap: published }, ctx.now());
  await publishStatus(ctx, ctx.datasetWriter, dataset, status);
  if (failure) throw failure;
  if (outcome.kind === 'storage-in-use') return { requeueAfterMs: STORAGE_RECHECK_MS };
  return outcome.kind === 'waiting' ? { requeueAfterMs: WAIT_REQUEUE_MS } : {};
}

/**
 * Published, but the data plane refuses to serve it: its storage holds a deleted dataset's retained
 * data. Only the data plane sees the storage; it says so in its own condition (StorageRetained,
 * dataplane/src/config/kube-status.ts), which counts for the generation it names.
 */
function retainedStorageOf(dataset: DatasetObject): Outcome | undefined {
  const reported = findCondition((dataset.status as { conditions?: Condition[] } | undefined)?.conditions, 'StorageRetained');
  if (reported?.status !== 'True' || reported.observedGeneration !== dataset.metadata.generation) return undefined;
  return { kind: 'storage-retained', message: reported.message };
}

/** Validity per cached object (a changed Dataset is a new object): every reconcile looks at all the namespace's Datasets. */
const validity = new WeakMap<object, boolean>();
function isValid(dataset: DatasetObject): boolean {
  let valid = validity.get(dataset);
  if (valid === undefined) validity.set(dataset, (valid = checkDatasetSpec(dataset.spec, '$.spec', dataset.metadata.name).length === 0));
  return valid;
}

/** A Dataset refused for its storage looks again this often: the holder may have moved or gone. */
const STORAGE_RECHECK_MS = 15_000;

/** The other live, valid Datasets of the namespace and what their ConfigMaps publish (storage-claims.ts decides). */
function storageConflictOf(ctx: ReconcileContext, dataset: DatasetObject) {
  const view = (d: DatasetObject): DatasetView => ({ name: d.metadata.name, spec: d.spec, published: publishedLocation(configMapsOf(ctx, d)[0] as { data?: Record<string, string> } | undefined) });
  const others = (ctx.datasets.list(dataset.metadata.namespace) as DatasetObject[])
    .filter((d) => d.metadata.name !== dataset.metadata.name && !d.metadata.deletionTimestamp && isValid(d))
    .map(view);
  return storageConflict(view(dataset), others);
}

async function finalizeDataset(ctx: ReconcileContext, dataset: DatasetObject): Promise<ReconcileResult> {
  if (!dataset.metadata.finalizers?.includes(FINALIZER)) return {};
  const policy = dataset.spec.deletionPolicy ?? 'Retain';
  for (const found of configMapsOf(ctx, dataset)) {
    const configMap = policy === 'Delete' ? await markForPurge(ctx, found) : found;
    const change = await ctx.applier.delete(configMap);
    const detail = policy === 'Delete' ? '; the data plane drops the stored data (deletionPolicy Delete)' : '; stored data is kept (deletionPolicy Retain)';
    if (change) await recordChange(ctx, dataset, change, detail);
  }
  await ctx.datasetWriter.removeFinalizer(dataset, FINALIZER);
  return {};
}

/** The data plane sees the annotation on the deleted ConfigMap's last state and purges the data. */
async function markForPurge(ctx: ReconcileContext, configMap: KubeObject): Promise<KubeObject> {
  if (configMap.metadata.annotations?.[PURGE_ANNOTATION] === 'true') return configMap;
  await ctx.applier.apply(
    {
      ...(configMap as KubeObject & { metadata: { namespace: string } }),
      metadata: {
        name: configMap.metadata.name,
        namespace: configMap.metadata.namespace ?? 'default',
        annotations: { [PURGE_ANNOTATION]: 'true' },
        ownerReferences: configMap.metadata.ownerReferences,
      },
    },
    configMap.metadata.ownerReferences?.find((r) => r.controller)?.uid ?? '',
  );
  return ownedCache(ctx, 'ConfigMap').get(configMap.metadata.namespace, configMap.metadata.name) ?? configMap;
}

function configMapsOf(ctx: ReconcileContext, dataset: DatasetObject): KubeObject[] {
  const uid = dataset.metadata.uid ?? '';
  return ownedCache(ctx, 'ConfigMap')
    .list(dataset.metadata.namespace)
    .filter((cm) => isControlledBy(cm, uid));
}
