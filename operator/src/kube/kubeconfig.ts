/**
 * Where the operator finds its cluster: KUBECONFIG, ~/.kube/config, or the Pod's service account.
 * client-node falls back to http://localhost:8080 when there is none, which is rarely an API server
 * (in the README's own setup it is the data plane): the operator refuses to start instead.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { ConfigError } from '../config.js';
import type { OperatorSettings } from '../../../model/settings/operator.js';

/** The variables that say where the cluster is. */
export type ClusterSettings = Partial<Pick<OperatorSettings, 'KUBECONFIG' | 'KUBERNETES_SERVICE_HOST' | 'KUBERNETES_SERVICE_PORT'>>;

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export const NO_CLUSTER_MESSAGE =
  'no cluster: set KUBECONFIG to a kubeconfig file (or put one at ~/.kube/config), or run the operator in a Pod with a service account';

/** Undefined when a cluster source exists; else why not. */
export function missingClusterSource(env: ClusterSettings, exists: (path: string) => boolean = existsSync, home = homedir()): string | undefined {
  if (env.KUBECONFIG) {
    // A list like PATH (kubectl skips the missing ones); none there is a typo, not an empty config.
    const files = env.KUBECONFIG.split(delimiter).filter(Boolean);
    if (files.some((file) => exists(file))) return undefined;
    return `KUBECONFIG names ${files.length === 1 ? `${files[0]}, which does not exist` : `${files.join(', ')}, none of which exists`}: point it at a kubeconfig file (kubectl config view --raw > <file>), or unset it`;
  }
  if (home && exists(join(home, '.kube', 'config'))) return undefined;
  if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT && exists(SERVICE_ACCOUNT_TOKEN)) return undefined;
  return NO_CLUSTER_MESSAGE;
}

export function loadKubeConfig(env: ClusterSettings): KubeConfig {
  const problem = missingClusterSource(env);
  if (problem) throw new ConfigError(problem);
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromDefault();
  return kubeConfig;
}
