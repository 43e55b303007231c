/**
 * Plain-JSON access to any Kubernetes object, on client-node's request machinery (kubeconfig auth,
 * TLS, discovery of resource paths, middleware).
 *
 * Why not the typed APIs: their models rename fields (NetworkPolicy's `from` is `_from`) and turn
 * timestamps into Dates, while watch events arrive as plain JSON. The operator compares desired and
 * live objects field by field, so every object it sees must have one shape: the API's own JSON.
 */
import {
  ApiException,
  HttpMethod,
  KubeConfig,
  KubernetesObjectApi,
  ServerConfiguration,
  createConfiguration,
  type KubernetesObject,
  type Middleware,
  type RequestContext,
  type ResponseContext,
} from '@kubernetes/client-node';
import { keepAliveAgents } from './keep-alive.js';

/** A Kubernetes object as JSON; what the operator reads, compares and writes. */
export interface KubeObject extends KubernetesObject {
  apiVersion: string;
  kind: string;
  metadata: NonNullable<KubernetesObject['metadata']> & { name: string };
  [field: string]: unknown;
}

export interface KubeList<T extends KubeObject = KubeObject> {
  apiVersion?: string;
  kind?: string;
  metadata?: { resourceVersion?: string; continue?: string };
  items: T[];
}

export interface ObjectRef {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
}

export function statusCodeOf(err: unknown): number | undefined {
  if (err instanceof ApiException) return err.code;
  const code = (err as { code?: unknown; statusCode?: unknown } | undefined)?.statusCode ?? (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'number' ? code : undefined;
}

/** The API server's own explanation (Status.message), for conditions and events. */
export function apiErrorMessage(err: unknown): string {
  if (err instanceof ApiException) {
    const body = err.body as unknown;
    const parsed = typeof body === 'string' ? safeParse(body) : body;
    const message = (parsed as { message?: unknown } | undefined)?.message;
    if (typeof message === 'string') return message;
    return `HTTP ${err.code}`;
  }
  return err instanceof Error ? err.message : String(err);
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Exposes KubernetesObjectApi's path discovery and request pipeline; skips its typed (de)serialization. */
class JsonObjectApi extends KubernetesObjectApi {
  async path(spec: KubernetesObject, action: 'create' | 'read' | 'replace' | 'delete' | 'list'): Promise<string> {
    return this.specUriPath(structuredClone(spec), action);
  }

  async send<T>(method: HttpMethod, path: string, query: Record<string, string>, body?: unknown): Promise<T> {
    const context = this.configuration.baseServer.makeRequestContext(path, method);
    context.setHeaderParam('Accept', 'application/json');
    for (const [key, value] of Object.entries(query)) context.setQueryParam(key, value);
    if (body !== undefined) {
      context.setHeaderParam('Content-Type', 'application/json');
      context.setBody(JSON.stringify(body));
    }
    return this.requestPromise(context) as Promise<T>;
  }

  protected override async processResponse<T extends KubernetesObject>(response: ResponseContext): Promise<T> {
    const text = await response.body.text();
    if (response.httpStatusCode >= 200 && response.httpStatusCode <= 299) return (text ? JSON.parse(text) : {}) as T;
    throw new ApiException(response.httpStatusCode, 'Unsuccessful HTTP Request', safeParse(text) ?? text, response.headers);
  }
}

export class KubeObjectClient {
  private readonly api: JsonObjectApi;

  /** `middleware` runs after the keep-alive agent swap (e.g. request counting). */
  constructor(kubeConfig: KubeConfig, middleware: Middleware[] = []) {
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster');
    const configuration = createConfiguration({
      baseServer: new ServerConfiguration(cluster.server, {}),
      authMethods: { default: kubeConfig },
      promiseMiddleware: [keepAliveAgents(), ...middleware],
    });
    this.api = new JsonObjectApi(configuration);
  }

  /** The collection path (for list and watch); all namespaces when `namespace` is undefined. */
  collectionPath(apiVersion: string, kind: string, namespace?: string): Promise<string> {
    return this.api.path({ apiVersion, kind, metadata: { namespace } }, 'list');
  }

  async list<T extends KubeObject = KubeObject>(apiVersion: string, kind: string, namespace?: string, labelSelector?: string, fieldSelector?: string): Promise<KubeList<T>> {
    const path = await this.collectionPath(apiVersion, kind, namespace);
    const query: Record<string, string> = { ...(labelSelector ? { labelSelector } : {}), ...(fieldSelector ? { fieldSelector } : {}) };
    const items: T[] = [];
    let resourceVersion: string | undefined;
    let next: string | undefined;
    do {
      const page = await this.api.send<KubeList<T>>(HttpMethod.GET, path, { ...query, limit: '500', ...(next ? { continue: next } : {}) });
      items.push(...page.items.map((item) => ({ ...item, apiVersion, kind })));
      resourceVersion = page.metadata?.resourceVersion;
      next = page.metadata?.continue || undefined;
    } while (next);
    return { apiVersion, kind: `${kind}List`, metadata: { resourceVersion }, items };
  }

  /** A GET of a non-object path (discovery: `/apis`). */
  getJson<T>(path: string): Promise<T> {
    return this.api.send<T>(HttpMethod.GET, path, {});
  }

  /** The object, or undefined when it does not exist. */
  async read<T extends KubeObject = KubeObject>(ref: ObjectRef): Promise<T | undefined> {
    try {
      return await this.api.send<T>(HttpMethod.GET, await this.objectPath(ref, 'read'), {});
    } catch (err) {
      if (statusCodeOf(err) === 404) return undefined;
      throw err;
    }
  }

  async create<T extends KubeObject>(object: T): Promise<T> {
    const path = await this.api.path(object, 'create');
    return this.api.send<T>(HttpMethod.POST, path, {}, object);
  }

  /** PUT with the object's resourceVersion: a concurrent change answers 409 Conflict. */
  async replace<T extends KubeObject>(object: T): Promise<T> {
    return this.api.send<T>(HttpMethod.PUT, await this.objectPath(refOf(object), 'replace'), {}, object);
  }

  async replaceStatus<T extends KubeObject>(object: T): Promise<T> {
    return this.api.send<T>(HttpMethod.PUT, `${await this.objectPath(refOf(object), 'replace')}/status`, {}, object);
  }

  /** Deletes in the background (dependents by GC). Returns false when it was already gone. */
  async delete(ref: ObjectRef, preconditions?: { uid?: string; resourceVersion?: string }): Promise<boolean> {
    const body = { apiVersion: 'v1', kind: 'DeleteOptions', propagationPolicy: 'Background', ...(preconditions ? { preconditions } : {}) };
    try {
      await this.api.send(HttpMethod.DELETE, await this.objectPath(ref, 'delete'), {}, body);
      return true;
    } catch (err) {
      if (statusCodeOf(err) === 404) return false;
      throw err;
    }
  }

  private objectPath(ref: ObjectRef, action: 'read' | 'replace' | 'delete'): Promise<string> {
    return this.api.path({ apiVersion: ref.apiVersion, kind: ref.kind, metadata: { name: ref.name, namespace: ref.namespace } }, action);
  }
}

/** The writes and reads the reconcilers use (a fake implements it in tests). */
export type ObjectWriter = Pick<KubeObjectClient, 'read' | 'create' | 'replace' | 'replaceStatus' | 'delete'>;

export function refOf(object: KubeObject): ObjectRef {
  return { apiVersion: object.apiVersion, kind: object.kind, name: object.metadata.name, namespace: object.metadata.namespace };
}

export type { Middleware, RequestContext, ResponseContext };
