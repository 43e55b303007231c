/**
 * The data plane's Services: `E-internal`, the internal network load balancer of an environment of
 * type internal, and `E-api`, the public API gateway.
 */
import type { V1Service } from '@kubernetes/client-node';
import type { EnvironmentResource } from '../../../model/types.js';
import { COMPONENT, componentSelector, objectNames } from '../names.js';
import { dataplaneLabels } from './dataplane.js';
import { ownedMetadata, type OwnerRef } from './meta.js';
import { SERVICE_HTTP_PORT, type Rendered } from './types.js';

/** What the major clouds' load-balancer controllers read to keep a LoadBalancer off the internet. */
export const INTERNAL_LB_ANNOTATIONS: Readonly<Record<string, string>> = {
  'service.beta.kubernetes.io/aws-load-balancer-internal': 'true',
  'service.beta.kubernetes.io/aws-load-balancer-scheme': 'internal',
  'networking.gke.io/load-balancer-type': 'Internal',
  'service.beta.kubernetes.io/azure-load-balancer-internal': 'true',
};

type ServiceObject = Rendered<V1Service>;


export function renderInternalService(env: EnvironmentResource, owner: OwnerRef, namespace: string): ServiceObject {
  const name = env.metadata.name;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: ownedMetadata(objectNames.internalService(name), namespace, owner, dataplaneLabels(name), { ...INTERNAL_LB_ANNOTATIONS }),
    spec: {
      type: 'LoadBalancer',
      selector: componentSelector(name, COMPONENT.dataplane),
      ports: [SERVICE_HTTP_PORT],
    },
  };
}

export function renderApiService(env: EnvironmentResource, owner: OwnerRef, namespace: string): ServiceObject {
  const name = env.metadata.name;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: ownedMetadata(objectNames.apiService(name), namespace, owner, dataplaneLabels(name)),
    spec: {
      type: 'LoadBalancer',
      // Local keeps the client's address, so the firewall NetworkPolicy's ipBlocks see who is calling.
      externalTrafficPolicy: 'Local',
      selector: componentSelector(name, COMPONENT.dataplane),
      ports: [SERVICE_HTTP_PORT],
    },
  };
}
