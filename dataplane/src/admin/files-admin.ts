/**
 * The administrative API off the cluster: `/_admin/datasets` writes Dataset manifests into
 * DATA_DIR/datasets, which the files config source reads and watches (config/file-source.ts), so
 * a created Dataset is served, a deleted one stops and a paused one answers 503 within a second or
 * two. Only the principals the Environment lists in `spec.admin.principals`, on the iam gateway.
 * Datasets from other manifests are listed and shown but not changed (409 NOT_MANAGED).
 */
import { existsSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { loadManifests, ManifestError, parseManifests } from '../../../model/manifests.js';
import type { StorageClaim } from '../../../model/storage.js';
import { API_GROUP_VERSION, type DatasetConfig, type DatasetSpec, type EnvironmentConfig } from '../../../model/types.js';
import type { Caller } from '../auth/caller.js';
import type { ConfigStore } from '../config/store.js';
import { ApiError, badRequest, MethodNotAllowed } from '../engine/errors.js';
import { checkNewDataset, storeClaims, type AdminSettings } from './admin-checks.js';

export interface AdminRequest {
  method: string;
  /** Path segments after `/_admin`. */
  segments: string[];
  body?: unknown;
}

const NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export class FilesAdmin {
  constructor(
    private readonly directory: string,
    private readonly store: ConfigStore,
    private readonly settings: AdminSettings = {},
  ) {}

  authenticate(authkind: string, env: EnvironmentConfig, iam: (admins: DatasetConfig) => Promise<Caller>): Promise<void> {
    return authenticateAdmin(authkind, env, iam);
  }

  async handle(request: AdminRequest, env: EnvironmentConfig): Promise<{ status: number; body: unknown }> {
    const [collection, id, action, ...rest] = request.segments;
    if (collection !== 'datasets' || rest.length) throw new ApiError(404, 'NOT_FOUND', 'the administrative API serves /_admin/datasets');
    const allow = (methods: string) => {
      if (!methods.split(',').includes(request.method)) throw new MethodNotAllowed(request.method, methods);
    };
    if (id === undefined) {
      allow('GET,POST');
      return request.method === 'GET' ? { status: 200, body: { items: this.store.datasetIds().sort().map((d) => this.describe(d)) } } : this.createInTurn(request.body, env);
    }
    if (action === undefined) {
      allow('GET,DELETE');
      if (request.method === 'GET') {
        if (!this.store.dataset(id) && !existsSync(this.file(id))) throw notFound(id);
        return { status: 200, body: this.describe(id) };
      }
      unlinkSync(this.managed(id));
      return { status: 200, body: { id, deleted: true } };
    }
    if (action !== 'pause' && action !== 'resume') throw new ApiError(404, 'NOT_FOUND', `no action "${action.slice(0, 50)}"; use pause or resume`);
    allow('POST');
    const file = this.managed(id);
    const manifest = parse(readFileSync(file, 'utf8'));
    if (action === 'pause') manifest.spec.paused = true;
    else delete manifest.spec.paused;
    this.write(id, manifest);
    return { status: 200, body: { id, paused: action === 'pause' } };
  }

  private file(id: string): string {
    if (!NAME.test(id)) throw badRequest('INVALID_PATH', 'a dataset id is a DNS label', [{ path: 'path:id', message: 'not a DNS label' }]);
    return join(this.directory, `${id}.yaml`);
  }

  /** The manifest file the administrative API wrote for a dataset; 404/409 otherwise. */
  private managed(id: string): string {
    const file = this.file(id);
    if (existsSync(file)) return file;
    if (this.store.dataset(id)) throw new ApiError(409, 'NOT_MANAGED', `dataset "${id}" comes from manifests the administrative API does not manage; change those`);
    throw notFound(id);
  }

  private describe(id: string) {
    const state = this.store.dataset(id);
    return {
      id,
      status: state ? state.status : 'pending',
      ...(state?.status === 'failed' ? { problem: state.problem } : {}),
      paused: Boolean(state?.config.paused),
      managed: existsSync(join(this.directory, `${id}.yaml`)),
      ...(state ? { generation: state.config.generation } : {}),
    };
  }

  /** Creates one at a time: two at once could each find the other's storage still free. */
  private creating: Promise<unknown> = Promise.resolve();
  private createInTurn(body: unknown, env: EnvironmentConfig): Promise<{ status: number; body: unknown }> {
    const result = this.creating.then(() => this.create(body, env));
    this.creating = result.catch(() => undefined);
    return result;
  }

  private async create(body: unknown, env: EnvironmentConfig): Promise<{ status: number; body: unknown }> {
    const { name, manifest } = datasetManifest(body, env);
    if (this.store.dataset(name) || existsSync(this.file(name))) throw new ApiError(409, 'DATASET_EXISTS', `dataset "${name}" exists`);
    // Written manifests the files source has not loaded yet hold their storage too.
    let written: StorageClaim[] = [];
    try {
      written = loadManifests(this.directory).datasets.map((d) => ({ id: d.metadata.name, location: d.spec.location }));
    } catch {
      // An unreadable manifest there is reported by the files source; the store's datasets still count.
    }
    await checkNewDataset(name, manifest.spec as unknown as DatasetSpec, [...storeClaims(this.store), ...written], this.store, this.settings);
    if (this.store.dataset(name) || existsSync(this.file(name))) throw new ApiError(409, 'DATASET_EXISTS', `dataset "${name}" exists`);
    this.write(name, manifest);
    return { status: 201, body: { id: name, status: 'pending', managed: true } };
  }

  /** Written whole, then renamed into place: the watcher never reads half a file. */
  private write(id: string, manifest: unknown): void {
    const temporary = join(this.directory, `.${id}.tmp`);
    writeFileSync(temporary, stringify(manifest));
    renameSync(temporary, this.file(id));
  }
}

/** The caller must be an admin principal (spec.admin.principals) on the iam gateway; throws the 401/403 otherwise. */
export async function authenticateAdmin(authkind: string, env: EnvironmentConfig, iam: (admins: DatasetConfig) => Promise<Caller>): Promise<void> {
  if (authkind !== 'iam') throw new ApiError(403, 'ADMIN_IAM_ONLY', 'the administrative API is served on the iam gateway only');
  const principals = env.admin?.principals ?? [];
  // The iam checks of a dataset, against the Environment's admin principals.
  const admins = { id: '_admin', auth: { iam: { principals } }, caller: { super: [], anon: false } } as unknown as DatasetConfig;
  try {
    await iam(admins);
  } catch (err) {
    if ((err as { code?: string }).code === 'PRINCIPAL_NOT_ALLOWED') {
      throw new ApiError(403, 'NOT_AN_ADMIN', `the principal is not one of environment "${env.id}"'s admin principals (spec.admin.principals)`);
    }
    throw err;
  }
}

/** A Dataset manifest from a request body, checked like any manifest: 400s name the field. */
export function datasetManifest(body: unknown, env: EnvironmentConfig): { name: string; manifest: { apiVersion: string; kind: string; metadata: { name: string }; spec: Record<string, unknown> } } {
  if (!isObject(body)) throw badRequest('INVALID_BODY', 'send a Dataset manifest as JSON: {"metadata": {"name"}, "spec": {…}}', [{ path: '$', message: 'not an object' }]);
  // Nothing is dropped silently: a field the API does not write is refused, as the CRD refuses unknown fields.
  refuseUnknown(body, ['apiVersion', 'kind', 'metadata', 'spec'], '$');
  if (body.apiVersion !== undefined && body.apiVersion !== API_GROUP_VERSION) throw badRequest('INVALID_FIELD', `"apiVersion" must be "${API_GROUP_VERSION}"`, [{ path: '$.apiVersion', message: 'another API version' }]);
  if (body.kind !== undefined && body.kind !== 'Dataset') throw badRequest('INVALID_FIELD', '"kind" must be "Dataset"', [{ path: '$.kind', message: 'not Dataset' }]);
  if (isObject(body.metadata)) refuseUnknown(body.metadata, ['name'], '$.metadata');
  const metadata = body.metadata;
  const name = isObject(metadata) ? metadata.name : undefined;
  if (typeof name !== 'string' || !NAME.test(name)) throw badRequest('INVALID_FIELD', '"metadata.name" must be a DNS label', [{ path: '$.metadata.name', message: 'not a DNS label' }]);
  if (!isObject(body.spec)) throw badRequest('INVALID_FIELD', '"spec" must be an object', [{ path: '$.spec', message: 'not an object' }]);
  const spec = { ...body.spec, environment: body.spec.environment ?? env.id };
  if (spec.environment !== env.id) throw badRequest('INVALID_FIELD', `"spec.environment" must be "${env.id}", the environment served here`, [{ path: '$.spec.environment', message: 'another environment' }]);
  const manifest = { apiVersion: API_GROUP_VERSION, kind: 'Dataset', metadata: { name }, spec };
  try {
    parseManifests(stringify(manifest), 'request');
  } catch (err) {
    if (err instanceof ManifestError) {
      throw badRequest('INVALID_MANIFEST', `invalid Dataset: ${err.problems.map((p) => `${p.path} ${p.message}`).join('; ')}`, err.problems.map((p) => ({ path: p.path, message: p.message })));
    }
    throw err;
  }
  return { name, manifest };
}

function refuseUnknown(object: Record<string, unknown>, known: string[], path: string): void {
  const unknown = Object.keys(object).find((key) => !known.includes(key));
  if (unknown !== undefined) {
    const where = `${path}[${JSON.stringify(unknown.slice(0, 100))}]`;
    throw badRequest('INVALID_FIELD', `unknown field ${where}; the administrative API takes ${known.map((k) => `"${k}"`).join(', ')} here`, [{ path: where, message: 'unknown field' }]);
  }
}

/** The routes of /_admin/datasets, whatever writes the Datasets. */
export function adminRoute(request: AdminRequest): { kind: 'list' | 'create' } | { kind: 'get' | 'delete' | 'pause' | 'resume'; id: string } {
  const [collection, id, action, ...rest] = request.segments;
  if (collection !== 'datasets' || rest.length) throw new ApiError(404, 'NOT_FOUND', 'the administrative API serves /_admin/datasets');
  const allow = (methods: string) => {
    if (!methods.split(',').includes(request.method)) throw new MethodNotAllowed(request.method, methods);
  };
  if (id === undefined) {
    allow('GET,POST');
    return { kind: request.method === 'GET' ? 'list' : 'create' };
  }
  if (!NAME.test(id)) throw badRequest('INVALID_PATH', 'a dataset id is a DNS label', [{ path: 'path:id', message: 'not a DNS label' }]);
  if (action === undefined) {
    allow('GET,DELETE');
    return { kind: request.method === 'GET' ? 'get' : 'delete', id };
  }
  if (action !== 'pause' && action !== 'resume') throw new ApiError(404, 'NOT_FOUND', `no action "${action.slice(0, 50)}"; use pause or resume`);
  allow('POST');
  return { kind: action, id };
}

export const notFound = (id: string) => new ApiError(404, 'DATASET_NOT_FOUND', `no dataset "${id}" in this environment`);
