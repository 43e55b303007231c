/** The shape of a rendered object: a complete manifest the applier can create or compare. */
import type { KubernetesObject, V1ObjectMeta } from '@kubernetes/client-node';

export interface DesiredObject extends KubernetesObject {
  apiVersion: string;
  kind: string;
  metadata: V1ObjectMeta & { name: string; namespace: string };
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
