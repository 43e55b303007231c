/**
 * `E-firewall`: the API gateway firewall as an Ingress NetworkPolicy on the data-plane pods; the
 * function gateway's pods get the same address rules in a policy of their own.
 */
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

const ports = [{ protocol: 'TCP', port: HTTP_PORT }];

/**
 * The firewall's address rules. A rule without `from` admits everyone, so no admissible address
 * means no address rule at all. `ingress` is rendered even when empty, so that removing the last
 * rule is seen as a change.
 */
function addressRules(env: EnvironmentResource): IngressRule[] {
  const addresses = env.spec.gateways?.api?.firewall?.ipAddresses ?? {};
  const blocks = firewallIpBlocks(addresses.allowed ?? [], addresses.blocked ?? []);
  return blocks.length ? [{ from: blocks.map((ipBlock) => ({ ipBlock })), ports }] : [];
}

/** An Ingress policy on one component's pods of the Environment. */
function ingressPolicy(env: EnvironmentResource, owner: OwnerRef, namespace: string, name: string, component: string, ingress: IngressRule[]): NetworkPolicyObject {
  const environment = env.metadata.name;
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: ownedMetadata(name, namespace, owner, environmentLabels(environment)),
    spec: { podSelector: { matchLabels: componentSelector(environment, component) }, policyTypes: ['Ingress'], ingress },
  };
}

export function renderFirewall(env: EnvironmentResource, owner: OwnerRef, namespace: string): NetworkPolicyObject {
  const name = env.metadata.name;
  const ingress = addressRules(env);
  // The function gateway calls the data plane from inside the cluster; its pods are not addresses
  // the firewall speaks about.
  if (env.spec.functionGateway?.enabled !== false) {
    ingress.push({ from: [{ podSelector: { matchLabels: componentSelector(name, COMPONENT.functionGateway) } }], ports });
  }
  return ingressPolicy(env, owner, namespace, objectNames.firewall(name), COMPONENT.dataplane, ingress);
}

/** The function gateway's pods: the same address rules as the data plane's (its Service had none). */
export function renderFunctionGatewayFirewall(env: EnvironmentResource, owner: OwnerRef, namespace: string): NetworkPolicyObject {
  return ingressPolicy(env, owner, namespace, objectNames.functionGateway(env.metadata.name), COMPONENT.functionGateway, addressRules(env));
}
