/**
 * Where a PostgreSQL dataset's connection settings come from.
 *
 * A dataset with `location.connectionSecretRef: {name, key}` reads its URL from the file
 * `<secretsDir>/<name>/<key>` (model/secrets.ts): in a cluster the operator mounts the Secret there
 * and sets DAS_SECRETS_DIR; locally the directory defaults to `DATA_DIR/secrets`. The file is read
 * again at most every SECRET_RECHECK_MS, so a rotated value (the kubelet rewrites mounted Secrets
 * in place) reaches new connections without a restart. Without a ref, the data plane's default
 * database: DATABASE_URL, else the standard PG* variables (pg reads them itself).
 */
import { readFileSync } from 'node:fs';
import { pathSegmentProblem, SECRET_RECHECK_MS, secretFilePath } from '../../../../model/secrets.js';
import { secretsDirOf, type DataPlaneSettings } from '../../../../model/settings/dataplane.js';
import type { DatasetConfig } from '../../../../model/types.js';

/** The Secret file of a dataset is missing or unusable: that dataset cannot be served. */
export class SecretNotMountedError extends Error {
  override readonly name = 'SecretNotMountedError';
}

/** Resolves datasets' connection URLs; one per driver, so its short cache is the driver's. */
export class ConnectionUrls {
  private readonly secretsDir: string;
  private readonly cache = new Map<string, { url: string; readAt: number }>();

  constructor(
    private readonly settings: Pick<DataPlaneSettings, 'DAS_SECRETS_DIR' | 'DATA_DIR' | 'DATABASE_URL'>,
    private readonly recheckMs = SECRET_RECHECK_MS,
    private readonly now: () => number = Date.now,
  ) {
    this.secretsDir = secretsDirOf(settings);
  }

  /** The dataset's URL, or undefined for pg's own defaults (PG* variables). Synchronous: called per statement, mostly from the cache. */
  urlFor(dataset: DatasetConfig): string | undefined {
    const ref = dataset.location.connectionSecretRef;
    if (!ref) return this.settings.DATABASE_URL || undefined;
    // The model already restricts both; refused here too, so no ref can name a file outside its Secret's directory.
    const problem = pathSegmentProblem(ref.name) ?? pathSegmentProblem(ref.key);
    if (problem) throw new SecretNotMountedError(`dataset ${dataset.id}: secret ${String(ref.name)}/${String(ref.key)} cannot be read: the name or key ${problem}`);
    const file = secretFilePath(this.secretsDir, ref);
    const cached = this.cache.get(file);
    const now = this.now();
    if (cached && now - cached.readAt < this.recheckMs) return cached.url;
    let url: string;
    try {
      // `kubectl create secret --from-file` keeps the file's final newline: no URL ends in white space.
      url = readFileSync(file, 'utf8').trim();
    } catch (err) {
      this.cache.delete(file);
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') throw new SecretNotMountedError(`dataset ${dataset.id}: secret ${ref.name}/${ref.key} is not mounted: expected file ${file}`);
      throw new SecretNotMountedError(`dataset ${dataset.id}: secret ${ref.name}/${ref.key} cannot be read from ${file}: ${code ?? (err as Error).message}`);
    }
    if (!url) {
      this.cache.delete(file);
      throw new SecretNotMountedError(`dataset ${dataset.id}: secret ${ref.name}/${ref.key} is empty: file ${file}`);
    }
    this.cache.set(file, { url, readAt: now });
    return url;
  }
}

/** How often the driver looks whether a pool whose URL was rotated away has finished its work. */
export const POOL_RETIRE_CHECK_MS = 1000;
