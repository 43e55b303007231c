/**
 * The connection Secrets of an Environment's Datasets (and the Environment's own bulk-load S3
 * credentials Secret), as files in its data-plane container: one read-only `secret` volume per
 * distinct Secret (only the referenced keys; a `projected` volume when some keys are optional), mounted at
 * `SECRETS_MOUNT_ROOT/<name>`, so the data plane reads `<name>/<key>` below DAS_SECRETS_DIR
 * (model/secrets.ts). The kubelet reads the Secret and refreshes the files when it changes, so
 * neither the operator nor the data plane needs any RBAC on Secrets, and a rotated value needs no
 * restart.
 */
import type { V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import { DATASET_CONFIG_KEY } from '../../../model/configmaps.js';
import { CREDENTIALS_SECRET_KEYS, SECRETS_MOUNT_ROOT, SESSION_TOKEN_SECRET_KEY, secretDirPath, secretRefProblem, secretVolumeName } from '../../../model/secrets.js';
import type { SecretKeyRef } from '../../../model/types.js';

/** A Secret key to mount; `optional`: mounted only when the Secret has it (a session token), never keeping a Pod from starting. */
export interface MountedSecretRef extends SecretKeyRef {
  optional?: boolean;
}

/** The part of an Environment (resource or cached object) that names its bulk-load S3 credentials Secret. */
export interface WithBulkLoadSecret {
  spec?: { bulkLoad?: { s3?: { credentialsSecretRef?: { name?: unknown } } } };
}

/**
 * The keys of the Environment's `spec.bulkLoad.s3.credentialsSecretRef`: both access keys, and the
 * session token when the Secret has one (temporary credentials).
 */
export function environmentSecretRefs(env: WithBulkLoadSecret): MountedSecretRef[] {
  const name = env.spec?.bulkLoad?.s3?.credentialsSecretRef?.name;
  if (typeof name !== 'string') return [];
  return [...CREDENTIALS_SECRET_KEYS.map((key) => ({ name, key })), { name, key: SESSION_TOKEN_SECRET_KEY, optional: true }];
}

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

/** One ref per file; a key that any ref requires is required. */
function distinctRefs(refs: Iterable<MountedSecretRef>): MountedSecretRef[] {
  const byPath = new Map<string, MountedSecretRef>();
  for (const ref of refs) {
    if (secretRefProblem(ref)) continue;
    // name and key are separate path segments (neither holds "/"): one file per distinct ref.
    const path = `${ref.name}/${ref.key}`;
    const seen = byPath.get(path);
    const optional = ref.optional === true && (!seen || seen.optional === true);
    byPath.set(path, { name: ref.name, key: ref.key, ...(optional ? { optional: true } : {}) });
  }
  return [...byPath.values()].sort((a, b) => compare(a.name, b.name) || compare(a.key, b.key));
}

/** The refs grouped by Secret, in name order, each with its required and optional keys in order. */
function bySecret(refs: Iterable<MountedSecretRef>): [string, { required: string[]; optional: string[] }][] {
  const keys = new Map<string, { required: string[]; optional: string[] }>();
  for (const ref of distinctRefs(refs)) {
    const entry = keys.get(ref.name) ?? { required: [], optional: [] };
    (ref.optional ? entry.optional : entry.required).push(ref.key);
    keys.set(ref.name, entry);
  }
  return [...keys.entries()];
}

const items = (keys: string[]) => keys.map((key) => ({ key, path: key }));

/**
 * One volume per distinct Secret, projecting only the referenced keys. A missing Secret or
 * required key keeps new Pods from starting rather than serving without it. A `secret` volume
 * cannot make single keys optional, so a Secret with optional keys is a `projected` volume of two
 * sources of the same Secret: the required keys, and the optional ones (skipped when absent).
 */
export function secretVolumes(refs: Iterable<MountedSecretRef>): V1Volume[] {
  return bySecret(refs).map(([name, { required, optional }]): V1Volume => {
    if (!optional.length) return { name: secretVolumeName(name), secret: { secretName: name, items: items(required), defaultMode: SECRET_FILE_MODE, optional: false } };
    return {
      name: secretVolumeName(name),
      projected: {
        defaultMode: SECRET_FILE_MODE,
        sources: [
          ...(required.length ? [{ secret: { name, items: items(required), optional: false } }] : []),
          { secret: { name, items: items(optional), optional: true } },
        ],
      },
    };
  });
}

/** The read-only mounts of those volumes, at `SECRETS_MOUNT_ROOT/<name>`. */
export function secretVolumeMounts(refs: Iterable<MountedSecretRef>): V1VolumeMount[] {
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
