/**
 * The import root of `file://` bulk loads in a cluster: the PersistentVolumeClaim the Environment
 * names in `spec.bulkLoad.imports`, mounted read-only into the data plane (a load only reads its
 * files) outside the DATA_DIR emptyDir, and named to the data plane by DAS_IMPORT_ROOT. Only a
 * PVC: the Environment cannot ask for hostPath or any other volume type.
 */
import type { V1EnvVar, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import type { EnvironmentResource } from '../../../model/types.js';

export const IMPORTS_VOLUME = 'imports';
export const IMPORTS_MOUNT_PATH = '/var/lib/data-access-imports';
/** The data plane's variable for the import root (DAS_IMPORT_ROOT in model/settings/dataplane.ts). */
export const IMPORT_ROOT_ENV = 'DAS_IMPORT_ROOT';

export interface ImportsParts {
  volumes: V1Volume[];
  volumeMounts: V1VolumeMount[];
  env: V1EnvVar[];
}

/** The volume, mount and env for the Environment's imports claim; all empty without one. */
export function importsParts(env: EnvironmentResource): ImportsParts {
  const imports = env.spec.bulkLoad?.imports;
  if (!imports) return { volumes: [], volumeMounts: [], env: [] };
  return {
    volumes: [{ name: IMPORTS_VOLUME, persistentVolumeClaim: { claimName: imports.claimName, readOnly: true } }],
    volumeMounts: [{ name: IMPORTS_VOLUME, mountPath: IMPORTS_MOUNT_PATH, readOnly: true, ...(imports.subPath ? { subPath: imports.subPath } : {}) }],
    env: [{ name: IMPORT_ROOT_ENV, value: IMPORTS_MOUNT_PATH }],
  };
}
