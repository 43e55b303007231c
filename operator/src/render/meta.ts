/** Metadata shared by every rendered object: name, namespace, labels, controller ownerReference. */
import type { V1ObjectMeta, V1OwnerReference } from '@kubernetes/client-node';

/** What an owner needs to be referenced: the custom resource as read from the API server. */
export interface OwnerRef {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
}

export function controllerReference(owner: OwnerRef): V1OwnerReference {
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.name,
    uid: owner.uid,
    controller: true,
    // Foreground deletion of the owner waits for this object; needs update on <owner>/finalizers.
    blockOwnerDeletion: true,
  };
}

export function ownedMetadata(
  name: string,
  namespace: string,
  owner: OwnerRef,
  labels: Record<string, string>,
  annotations?: Record<string, string>,
): V1ObjectMeta & { name: string; namespace: string } {
  return {
    name,
    namespace,
    labels,
    ...(annotations && Object.keys(annotations).length ? { annotations } : {}),
    ownerReferences: [controllerReference(owner)],
  };
}
