/** `E-firewall`: the API gateway firewall as an Ingress NetworkPolicy on the data-plane pods. */
import type { V1NetworkPolicyPeer, V1NetworkPolicyPort, V1NetworkPolicySpec } from '@kubernetes/client-node';
import type { EnvironmentResource } from '../../../model/types.js';
import { COMPONENT, componentSelector, environmentLabels, objectNames } from '../names.js';
import { firewallIpBlocks } from './cidr-math.js';
import { ownedMetadata, type OwnerRef } from './meta.js';
import { HTTP_PORT, type Rendered } from './types.js';

/** client-node's model calls `from` `_from`; the operator writes the API's JSON, so spell it out. */
interface IngressRule {
  from: V1NetworkPolicyPeer[];
  ports: V1NetworkPolicyPort[];
}
type NetworkPolicyObject = Rendered<{ spec: Omit<V1NetworkPolicySpec, 'ingress'> & { ingress: IngressRule[] } }>;

export function renderFirewall(env: EnvironmentResource, owner: OwnerRef, namespace: string): NetworkPolicyObject {
  const name = env.metadata.name;
  const addresses = env.spec.gateways?.api?.firewall?.ipAddresses ?? {};
  const blocks = firewallIpBlocks(addresses.allowed ?? [], addresses.blocked ?? []);
  const ports = [{ protocol: 'TCP', port: HTTP_PORT }];
  const ingress: IngressRule[] = [];
  // A rule without `from` admits everyone, so no admissible address means no address rule at all.
  // `ingress` is rendered even when empty, so that removing the last rule is seen as a change.
  if (blocks.length) ingress.push({ from: blocks.map((ipBlock) => ({ ipBlock })), ports });
  // The function gateway calls the data plane from inside the cluster; its pods are not addresses
  // the firewall speaks about.
  if (env.spec.functionGateway?.enabled !== false) {
    ingress.push({ from: [{ podSelector: { matchLabels: componentSelector(name, COMPONENT.functionGateway) } }], ports });
  }
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: ownedMetadata(objectNames.firewall(name), namespace, owner, environmentLabels(name)),
    spec: {
      podSelector: { matchLabels: componentSelector(name, COMPONENT.dataplane) },
      policyTypes: ['Ingress'],
      ingress,
    },
  };
}
