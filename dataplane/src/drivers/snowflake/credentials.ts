/**
 * A warehouse dataset's login, from the Secret its `connectionSecretRef` names: the file
 * `<secretsDir>/<name>/<key>` (model/secrets.ts; the operator mounts it, DAS_SECRETS_DIR says
 * where) holds JSON `{"username", "password"}` or `{"username", "privateKey" (PEM), "passphrase"?}`.
 * It is read again at most every SECRET_RECHECK_MS, so a rotated Secret reaches new sessions
 * without a restart. A missing or malformed Secret is the store outcome `unavailable` (a 503 that
 * a retry gets past once the kubelet has mounted the file), with a message saying what is wrong.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { pathSegmentProblem, SECRET_RECHECK_MS, secretFilePath } from '../../../../model/secrets.js';
import type { DatasetConfig } from '../../../../model/types.js';
import { StoreError } from '../../engine/contract.js';
import { secretsDirOf, type DataPlaneSettings } from '../../../../model/settings/dataplane.js';

export type WarehouseCredentials = { username: string; password: string } | { username: string; privateKey: string; passphrase?: string };

export interface ResolvedCredentials {
  credentials: WarehouseCredentials;
  /** A digest of the credentials: sessions are pooled per login, and a rotated Secret gets new ones. */
  fingerprint: string;
}

const unavailable = (detail: string) => new StoreError({ kind: 'unavailable', detail });

/** The Secret's JSON as credentials, or why not (never echoing the secret itself). */
export function parseCredentials(text: string): WarehouseCredentials | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'is not JSON (expected {"username", "password"} or {"username", "privateKey", "passphrase"})';
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return 'is not a JSON object';
  const { username, password, privateKey, passphrase } = value as Record<string, unknown>;
  if (typeof username !== 'string' || !username) return 'has no "username" string';
  if (typeof privateKey === 'string' && privateKey) {
    if (passphrase !== undefined && typeof passphrase !== 'string') return '"passphrase" must be a string';
    return { username, privateKey, ...(passphrase ? { passphrase } : {}) };
  }
  if (typeof password === 'string' && password) return { username, password };
  return 'has neither a "privateKey" (PEM) nor a "password" string';
}

export class CredentialFiles {
  private readonly secretsDir: string;
  private readonly cache = new Map<string, { resolved: ResolvedCredentials; readAt: number }>();

  constructor(
    settings: Pick<DataPlaneSettings, 'DAS_SECRETS_DIR' | 'DATA_DIR'>,
    private readonly recheckMs = SECRET_RECHECK_MS,
    private readonly now: () => number = Date.now,
  ) {
    this.secretsDir = secretsDirOf(settings);
  }

  /** Throws StoreError `unavailable` when the Secret is missing or malformed. */
  credentialsFor(dataset: DatasetConfig): ResolvedCredentials {
    const ref = dataset.location.connectionSecretRef;
    if (!ref) throw unavailable(`dataset ${dataset.id}: a ${dataset.location.kind} location needs connectionSecretRef`);
    const problem = pathSegmentProblem(ref.name) ?? pathSegmentProblem(ref.key);
    if (problem) throw unavailable(`dataset ${dataset.id}: secret ${String(ref.name)}/${String(ref.key)} cannot be read: the name or key ${problem}`);
    const file = secretFilePath(this.secretsDir, ref);
    const cached = this.cache.get(file);
    const now = this.now();
    if (cached && now - cached.readAt < this.recheckMs) return cached.resolved;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      this.cache.delete(file);
      const code = (err as NodeJS.ErrnoException).code;
      throw unavailable(`dataset ${dataset.id}: secret ${ref.name}/${ref.key} is not mounted: expected file ${file}${code && code !== 'ENOENT' ? ` (${code})` : ''}`);
    }
    const credentials = parseCredentials(text);
    if (typeof credentials === 'string') {
      this.cache.delete(file);
      throw unavailable(`dataset ${dataset.id}: secret ${ref.name}/${ref.key} ${credentials}`);
    }
    const resolved = { credentials, fingerprint: createHash('sha256').update(JSON.stringify(credentials)).digest('base64url').slice(0, 16) };
    this.cache.set(file, { resolved, readAt: now });
    return resolved;
  }
}
