/** Pod-level settings shared by the data plane and the function gateway. */
import type { V1Container, V1PodSecurityContext, V1SecurityContext, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import { HTTP_PORT } from './types.js';

export const podSecurityContext: V1PodSecurityContext = {
  runAsNonRoot: true,
  seccompProfile: { type: 'RuntimeDefault' },
};

export const containerSecurityContext: V1SecurityContext = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ['ALL'] },
};

/** A read-only root filesystem still needs a scratch /tmp (tsx and Node write there). */
export const scratchVolumes: V1Volume[] = [{ name: 'tmp', emptyDir: {} }];
export const scratchMounts: V1VolumeMount[] = [{ name: 'tmp', mountPath: '/tmp' }];

export function httpProbes(): Pick<V1Container, 'readinessProbe' | 'livenessProbe' | 'ports'> {
  return {
    ports: [{ name: 'http', containerPort: HTTP_PORT, protocol: 'TCP' }],
    readinessProbe: { httpGet: { path: '/readyz', port: 'http' }, periodSeconds: 5, failureThreshold: 3 },
    livenessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 10, failureThreshold: 6 },
  };
}
