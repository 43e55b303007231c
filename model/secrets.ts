/**
 * Where a Dataset's connection Secret reaches the data plane: one file per referenced key,
 * `<secretsDir>/<secret name>/<key>`. The operator mounts each Secret as a `secret` volume at
 * `SECRETS_MOUNT_ROOT/<name>` and sets `DAS_SECRETS_DIR` to that root; locally the same layout
 * lives under `DATA_DIR/secrets`. Files, not environment variables: a shell entrypoint (`npm
 * start` runs through dash) drops variables whose names contain `-`, and the kubelet refreshes a
 * mounted Secret in place, so a rotated value is picked up without a restart.
 */
import { createHash } from 'node:crypto';
import type { SecretKeyRef } from './types.js';

/** The keys of a DynamoDB `credentialsSecretRef` Secret (docs/architecture.md "Location settings"). */
export const CREDENTIALS_SECRET_KEYS = ['accessKeyId', 'secretAccessKey'] as const;
/**
 * The optional key of the Environment's bulk-load S3 credentials Secret
 * (`spec.bulkLoad.s3.credentialsSecretRef`, which also holds CREDENTIALS_SECRET_KEYS): a session
 * token for temporary credentials, mounted when the Secret has it.
 */
export const SESSION_TOKEN_SECRET_KEY = 'sessionToken';

/** The environment variable naming the directory the Secrets are mounted under. */
export const SECRETS_DIR_ENV = 'DAS_SECRETS_DIR';
/** Where the operator mounts them in the data-plane container. */
export const SECRETS_MOUNT_ROOT = '/var/run/dataaccess/secrets';

/** A Secret's name as the CRD accepts it (a DNS-1123 subdomain). */
const SECRET_NAME = /^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/;
/** A Secret data key as the API server accepts it. */
const SECRET_KEY = /^[-._a-zA-Z0-9]+$/;

/**
 * Why `segment` cannot be one step of a path below the secrets directory, or undefined when it
 * can: never `.`/`..`, a separator or NUL, so `<name>/<key>` always names a file two levels below
 * the root and two refs never share one.
 */
export function pathSegmentProblem(segment: unknown): string | undefined {
  if (typeof segment !== 'string' || segment === '') return 'is empty';
  if (segment === '.' || segment === '..') return `"${segment}" is not a file name`;
  if (/[/\\\0]/.test(segment)) return 'contains "/", "\\" or NUL';
  return undefined;
}

/**
 * Why the API server would refuse this ref in a Deployment's secret volume, or undefined:
 * the name a DNS-1123 subdomain, the key a Secret data key (not `.`, not starting with `..`).
 */
export function secretRefProblem(ref: { name?: unknown; key?: unknown } | undefined): string | undefined {
  const { name, key } = ref ?? {};
  if (typeof name !== 'string' || name.length > 253 || !SECRET_NAME.test(name)) return `secret name ${JSON.stringify(name)} is not a valid Secret name`;
  if (typeof key !== 'string' || key.length > 253 || !SECRET_KEY.test(key) || key === '.' || key.startsWith('..'))
    return `key ${JSON.stringify(key)} is not a valid Secret key`;
  return undefined;
}

/** The directory a Secret is mounted at, below `root`. */
export function secretDirPath(root: string, name: string): string {
  return `${root.replace(/\/+$/, '')}/${name}`;
}

/** How long a value read from a Secret file is used before the file is read again (the kubelet rewrites mounted Secrets in place). */
export const SECRET_RECHECK_MS = 2000;

/** The file holding a ref's value, below `root` (the data plane's DAS_SECRETS_DIR). */
export function secretFilePath(root: string, ref: SecretKeyRef): string {
  return `${secretDirPath(root, ref.name)}/${ref.key}`;
}

/**
 * The pod volume of a Secret: a DNS label (≤ 63 characters) whatever the Secret's name (up to 253),
 * derived from the name alone so that the rendering is deterministic; 64 bits of SHA-256 keep two
 * Secrets of one pod apart.
 */
export function secretVolumeName(name: string): string {
  return `secret-${createHash('sha256').update(name).digest('hex').slice(0, 16)}`;
}
