/**
 * Names, labels and annotations of everything the operator creates (docs/architecture.md "Kubernetes names").
 * The ConfigMap conventions are shared with the data plane and live in model/configmaps.ts.
 */
import { API_GROUP, API_GROUP_VERSION } from '../../model/types.js';
import { functionGatewayName } from '../../model/render.js';
import {
  CONFIGMAP_LABELS,
  MANAGED_BY,
  datasetConfigMapName,
  environmentConfigMapName,
} from '../../model/configmaps.js';

export { API_GROUP_VERSION, MANAGED_BY };

export const OPERATOR_NAME = 'data-access-operator';
export const FINALIZER = `${API_GROUP}/finalizer`;
/** Set on a dataset ConfigMap just before the finalizer deletes it, when the Dataset's policy is Delete. */
export { PURGE_ANNOTATION } from '../../model/configmaps.js';

export const LABELS = {
  ...CONFIGMAP_LABELS,
  name: 'app.kubernetes.io/name',
  component: 'app.kubernetes.io/component',
  instance: 'app.kubernetes.io/instance',
} as const;

export const COMPONENT = {
  dataplane: 'dataplane',
  functionGateway: 'function-gateway',
} as const;

export const objectNames = {
  dataplane: (env: string) => `${env}-dataplane`,
  internalService: (env: string) => `${env}-internal`,
  apiService: (env: string) => `${env}-api`,
  firewall: (env: string) => `${env}-firewall`,
  functionGateway: functionGatewayName,
  environmentConfigMap: environmentConfigMapName,
  datasetConfigMap: datasetConfigMapName,
};

/** Labels every object owned by Environment `env` carries. */
export function environmentLabels(env: string): Record<string, string> {
  return { [LABELS.managedBy]: MANAGED_BY, [LABELS.environment]: env };
}

/** The labels of one component's objects: the environment's, plus app name, instance and component. */
export function componentLabels(env: string, appName: string, component: string): Record<string, string> {
  return { ...environmentLabels(env), [LABELS.name]: appName, [LABELS.instance]: env, [LABELS.component]: component };
}

/** Selects the pods of one component of one environment (stable: Deployment selectors are immutable). */
export function componentSelector(env: string, component: string): Record<string, string> {
  return { [LABELS.environment]: env, [LABELS.component]: component };
}

/** Queue keys: `Kind/namespace/name`. */
export type PrimaryKind = 'Environment' | 'Dataset';
export function objectKey(kind: PrimaryKind, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`;
}
export function parseObjectKey(key: string): { kind: PrimaryKind; namespace: string; name: string } {
  const [kind, namespace, name] = key.split('/');
  if ((kind !== 'Environment' && kind !== 'Dataset') || !namespace || !name) throw new Error(`malformed queue key ${key}`);
  return { kind, namespace, name };
}
