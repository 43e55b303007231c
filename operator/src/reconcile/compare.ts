/**
 * Desired-versus-live comparison on the fields the operator owns.
 *
 * The API server adds defaults (a Service's clusterIP, a container's terminationMessagePath…), so a
 * live object is never equal to the rendered one. What matters is that every field the operator
 * sets has the value it sets: the desired object must be a subset of the live one. Arrays are
 * compared element by element and must have the same length; an empty array also matches an absent
 * field, because the API server drops empty optional lists. Renderers therefore write a list they
 * may clear as an explicit empty list, so that clearing it shows up here. Maps are compared key by
 * key: the keys the operator sets must have its values; other keys (annotations of other
 * controllers) are left alone.
 */
import type { KubeObject } from '../kube/object-client.js';

type Json = unknown;

function isPlainObject(value: Json): value is Record<string, Json> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isEmpty(value: Json): boolean {
  return value === undefined || value === null || (Array.isArray(value) && value.length === 0) || (isPlainObject(value) && Object.keys(value).length === 0);
}

export function isSubset(desired: Json, live: Json): boolean {
  if (desired === undefined) return true;
  // An empty list demands an empty list; an empty map demands nothing (maps are compared by key).
  if (Array.isArray(desired) && desired.length === 0) return isEmpty(live);
  if (isPlainObject(desired) && Object.keys(desired).length === 0) return live === undefined || live === null || isPlainObject(live);
  if (Array.isArray(desired)) {
    return Array.isArray(live) && live.length === desired.length && desired.every((item, i) => isSubset(item, live[i]));
  }
  if (isPlainObject(desired)) {
    return isPlainObject(live) && Object.entries(desired).every(([key, value]) => isSubset(value, live[key]));
  }
  return desired === live;
}

/** The top-level fields of an object besides its identity and status: spec, data, rules… */
function ownedBodyFields(object: KubeObject): string[] {
  return Object.keys(object).filter((key) => !['apiVersion', 'kind', 'metadata', 'status'].includes(key));
}

type OwnerReference = NonNullable<KubeObject['metadata']['ownerReferences']>[number];

/** Each desired reference is present, and no other owner claims to be the controller. */
function hasOwnerReferences(desired: OwnerReference[], live: OwnerReference[]): boolean {
  const desiredUids = new Set(desired.map((ref) => ref.uid));
  return (
    desired.every((ref) => live.some((candidate) => isSubset(ref, candidate))) &&
    !live.some((ref) => ref.controller && !desiredUids.has(ref.uid))
  );
}

/** Whether the live object already has everything the desired object says. */
export function isUpToDate(desired: KubeObject, live: KubeObject): boolean {
  const meta = desired.metadata;
  return (
    isSubset(meta.labels ?? {}, live.metadata.labels ?? {}) &&
    isSubset(meta.annotations ?? {}, live.metadata.annotations ?? {}) &&
    hasOwnerReferences(meta.ownerReferences ?? [], live.metadata.ownerReferences ?? []) &&
    ownedBodyFields(desired).every((key) => isSubset(desired[key], live[key]))
  );
}

/** The paths (e.g. `spec.replicas`) where the live object lacks what the desired one says. */
export function differingPaths(desired: KubeObject, live: KubeObject): string[] {
  const paths: string[] = [];
  const walk = (d: Json, l: Json, path: string) => {
    if (isSubset(d, l)) return;
    if (isPlainObject(d) && !isEmpty(d) && isPlainObject(l)) {
      for (const [key, value] of Object.entries(d)) walk(value, l[key], path ? `${path}.${key}` : key);
    } else if (Array.isArray(d) && Array.isArray(l) && d.length === l.length) {
      d.forEach((item, i) => walk(item, l[i], `${path}[${i}]`));
    } else {
      paths.push(path);
    }
  };
  const meta = desired.metadata;
  walk(meta.labels ?? {}, live.metadata.labels ?? {}, 'metadata.labels');
  walk(meta.annotations ?? {}, live.metadata.annotations ?? {}, 'metadata.annotations');
  if (!hasOwnerReferences(meta.ownerReferences ?? [], live.metadata.ownerReferences ?? [])) paths.push('metadata.ownerReferences');
  for (const key of ownedBodyFields(desired)) walk(desired[key], live[key], key);
  return paths;
}

/**
 * Merges desired values into a live value: desired wins, fields only the live object has stay
 * (so server-assigned values like a Service's clusterIP and nodePorts survive an update).
 */
export function mergeInto(live: Json, desired: Json): Json {
  if (desired === undefined) return live;
  if (Array.isArray(desired)) {
    if (Array.isArray(live) && live.length === desired.length) return desired.map((item, i) => mergeInto(live[i], item));
    return structuredClone(desired);
  }
  if (isPlainObject(desired)) {
    if (!isPlainObject(live)) return structuredClone(desired);
    const merged: Record<string, Json> = { ...live };
    for (const [key, value] of Object.entries(desired)) merged[key] = mergeInto(live[key], value);
    return merged;
  }
  return desired;
}

/** The object to PUT: the live object (with its resourceVersion) carrying the desired fields. */
export function mergeForUpdate<T extends KubeObject>(live: T, desired: KubeObject): T {
  const meta = desired.metadata;
  const ownerUids = new Set((meta.ownerReferences ?? []).map((ref) => ref.uid));
  const merged: Record<string, Json> & { metadata: KubeObject['metadata'] } = structuredClone(live);
  merged.metadata = {
    ...live.metadata,
    labels: { ...live.metadata.labels, ...meta.labels },
    annotations: { ...live.metadata.annotations, ...meta.annotations },
    // Ours replace any of the same owner; other owners' non-controller references stay.
    ownerReferences: [
      ...(meta.ownerReferences ?? []),
      ...(live.metadata.ownerReferences ?? []).filter((ref) => !ownerUids.has(ref.uid) && !ref.controller),
    ],
  };
  for (const key of ownedBodyFields(desired)) merged[key] = mergeInto(live[key], desired[key]);
  return merged as T;
}
