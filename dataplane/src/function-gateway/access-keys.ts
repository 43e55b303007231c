/**
 * The function gateway's access keys for SigV4 callers (the Lambda Invoke API):
 * `spec.functionGateway.accessKeys: [{name, accessKeyId, secretRef: {name, key}}]`. `name` is the
 * caller's principal; the secret access key is the file `<DAS_SECRETS_DIR>/<secret>/<key>` (the
 * operator mounts the Secret there; locally `DATA_DIR/secrets/…`), read again at most every
 * SECRET_RECHECK_MS so that a rotated Secret reaches the next request without a restart.
 *
 * Where the list comes from (accessKeysFromEnv):
 *   DAS_ACCESS_KEYS   JSON array, as the operator renders it into the gateway's Deployment
 *   DAS_MANIFESTS     otherwise (files mode): the Environment there (DAS_ENVIRONMENT, else the first)
 *   neither           no access keys: every Lambda API call is refused (UnrecognizedClientException)
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadManifests } from '../../../model/manifests.js';
import { SECRET_RECHECK_MS, secretFilePath, secretRefProblem } from '../../../model/secrets.js';
import type { FunctionGatewayAccessKey } from '../../../model/types.js';
import { DATAPLANE_DEFAULTS, secretsDirOf, type DataPlaneSettings } from '../../../model/settings/dataplane.js';

/** The secret key of a configured access key cannot be read (not mounted, empty): a server-side problem. */
export class AccessKeyUnreadable extends Error {}

export interface AccessKeyStore {
  /** The key with this id: its principal and its secret (read from the mounted file), or undefined when no key has that id. */
  find(accessKeyId: string): { name: string; secret(): string } | undefined;
  readonly size: number;
}

/** Why `value` is not a list of access keys, or undefined. */
export function accessKeysProblem(value: unknown): string | undefined {
  if (!Array.isArray(value)) return 'must be a JSON array of {name, accessKeyId, secretRef: {name, key}}';
  const ids = new Set<string>();
  for (const [i, key] of value.entries()) {
    const k = key as Partial<FunctionGatewayAccessKey> | null;
    if (typeof k?.name !== 'string' || k.name === '') return `[${i}].name must be a non-empty string (the caller's principal)`;
    if (typeof k.accessKeyId !== 'string' || !/^[A-Za-z0-9_.+=@-]{1,128}$/.test(k.accessKeyId)) return `[${i}].accessKeyId must be 1 to 128 letters, digits or _.+=@-`;
    if (ids.has(k.accessKeyId)) return `[${i}].accessKeyId ${k.accessKeyId} is listed twice`;
    ids.add(k.accessKeyId);
    const problem = secretRefProblem(k.secretRef);
    if (problem) return `[${i}].secretRef: ${problem}`;
  }
  return undefined;
}

/** The configured keys (see the header); throws a one-line error the process refuses to start with. */
export function accessKeysFromEnv(env: Partial<Pick<DataPlaneSettings, 'DAS_ACCESS_KEYS' | 'DAS_MANIFESTS' | 'DAS_ENVIRONMENT'>>): FunctionGatewayAccessKey[] {
  if (env.DAS_ACCESS_KEYS !== undefined) {
    let keys: unknown;
    try {
      keys = JSON.parse(env.DAS_ACCESS_KEYS);
    } catch {
      throw new Error('DAS_ACCESS_KEYS must be a JSON array of {name, accessKeyId, secretRef: {name, key}}');
    }
    const problem = accessKeysProblem(keys);
    if (problem) throw new Error(`DAS_ACCESS_KEYS${problem.startsWith('[') ? '' : ' '}${problem}`);
    return keys as FunctionGatewayAccessKey[];
  }
  if (!env.DAS_MANIFESTS) return [];
  const path = resolve(env.DAS_MANIFESTS);
  const { environments } = loadManifests(path);
  const environment = env.DAS_ENVIRONMENT ? environments.find((e) => e.metadata.name === env.DAS_ENVIRONMENT) : environments[0];
  if (!environment) throw new Error(env.DAS_ENVIRONMENT ? `no Environment "${env.DAS_ENVIRONMENT}" in ${path}` : `no Environment in ${path}`);
  return environment.spec.functionGateway?.accessKeys ?? [];
}

export function accessKeyStore(keys: readonly FunctionGatewayAccessKey[], s: Partial<Pick<DataPlaneSettings, 'DAS_SECRETS_DIR' | 'DATA_DIR'>>, now: () => number = Date.now): AccessKeyStore {
  const root = secretsDirOf({ DAS_SECRETS_DIR: s.DAS_SECRETS_DIR, DATA_DIR: s.DATA_DIR ?? DATAPLANE_DEFAULTS.DATA_DIR });
  const byId = new Map(keys.map((k) => [k.accessKeyId, k]));
  const cache = new Map<string, { secret: string; readAt: number }>();
  const read = (key: FunctionGatewayAccessKey): string => {
    const file = secretFilePath(root, key.secretRef);
    const cached = cache.get(file);
    if (cached && now() - cached.readAt < SECRET_RECHECK_MS) return cached.secret;
    let secret = '';
    try {
      // `kubectl create secret --from-file` keeps a final newline: no secret key ends in white space.
      secret = readFileSync(file, 'utf8').trim();
    } catch (err) {
      cache.delete(file);
      throw new AccessKeyUnreadable(`the secret of access key ${key.accessKeyId} (${key.name}) cannot be read from ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    if (!secret) throw new AccessKeyUnreadable(`the secret of access key ${key.accessKeyId} (${key.name}) is empty: ${file}`);
    cache.set(file, { secret, readAt: now() });
    return secret;
  };
  return {
    size: byId.size,
    find(accessKeyId) {
      const key = byId.get(accessKeyId);
      return key && { name: key.name, secret: () => read(key) };
    },
  };
}
