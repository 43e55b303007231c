/**
 * The connection Secrets of an Environment's Datasets, as environment variables of its data-plane
 * container. Each `location.connectionSecretRef` becomes `DAS_SECRET_<name>_<key>` (the name the
 * data plane reads, `secretEnvName`) with `valueFrom.secretKeyRef`: the kubelet resolves it at Pod
 * start, so neither the operator nor the data plane needs any RBAC on Secrets.
 */
import type { V1EnvVar } from '@kubernetes/client-node';
import { secretEnvName } from '../../../dataplane/src/drivers/postgres/connection.js';
import { DATASET_CONFIG_KEY } from '../../../dataplane/src/config/sink.js';
import type { SecretKeyRef } from '../../../model/types.js';

/** The part of a Dataset (resource or cached object) that names its connection Secret. */
export interface WithConnectionSecret {
  spec?: { location?: { connectionSecretRef?: SecretKeyRef } };
}

/** Code-unit order, independent of the locale. */
const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** What the API server accepts as `secretKeyRef.key` (the Dataset CRD refuses anything else too). */
const SECRET_KEY = /^[-._a-zA-Z0-9]+$/;

/**
 * The distinct connection Secret refs of these Datasets (the caller picks the Environment's),
 * sorted, whatever the order of the Datasets: the rendered Deployment must not change when only
 * that order does (a reconcile with nothing changed makes no write). A ref the API server would
 * refuse (a cached object that bypassed validation) is left out rather than blocking the whole
 * Deployment: that one Dataset then fails in the data plane ("secret … is not mounted").
 */
export function datasetSecretRefs(datasets: Iterable<WithConnectionSecret>): SecretKeyRef[] {
  return distinctRefs([...datasets].flatMap((d) => d.spec?.location?.connectionSecretRef ?? []));
}

function distinctRefs(refs: Iterable<SecretKeyRef>): SecretKeyRef[] {
  const byEnvName = new Map<string, SecretKeyRef>();
  for (const ref of refs) {
    if (typeof ref?.name !== 'string' || typeof ref.key !== 'string' || !SECRET_KEY.test(ref.key)) continue;
    byEnvName.set(secretEnvName(ref), { name: ref.name, key: ref.key });
  }
  return [...byEnvName.entries()].sort(([a], [b]) => compare(a, b)).map(([, ref]) => ref);
}

/** One `secretKeyRef` variable per distinct ref, sorted by variable name. */
export function secretEnvVars(refs: Iterable<SecretKeyRef>): V1EnvVar[] {
  return distinctRefs(refs).map((ref) => ({
    name: secretEnvName(ref),
    valueFrom: { secretKeyRef: { name: ref.name, key: ref.key } },
  }));
}

/**
 * The connection Secret of the config a data plane was given for a Dataset (its published
 * ConfigMap), if any. An unreadable ConfigMap names none.
 */
export function publishedSecretRef(configMap: { data?: Record<string, string> } | undefined): SecretKeyRef | undefined {
  const text = configMap?.data?.[DATASET_CONFIG_KEY];
  if (!text) return undefined;
  try {
    const ref = (JSON.parse(text) as WithConnectionSecret['spec'])?.location?.connectionSecretRef;
    return typeof ref?.name === 'string' && typeof ref.key === 'string' ? { name: ref.name, key: ref.key } : undefined;
  } catch {
    return undefined;
  }
}
