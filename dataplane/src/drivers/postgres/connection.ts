/** Where a PostgreSQL dataset's connection settings come from. */
import type { DatasetConfig } from '../../../../model/types.js';

/**
 * A dataset with `location.connectionSecretRef` reads its URL from the environment variable the
 * data-plane Deployment mounts that Secret key as (`DAS_SECRET_<NAME>_<KEY>`, upper case, other
 * characters as `_`). Without one, the data plane's default database: DATABASE_URL, else the
 * standard PG* variables (pg reads them itself).
 */
export function secretEnvName(ref: { name: string; key: string }): string {
  return `DAS_SECRET_${ref.name}_${ref.key}`.toUpperCase().replace(/[^A-Z0-9_]/g, '_');
}

export function connectionStringFor(dataset: DatasetConfig, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const ref = dataset.location.connectionSecretRef;
  if (ref) {
    const value = env[secretEnvName(ref)];
    if (!value) throw new Error(`dataset ${dataset.id}: secret ${ref.name}/${ref.key} is not mounted (expected env ${secretEnvName(ref)})`);
    return value;
  }
  return env.DATABASE_URL || undefined;
}
