/**
 * The connection Secrets of an Environment's Datasets, as files in its data-plane container: one
 * read-only `secret` volume per distinct Secret (only the referenced keys), mounted at
 * `SECRETS_MOUNT_ROOT/<name>`, so the data plane reads `<name>/<key>` below DAS_SECRETS_DIR
 * (model/secrets.ts). The kubelet reads the Secret and refreshes the files when it changes, so
 * neither the operator nor the data plane needs any RBAC on Secrets, and a rotated value needs no
 * restart.
 */
import type { V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import { DATASET_CONFIG_KEY } from '../../../model/configmaps.js';
import { CREDENTIALS_SECRET_KEYS, SECRETS_MOUNT_ROOT, secretDirPath, secretRefProblem, secretVolumeName } from '../../../model/secrets.js';
import type { SecretKeyRef } from '../../../model/types.js';

/** The part of a Dataset (resource or cached object) that names its connection (or DynamoDB credentials) Secret. */
export interface WithConnectionSecret {
  spec?: { location?: { connectionSecretRef?: SecretKeyRef; credentialsSecretRef?: { name: string } } };
}

/** The Secret keys a location needs: its connection ref, and both keys of a DynamoDB credentials Secret. */
function locationRefs(location: NonNullable<WithConnectionSecret['spec']>['location']): SecretKeyRef[] {
  const refs: SecretKeyRef[] = location?.connectionSecretRef ? [location.connectionSecretRef] : [];
  const credentials = location?.credentialsSecretRef?.name;
  if (typeof credentials === 'string') refs.push(...CREDENTIALS_SECRET_KEYS.map((key) => ({ name: credentials, key })));
  return refs;
}

/**
 * Owner and group read (0440): files of a secret volume belong to root and the pod's fsGroup,
 * which the data-plane pod sets to its container's group, so the non-root process reads them
 * through the group and nobody else can.
 */
export const SECRET_FILE_MODE = 0o440;

/** Code-unit order, independent of the locale. */
const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The distinct connection Secret refs of these Datasets (the caller picks the Environment's),
 * sorted by name then key, whatever the order of the Datasets: the rendered Deployment must not
 * change when only that order does (a reconcile with nothing changed makes no write). A ref the
 * API server would refuse (a cached object that bypassed validation) is left out rather than
 * blocking the whole Deployment: that one Dataset then fails in the data plane ("secret … is not
 * mounted").
 */
export function datasetSecretRefs(datasets: Iterable<WithConnectionSecret>): SecretKeyRef[] {
  return distinctRefs([...datasets].flatMap((d) => locationRefs(d.spec?.location)));
}

function distinctRefs(refs: Iterable<SecretKeyRef>): SecretKeyRef[] {
  const byPath = new Map<string, SecretKeyRef>();
  for (const ref of refs) {
    if (secretRefProblem(ref)) continue;
    // name and key are separate path segments (neither holds "/"): one file per distinct ref.
    byPath.set(`${ref.name}/${ref.key}`, { name: ref.name, key: ref.key });
  }
  return [...byPath.values()].sort((a, b) => compare(a.name, b.name) || compare(a.key, b.key));
}

/** The refs grouped by Secret, in name order, each with its keys in order. */
function bySecret(refs: Iterable<SecretKeyRef>): [string, string[]][] {
  const keys = new Map<string, string[]>();
  for (const ref of distinctRefs(refs)) keys.set(ref.name, [...(keys.get(ref.name) ?? []), ref.key]);
  return [...keys.entries()];
}

/** One `secret` volume per distinct Secret, projecting only the referenced keys. */
export function secretVolumes(refs: Iterable<SecretKeyRef>): V1Volume[] {
  return bySecret(refs).map(([name, keys]) => ({
    name: secretVolumeName(name),
    secret: {
      secretName: name,
      items: keys.map((key) => ({ key, path: key })),
      defaultMode: SECRET_FILE_MODE,
      // A missing Secret or key keeps new Pods from starting rather than serving without it.
      optional: false,
    },
  }));
}

/** The read-only mounts of those volumes, at `SECRETS_MOUNT_ROOT/<name>`. */
export function secretVolumeMounts(refs: Iterable<SecretKeyRef>): V1VolumeMount[] {
  return bySecret(refs).map(([name]) => ({ name: secretVolumeName(name), mountPath: secretDirPath(SECRETS_MOUNT_ROOT, name), readOnly: true }));
}

/**
 * The Secret refs of the config a data plane was given for a Dataset (its published ConfigMap):
 * the connection Secret and a DynamoDB credentials Secret. An unreadable ConfigMap names none.
 */
export function publishedSecretRefs(configMap: { data?: Record<string, string> } | undefined): SecretKeyRef[] {
  const text = configMap?.data?.[DATASET_CONFIG_KEY];
  if (!text) return [];
  try {
    const location = (JSON.parse(text) as WithConnectionSecret['spec'])?.location;
    const connection = publishedSecretRef(configMap);
    return locationRefs({ ...(connection ? { connectionSecretRef: connection } : {}), ...(typeof location?.credentialsSecretRef?.name === 'string' ? { credentialsSecretRef: { name: location.credentialsSecretRef.name } } : {}) });
  } catch {
    return [];
  }
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
