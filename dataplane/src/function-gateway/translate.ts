/**
 * The function gateway's payloads, translated to the internal REST API and back. Pure: an
 * invocation in, the REST request to make out; the REST response in, the function's result out.
 *
 * Operations served: create, update (replace), patch (merge), delete, get, batch, list, link, query,
 * and transaction (a `create` of the system schema `Transaction`: a bulk load).
 *
 * Payloads are strict: a field an operation does not take, or a known field with a wrong type or
 * value, is a 400 naming its JSON path (`$.bogus`, `$.actions["a"].executor`) — a typo is never
 * silently ignored. Objects are built with Object.fromEntries and read through own properties only,
 * so a batch action named `__proto__` is an action like any other, both ways.
 */
import { CONSISTENCY_LEVELS } from '../../../model/types.js';

export interface FunctionResult {
  data: unknown;
  status: { code: number; message?: string };
}

export interface ProblemDetail {
  path: string;
  message: string;
}

export interface RestCall {
  method: 'POST' | 'GET' | 'DELETE';
  /** `/{dataset}`: every record operation is a structured request; `schema: "Dataset"` goes to `/_admin/datasets…`. */
  path: string;
  body: unknown;
  headers: Record<string, string>;
  /** REST JSON path prefixes → payload path prefixes, so upstream problems name the payload's paths. */
  paths: [rest: string, payload: string][];
}

export class InvocationError extends Error {
  constructor(
    /** The HTTP status the invocation's `status.code` reports. */
    readonly code: number,
    message: string,
    /** UPPER_SNAKE_CASE, as the REST API's error codes. */
    readonly errorCode = code === 501 ? 'NOT_IMPLEMENTED' : 'INVALID_PAYLOAD',
    readonly details: ProblemDetail[] = [],
  ) {
    super(message);
  }

  toResult(): FunctionResult {
    return { data: { code: this.errorCode, details: this.details }, status: { code: this.code, message: this.message } };
  }
}

const RECORD_OPERATIONS = ['create', 'update', 'patch', 'delete', 'get', 'batch', 'link', 'list', 'query', 'transaction'] as const;
const NOT_YET = [] as const;
const OPERATIONS = [...RECORD_OPERATIONS, ...NOT_YET] as const;
type Operation = (typeof OPERATIONS)[number];
type RecordOperation = (typeof RECORD_OPERATIONS)[number];

/** Fields every operation takes. */
const COMMON = ['operation', 'dataset', 'executor'];
/** The spec's request properties per operation (plus `consistency` on writes, as the REST actions take it). */
const FIELDS: Record<Operation, { required: string[]; optional: string[] }> = {
  create: { required: ['schema', 'data'], optional: ['id', 'expand', 'consistency'] },
  update: { required: ['schema', 'id', 'data'], optional: ['expand', 'consistency'] },
  patch: { required: ['schema', 'id', 'data'], optional: ['expand', 'consistency'] },
  delete: { required: ['schema', 'id'], optional: ['consistency'] },
  get: { required: ['schema', 'id'], optional: ['expand'] },
  // `consistency` on a batch applies to each action that names none.
  batch: { required: ['actions'], optional: ['consistency'] },
  link: { required: ['schema', 'id', 'link'], optional: ['expand', 'filter', 'sort', 'limit', 'nextToken'] },
  list: { required: ['schema'], optional: ['expand', 'filter', 'sort', 'limit', 'nextToken'] },
  // data: {schema: <query name>, arguments}; nextToken pages a filter-based query.
  query: { required: ['data'], optional: ['limit', 'nextToken'] },
  transaction: { required: ['data'], optional: [] },
};
const BATCHABLE: readonly string[] = ['create', 'update', 'patch', 'delete'];
/** Datasets are DNS labels; executors are named as the Environment's `spec.executors[].name` must be. */
const DATASET_ID = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const EXECUTOR_NAME = /^[A-Za-z0-9_-]{1,63}$/;

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
/** Own properties only: `payload.constructor` or `__proto__` never reach Object.prototype. */
const own = (o: Json, key: string): unknown => (Object.hasOwn(o, key) ? o[key] : undefined);
const at = (path: string, key: string) => (/^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`);

function invalid(path: string, problem: string, errorCode = 'INVALID_FIELD'): InvocationError {
  return new InvocationError(400, `${path} ${problem}`, errorCode, [{ path, message: problem }]);
}

function nonEmptyString(o: Json, key: string, path: string): string {
  const value = own(o, key);
  if (typeof value !== 'string' || value === '') throw invalid(at(path, key), 'must be a non-empty string');
  return value;
}

function checkOperation(payload: Json, path: string): Operation {
  const operation = own(payload, 'operation');
  if (operation === undefined) throw invalid(at(path, 'operation'), 'is required', 'MISSING_FIELD');
  if (typeof operation !== 'string' || !(OPERATIONS as readonly string[]).includes(operation)) {
    throw invalid(at(path, 'operation'), `must be one of ${OPERATIONS.join(', ')}`);
  }
  return operation as Operation;
}

/** Unknown fields first (a typo names itself), then missing ones. */
function checkFieldNames(payload: Json, operation: Operation, path: string, extra: string[] = []): void {
  const { required, optional } = FIELDS[operation];
  const allowed = [...COMMON, ...required, ...optional, ...extra];
  for (const key of Object.keys(payload)) {
    if (!allowed.includes(key)) {
      throw invalid(at(path, key), `is not a field of operation "${operation}" (it takes ${allowed.join(', ')})`, 'UNKNOWN_FIELD');
    }
  }
  for (const key of required) {
    if (own(payload, key) === undefined) throw invalid(at(path, key), `is required by operation "${operation}"`, 'MISSING_FIELD');
  }
}

function datasetOf(payload: Json, path: string): string {
  const dataset = own(payload, 'dataset');
  const p = at(path, 'dataset');
  if (dataset === undefined) throw invalid(p, 'is required', 'MISSING_FIELD');
  if (!isObject(dataset)) throw invalid(p, 'must be an object with an "id"');
  for (const key of Object.keys(dataset)) if (key !== 'id') throw invalid(at(p, key), 'is not a field of a dataset reference (it takes id)', 'UNKNOWN_FIELD');
  const id = own(dataset, 'id');
  if (typeof id !== 'string' || !DATASET_ID.test(id) || id.length > 63) throw invalid(`${p}.id`, 'must name a dataset (a DNS label)');
  return id;
}

function executorOf(payload: Json, path: string): string | undefined {
  const executor = own(payload, 'executor');
  if (executor === undefined) return undefined;
  const p = at(path, 'executor');
  if (!isObject(executor)) throw invalid(p, 'must be an object with an "id"');
  for (const key of Object.keys(executor)) if (key !== 'id') throw invalid(at(p, key), 'is not a field of an executor reference (it takes id)', 'UNKNOWN_FIELD');
  const id = own(executor, 'id');
  if (typeof id !== 'string' || id === '') throw invalid(`${p}.id`, 'must be a non-empty string');
  if (!EXECUTOR_NAME.test(id)) throw invalid(`${p}.id`, 'must be an executor name (letters, digits, "_" and "-", at most 63)');
  return id;
}

function consistencyOf(payload: Json, path: string): string | undefined {
  const value = own(payload, 'consistency');
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !(CONSISTENCY_LEVELS as readonly string[]).includes(value)) {
    throw invalid(at(path, 'consistency'), `must be one of ${CONSISTENCY_LEVELS.join(', ')}`, 'INVALID_CONSISTENCY');
  }
  return value;
}

function expandOf(payload: Json, path: string): string[] | undefined {
  const value = own(payload, 'expand');
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' && v !== '')) throw invalid(at(path, 'expand'), 'must be a list of property names');
  return value as string[];
}

function dataOf(payload: Json, path: string): Json {
  const data = own(payload, 'data');
  if (!isObject(data)) throw invalid(at(path, 'data'), 'must be an object of property values');
  return data;
}

/** list and link: filter and sort are strings, limit a whole number, nextToken the previous page's token. */
function pageFields(payload: Json, path: string): Json {
  const fields: Json = {};
  for (const key of ['filter', 'sort', 'nextToken']) {
    const value = own(payload, key);
    if (value === undefined) continue;
    if (typeof value !== 'string' || value === '') throw invalid(at(path, key), 'must be a non-empty string');
    fields[key] = value;
  }
  const limit = own(payload, 'limit');
  if (limit !== undefined) {
    if (!Number.isInteger(limit)) throw invalid(at(path, 'limit'), 'must be a whole number', 'INVALID_LIMIT');
    fields.limit = limit;
  }
  return fields;
}

/** One record operation as the structured REST action it stands for: `{create: {…}}` and so on. */
function toAction(payload: Json, operation: RecordOperation, path: string, defaultConsistency?: string): { kind: string; args: Json } {
  const schema = nonEmptyString(payload, 'schema', path);
  const expand = expandOf(payload, path);
  const consistency = consistencyOf(payload, path) ?? defaultConsistency;
  const optional = { ...(expand ? { expand } : {}), ...(consistency ? { consistency } : {}) };
  switch (operation) {
    case 'create': {
      const data = dataOf(payload, path);
      const id = own(payload, 'id');
      const dataId = own(data, 'id');
      if (id !== undefined && (typeof id !== 'string' || id === '')) throw invalid(at(path, 'id'), 'must be a non-empty string');
      if (dataId !== undefined && (typeof dataId !== 'string' || dataId === '')) throw invalid(`${at(path, 'data')}.id`, 'must be a non-empty string');
      if (id !== undefined && dataId !== undefined && id !== dataId) throw invalid(`${at(path, 'data')}.id`, `differs from ${at(path, 'id')}`);
      const recordId = (id ?? dataId) as string | undefined;
      // Own properties copied as such: a property named __proto__ stays a property (and the REST
      // API then names it as unknown, instead of it vanishing here).
      const rest = Object.fromEntries(Object.entries(data).filter(([key]) => key !== 'id'));
      return { kind: 'create', args: { schema, ...(recordId ? { id: recordId } : {}), data: rest, ...optional } };
    }
    case 'update':
    case 'patch':
      return {
        kind: 'update',
        args: { schema, id: nonEmptyString(payload, 'id', path), data: dataOf(payload, path), ...optional, ...(operation === 'patch' ? { mode: 'merge' } : {}) },
      };
    case 'delete':
      return { kind: 'delete', args: { schema, id: nonEmptyString(payload, 'id', path), ...optional } };
    case 'get':
      return { kind: 'read', args: { schema, id: nonEmptyString(payload, 'id', path), ...optional } };
    case 'list':
      return { kind: 'list', args: { schema, ...pageFields(payload, path), ...optional } };
    case 'link':
      return { kind: 'link', args: { schema, id: nonEmptyString(payload, 'id', path), link: nonEmptyString(payload, 'link', path), ...pageFields(payload, path), ...optional } };
    default:
      throw invalid(at(path, 'operation'), `"${operation}" cannot be used here`);
  }
}

/** The query operation's `data: {schema, arguments}` plus `limit` and `nextToken`, as the structured `query` action. */
function queryArgs(payload: Json): Json {
  const data = own(payload, 'data');
  if (!isObject(data)) throw invalid('$.data', 'must be an object {"schema": <query name>, "arguments": {…}}');
  for (const key of Object.keys(data)) if (key !== 'schema' && key !== 'arguments') throw invalid(at('$.data', key), 'is not a field of a query (it takes schema, arguments)', 'UNKNOWN_FIELD');
  if (own(data, 'schema') === undefined) throw invalid('$.data.schema', 'is required: the name of the query', 'MISSING_FIELD');
  const schema = nonEmptyString(data, 'schema', '$.data');
  const args = own(data, 'arguments');
  if (args !== undefined && !isObject(args)) throw invalid('$.data.arguments', 'must map argument names to values');
  return { schema, ...(args === undefined ? {} : { arguments: args }), ...pageFields(payload, '$') };
}
const QUERY_PATHS: [string, string][] = [
  ['$.query.schema', '$.data.schema'],
  ['$.query.arguments', '$.data.arguments'],
  ['$.query', '$'],
];

/**
 * A batch action may repeat the batch's dataset or executor, but not differ: one REST request
 * goes to one dataset with one `executor-name` header.
 */
function checkInnerMatches(inner: Json, path: string, dataset: string, executor: string | undefined): void {
  if (own(inner, 'dataset') !== undefined) {
    const id = datasetOf(inner, path);
    if (id !== dataset) throw invalid(`${at(path, 'dataset')}.id`, `differs from the batch's dataset "${dataset}"; a batch runs on one dataset`);
  }
  if (own(inner, 'executor') !== undefined) {
    const id = executorOf(inner, path);
    if (id !== executor) {
      throw invalid(at(path, 'executor'), `differs from the batch's executor (${executor ? `"${executor}"` : 'none'}); a batch runs on one executor: set $.executor instead`);
    }
  }
}

function batchBody(payload: Json, dataset: string, executor: string | undefined): { body: Json; paths: [string, string][] } {
  const actions = own(payload, 'actions');
  if (!isObject(actions) || Object.keys(actions).length === 0) throw invalid('$.actions', 'must map action names to requests (at least one)');
  const consistency = consistencyOf(payload, '$');
  const entries: [string, Json][] = [];
  const paths: [string, string][] = [];
  for (const [name, inner] of Object.entries(actions)) {
    const path = `$.actions[${JSON.stringify(name)}]`;
    if (!isObject(inner)) throw invalid(path, 'must be an object (a request)');
    const operation = checkOperation(inner, path);
    if (!BATCHABLE.includes(operation)) throw invalid(`${path}.operation`, `must be one of ${BATCHABLE.join(', ')} inside a batch`);
    checkFieldNames(inner, operation, path);
    checkInnerMatches(inner, path, dataset, executor);
    const { kind, args } = toAction(inner, operation as RecordOperation, path, consistency);
    entries.push([name, { [kind]: args }]);
    paths.push([`$.batch.actions[${JSON.stringify(name)}].${kind}`, path]);
  }
  // fromEntries defines own properties: an action named "__proto__" is sent like any other.
  return { body: { batch: { actions: Object.fromEntries(entries) } }, paths };
}

/**
 * `schema: "Dataset"`: the administrative API (`/_admin/datasets`), as the function gateway's
 * principal (list it in the Environment's spec.admin.principals). create takes `id` (the new
 * Dataset's name) and `data: {spec}`; patch only `data: {paused}`; get and delete an `id`; list.
 */
function datasetAdminCall(payload: Json, operation: Operation, headers: Record<string, string>): RestCall {
  const base = '/_admin/datasets';
  const id = () => {
    const value = nonEmptyString(payload, 'id', '$');
    if (!DATASET_ID.test(value) || value.length > 63) throw invalid('$.id', 'must name a dataset (a DNS label)');
    return value;
  };
  const paths: [string, string][] = [['$', '$.data']];
  switch (operation) {
    case 'create': {
      const data = dataOf(payload, '$');
      for (const key of Object.keys(data)) if (key !== 'spec') throw invalid(at('$.data', key), 'is not a field of a Dataset to create (it takes spec)', 'UNKNOWN_FIELD');
      return { method: 'POST', path: base, headers, body: { metadata: { name: id() }, spec: own(data, 'spec') }, paths: [['$.metadata.name', '$.id'], ...paths] };
    }
    case 'patch': {
      const data = dataOf(payload, '$');
      const paused = own(data, 'paused');
      if (Object.keys(data).length !== 1 || typeof paused !== 'boolean') throw invalid('$.data', 'must be {"paused": true} or {"paused": false}');
      return { method: 'POST', path: `${base}/${id()}/${paused ? 'pause' : 'resume'}`, headers, body: {}, paths };
    }
    case 'get':
      return { method: 'GET', path: `${base}/${id()}`, headers, body: undefined, paths };
    case 'delete':
      return { method: 'DELETE', path: `${base}/${id()}`, headers, body: undefined, paths };
    case 'list':
      return { method: 'GET', path: base, headers, body: undefined, paths };
    default:
      throw invalid('$.operation', `"${operation}" does not apply to schema "Dataset" (create, patch, get, delete, list do)`);
  }
}

export function toRestCall(payload: unknown, principal: string, requestId?: string): RestCall {
  if (!isObject(payload)) throw invalid('$', 'must be a JSON object (the invocation payload)');
  const operation = checkOperation(payload, '$');
  checkFieldNames(payload, operation, '$');
  if (own(payload, 'schema') === 'Dataset') {
    // The Dataset operated on is `id`; `dataset`, when given, must still be well-formed.
    if (own(payload, 'dataset') !== undefined) datasetOf(payload, '$');
    const headers: Record<string, string> = { authorization: `Proxy ${principal}`, 'content-type': 'application/json' };
    if (requestId) headers['x-request-id'] = requestId;
    return datasetAdminCall(payload, operation, headers);
  }
  const dataset = datasetOf(payload, '$');
  const executor = executorOf(payload, '$');
  if ((NOT_YET as readonly string[]).includes(operation)) {
    throw new InvocationError(501, `operation "${operation}" is not available in this version of the service`);
  }
  const headers: Record<string, string> = { authorization: `Proxy ${principal}`, 'content-type': 'application/json' };
  if (executor) headers['executor-name'] = executor;
  if (requestId) headers['x-request-id'] = requestId;
  const path = `/${dataset}`;
  if (operation === 'batch') return { method: 'POST', path, headers, ...batchBody(payload, dataset, executor) };
  if (operation === 'query') return { method: 'POST', path, headers, body: { query: queryArgs(payload) }, paths: QUERY_PATHS };
  if (operation === 'transaction') {
    // A bulk load is a record of the system schema Transaction in the addressed dataset; the executor travels as the header.
    const data = dataOf(payload, '$');
    return { method: 'POST', path, headers, body: { create: { schema: 'Transaction', data: { dataset: { id: dataset }, ...data } } }, paths: [['$.create.data', '$.data'], ['$.create', '$']] };
  }
  // get is a structured read, not GET /{dataset}/{schema}/{id}: a URL would turn an id of "." or
  // ".." into a path step (URL resolution removes dot segments), so such records could not be read.
  const { kind, args } = toAction(payload, operation as RecordOperation, '$');
  return { method: 'POST', path, headers, body: { [kind]: args }, paths: [[`$.${kind}`, '$']] };
}

/** A REST problem path in the payload's terms: `$.batch.actions["a"].create.data.x` → `$.actions["a"].data.x`. */
function payloadPath(path: unknown, paths: [string, string][]): unknown {
  if (typeof path !== 'string') return path;
  for (const [rest, payload] of paths) {
    if (path === rest || path.startsWith(`${rest}.`) || path.startsWith(`${rest}[`)) return payload + path.slice(rest.length);
  }
  return path;
}

function errorData(error: Json, paths: [string, string][]): Json {
  const details = Array.isArray(error.details)
    ? error.details.map((d: unknown) => (isObject(d) ? Object.fromEntries(Object.entries(d).map(([k, v]) => [k, k === 'path' ? payloadPath(v, paths) : v])) : d))
    : [];
  return { code: error.code, details };
}

/**
 * The REST answer as the function's result. A batch answer names each action's operation and
 * schema: `{name: {operation, schema, data}}`; an action that failed (207, QUORUM/EVENTUAL) carries
 * `data: {code, details}` and its own `status`.
 */
export function toFunctionResult(payload: Json, call: Pick<RestCall, 'paths'>, status: number, body: unknown): FunctionResult {
  if (status >= 400) {
    const error = isObject(body) && isObject(body.error) ? body.error : undefined;
    return {
      data: error ? errorData(error, call.paths) : null,
      status: { code: status, message: typeof error?.message === 'string' ? error.message : `the REST API answered ${status}` },
    };
  }
  const actions = own(payload, 'actions');
  if (own(payload, 'operation') === 'batch' && isObject(body) && isObject(actions)) {
    // ASYNC answers 202 {accepted, consistency, actions: {name: {id}}}.
    const results = status === 202 && isObject(own(body, 'actions')) ? (own(body, 'actions') as Json) : body;
    const entries = Object.entries(results).map(([name, result]) => {
      const inner = own(actions, name);
      const described = isObject(inner) ? { operation: own(inner, 'operation'), schema: own(inner, 'schema') } : {};
      if (isObject(result) && isObject(own(result, 'error'))) {
        const error = own(result, 'error') as Json;
        const code = typeof own(result, 'status') === 'number' ? (own(result, 'status') as number) : 500;
        return [name, { ...described, data: errorData(error, call.paths), status: { code, message: error.message } }];
      }
      return [name, { ...described, data: result }];
    });
    return { data: Object.fromEntries(entries), status: { code: status } };
  }
  return { data: body, status: { code: status } };
}
