/**
 * What `spec.gateways.iam.trust: verified` needs in the cluster (pure): the function gateway's own
 * ServiceAccount, ClusterRoleBindings of each of the data plane's and the function gateway's
 * ServiceAccounts to `system:auth-delegator` (TokenReview) and to
 * `system:service-account-issuer-discovery` (the issuer's keys, to check a token's signature before
 * any TokenReview), and the function gateway's projected token for calling the data plane. The bindings are cluster-scoped, so they cannot take the
 * Environment as owner: the Environment's finalizer removes them (reconcile/cluster-bindings.ts).
 */
import type { V1ServiceAccount, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import { serviceAccountAudience } from '../../../model/render.js';
import type { EnvironmentResource } from '../../../model/types.js';
import type { KubeObject } from '../kube/object-client.js';
import { environmentLabels, objectNames } from '../names.js';
import { functionGatewayEnabled, functionGatewayLabels } from './function-gateway.js';
import { ownedMetadata, type OwnerRef } from './meta.js';
import type { Rendered } from './types.js';

export const AUTH_DELEGATOR = 'system:auth-delegator';
/** Reads `/.well-known/openid-configuration` and `/openid/v1/jwks` (Kubernetes 1.20+ bootstrap role). */
export const ISSUER_DISCOVERY = 'system:service-account-issuer-discovery';
/** The Environment's finalizer while cluster-scoped objects of it exist. */
export const CLUSTER_BINDINGS_FINALIZER = 'dataaccess.dev/cluster-bindings';
/** Which namespace a cluster-scoped object's Environment lives in (the name label alone is ambiguous). */
export const NAMESPACE_LABEL = 'dataaccess.dev/namespace';
/** Short-lived: the kubelet renews a projected token at 80% of its life, so a leaked one soon expires. */
export const PROJECTED_TOKEN_SECONDS = 600;
export const PROJECTED_TOKEN_DIR = '/var/run/secrets/dataaccess.dev/token';
export const PROJECTED_TOKEN_PATH = `${PROJECTED_TOKEN_DIR}/token`;

export function verifiedCallers(env: EnvironmentResource): boolean {
  return env.spec.gateways?.iam?.trust === 'verified';
}

/** The audiences the data plane accepts; a projected token for it carries the first. */
export function iamAudiences(env: EnvironmentResource, namespace: string): string[] {
  return env.spec.gateways?.iam?.audiences ?? [serviceAccountAudience(namespace, env.metadata.name)];
}

/** The ClusterRoles a verifying ServiceAccount is bound to, with the infix of their bindings' names. */
const VERIFYING_ROLES = [
  { role: AUTH_DELEGATOR, infix: 'auth-delegator' },
  { role: ISSUER_DISCOVERY, infix: 'issuer-discovery' },
] as const;

/** `dataaccess.dev:auth-delegator:<namespace>:<serviceaccount>`: unique per ServiceAccount cluster-wide. */
export function authDelegatorBindingName(namespace: string, serviceAccount: string): string {
  return bindingName('auth-delegator', namespace, serviceAccount);
}

/** `dataaccess.dev:issuer-discovery:<namespace>:<serviceaccount>`. */
export function issuerDiscoveryBindingName(namespace: string, serviceAccount: string): string {
  return bindingName('issuer-discovery', namespace, serviceAccount);
}

function bindingName(infix: string, namespace: string, serviceAccount: string): string {
  return `dataaccess.dev:${infix}:${namespace}:${serviceAccount}`;
}

/** The ServiceAccounts that verify tokens: the data plane's, and the function gateway's when it exists. */
function verifyingServiceAccounts(env: EnvironmentResource): string[] {
  const name = env.metadata.name;
  return [objectNames.dataplane(name), ...(functionGatewayEnabled(env) ? [objectNames.functionGateway(name)] : [])];
}

/** Every binding name this Environment may have had (deleted by the finalizer whatever the spec says now). */
export function possibleBindingNames(env: EnvironmentResource, namespace: string): string[] {
  const name = env.metadata.name;
  return VERIFYING_ROLES.flatMap(({ infix }) => [objectNames.dataplane(name), objectNames.functionGateway(name)].map((sa) => bindingName(infix, namespace, sa)));
}

/** Per verifying ServiceAccount, a ClusterRoleBinding to each of VERIFYING_ROLES (none unless trust is verified). */
export function renderVerifyingBindings(env: EnvironmentResource, namespace: string): KubeObject[] {
  if (!verifiedCallers(env)) return [];
  return VERIFYING_ROLES.flatMap(({ role, infix }) =>
    verifyingServiceAccounts(env).map((serviceAccount) => ({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: bindingName(infix, namespace, serviceAccount), labels: { ...environmentLabels(env.metadata.name), [NAMESPACE_LABEL]: namespace } },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ kind: 'ServiceAccount', name: serviceAccount, namespace }],
    })),
  );
}

/** The function gateway's own identity (trust verified): its principal is this ServiceAccount. */
export function renderFunctionGatewayServiceAccount(env: EnvironmentResource, owner: OwnerRef, namespace: string): Rendered<V1ServiceAccount> {
  const name = env.metadata.name;
  return {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: ownedMetadata(objectNames.functionGateway(name), namespace, owner, functionGatewayLabels(name)),
    // Only the pods that ask for it get a token (the function gateway's pod spec does).
    automountServiceAccountToken: false,
  };
}

/** A projected ServiceAccount token for `audience`, short-lived and renewed by the kubelet. */
export function projectedTokenParts(audience: string): { volumes: V1Volume[]; volumeMounts: V1VolumeMount[] } {
  return {
    volumes: [{ name: 'dataaccess-token', projected: { sources: [{ serviceAccountToken: { audience, expirationSeconds: PROJECTED_TOKEN_SECONDS, path: 'token' } }] } }],
    volumeMounts: [{ name: 'dataaccess-token', mountPath: PROJECTED_TOKEN_DIR, readOnly: true }],
  };
}
