/** Where a PostgreSQL dataset's connection settings come from. */
import type { DatasetConfig } from '../../../../model/types.js';

/**
 * A dataset with `location.connectionSecretRef` reads its URL from the environment variable the
 * data-plane Deployment mounts that Secret key as: `DAS_SECRET_<name>_<key>`, both as written
 * (`DAS_SECRET_orders-db_url`). Nothing is case-folded or replaced, so two refs never share a
 * variable: a Secret name cannot contain `_`, so the first `_` after the prefix ends it. Kubernetes
 * accepts `-` and `.` in variable names. Without a ref, the data plane's default database:
 * DATABASE_URL, else the standard PG* variables (pg reads them itself).
 */
export function secretEnvName(ref: { name: string; key: string }): string {
  return `DAS_SECRET_${ref.name}_${ref.key}`;
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
