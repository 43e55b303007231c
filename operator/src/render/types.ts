/** The shape of a rendered object: a complete manifest the applier can create or compare. */
import type { KubernetesObject, V1ObjectMeta } from '@kubernetes/client-node';

export interface DesiredObject extends KubernetesObject {
  apiVersion: string;
  kind: string;
  metadata: V1ObjectMeta & { name: string; namespace: string };
}

/**
 * Fields an object is created with but that are never compared or updated afterwards, because
 * someone else owns them once it exists (an autoscaler's replica count). A symbol key: neither
 * serialised nor seen by the comparison, which walks string keys.
 */
export const CREATE_ONLY: unique symbol = Symbol('createOnly');

export type CreateOnly = { [CREATE_ONLY]?: Record<string, unknown> };

/** `object` with create-only fields (none when `fields` is undefined). */
export function withCreateOnly<T extends DesiredObject>(object: T, fields: Record<string, unknown> | undefined): T {
  return fields ? Object.assign(object, { [CREATE_ONLY]: fields }) : object;
}

/** The manifest to create: the desired object with its create-only fields merged in. */
export function creationManifest(desired: DesiredObject & CreateOnly): DesiredObject {
  const extra = desired[CREATE_ONLY];
  return extra ? (mergePlain(desired, extra) as DesiredObject) : desired;
}

function mergePlain(base: unknown, extra: unknown): unknown {
  const plain = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!plain(base) || !plain(extra)) return extra;
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(extra)) out[key] = key in base ? mergePlain(base[key], value) : value;
  return out;
}

/** A client-node model type as a complete manifest (identity and metadata required). */
export type Rendered<T> = Omit<T, 'apiVersion' | 'kind' | 'metadata'> & DesiredObject;

/** Operator-wide settings that shape rendered objects (from the operator's environment). */
export interface RenderSettings {
  /** Image of the data plane when the Environment does not name one. */
  dataplaneImage: string;
  /** Image of the function gateway when the Environment does not name one. */
  functionGatewayImage: string;
  imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never';
  /** The operator's OTEL_* variables, handed on to the data plane and the function gateway (none: no tracing). */
  telemetryEnv?: readonly { name: string; value: string }[];
}

/**
 * The service's one image (Dockerfile at the repo root): the operator, the data plane and, with
 * DAS_MODE=function-gateway, the function gateway all run it. The chart's default as well.
 */
export const DEFAULT_IMAGE = 'ghcr.io/data-access-service/data-access:0.1.0';

export const DEFAULT_RENDER_SETTINGS: RenderSettings = {
  dataplaneImage: DEFAULT_IMAGE,
  functionGatewayImage: DEFAULT_IMAGE,
  imagePullPolicy: 'IfNotPresent',
};

/** The container port of the data plane and the function gateway. */
export const HTTP_PORT = 8080;
/** The port the Services expose (plain HTTP inside the private network, as the spec says). */
export const SERVICE_PORT = 80;
/** Every Service's one port: 80 → the pods' named `http` port. */
export const SERVICE_HTTP_PORT = { name: 'http', port: SERVICE_PORT, targetPort: 'http', protocol: 'TCP' };
