/**
 * The function gateway's payloads, translated to the internal REST API and back. Pure: an
 * invocation in, the REST request to make out; the REST response in, the function's result out.
 *
 * Operations served: create, update (replace), patch (merge), delete, get, batch. `link`, `list`,
 * `query` and `transaction` answer 501 until the record engine has them.
 */
export interface FunctionResult {
  data: unknown;
  status: { code: number; message?: string };
}

export interface RestCall {
  method: 'GET' | 'POST';
  /** Path and query, e.g. `/demo/demo.Person/p1?expand=employer`. */
  path: string;
  body?: unknown;
  headers: Record<string, string>;
}

export class InvocationError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

const RECORD_OPERATIONS = ['create', 'update', 'patch', 'delete', 'get', 'batch'] as const;
const NOT_YET = ['link', 'list', 'query', 'transaction'];
type Operation = (typeof RECORD_OPERATIONS)[number];

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function field(payload: Record<string, unknown>, name: string, path: string): string {
  const value = payload[name];
  if (typeof value !== 'string' || value === '') throw new InvocationError(400, `${path}.${name} must be a non-empty string`);
  return value;
}

function expandOf(payload: Record<string, unknown>, path: string): string[] | undefined {
  const value = payload.expand;
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) throw new InvocationError(400, `${path}.expand must be a list of strings`);
  return value as string[];
}

/** One record operation as the structured REST action it stands for. */
function toAction(payload: Record<string, unknown>, path: string): Record<string, unknown> {
  const operation = payload.operation as Operation;
  const schema = field(payload, 'schema', path);
  const expand = expandOf(payload, path);
  const withExpand = (args: Record<string, unknown>) => (expand ? { ...args, expand } : args);
  const data = () => {
    if (!isObject(payload.data)) throw new InvocationError(400, `${path}.data must be an object`);
    return payload.data;
  };
  switch (operation) {
    case 'create': {
      const { id: dataId, ...rest } = data();
      const id = payload.id ?? dataId;
      if (id !== undefined && (typeof id !== 'string' || id === '')) throw new InvocationError(400, `${path}.id must be a non-empty string`);
      return { create: withExpand({ schema, ...(id ? { id } : {}), data: rest }) };
    }
    case 'update':
      return { update: withExpand({ schema, id: field(payload, 'id', path), data: data() }) };
    case 'patch':
      return { update: withExpand({ schema, id: field(payload, 'id', path), data: data(), mode: 'merge' }) };
    case 'delete':
      return { delete: { schema, id: field(payload, 'id', path) } };
    case 'get':
      return { read: withExpand({ schema, id: field(payload, 'id', path) }) };
    default:
      throw new InvocationError(400, `${path}.operation "${String(operation)}" cannot be used inside a batch`);
  }
}

function checkOperation(payload: Record<string, unknown>, path: string): Operation {
  const operation = payload.operation;
  if (typeof operation !== 'string') throw new InvocationError(400, `${path}.operation is required`);
  if (NOT_YET.includes(operation)) throw new InvocationError(501, `operation "${operation}" is not available in this version of the service`);
  if (!(RECORD_OPERATIONS as readonly string[]).includes(operation)) {
    throw new InvocationError(400, `${path}.operation must be one of ${[...RECORD_OPERATIONS, ...NOT_YET].join(', ')}`);
  }
  return operation as Operation;
}

export function toRestCall(payload: unknown, principal: string): RestCall {
  if (!isObject(payload)) throw new InvocationError(400, 'the payload must be a JSON object');
  const operation = checkOperation(payload, '$');
  if (!isObject(payload.dataset) || typeof payload.dataset.id !== 'string' || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(payload.dataset.id)) {
    throw new InvocationError(400, '$.dataset.id must name a dataset');
  }
  const dataset = payload.dataset.id;
  const headers: Record<string, string> = { authorization: `Proxy ${principal}`, 'content-type': 'application/json' };
  if (payload.executor !== undefined) {
    if (!isObject(payload.executor) || typeof payload.executor.id !== 'string') throw new InvocationError(400, '$.executor.id must be a string');
    headers['executor-name'] = payload.executor.id;
  }
  if (operation === 'get') {
    // A structured read, not GET /{dataset}/{schema}/{id}: a URL would turn an id of "." or ".."
    // into a path step (URL resolution removes dot segments), so such records could not be read.
    return { method: 'POST', path: `/${dataset}`, headers, body: toAction(payload, '$') };
  }
  if (operation === 'batch') {
    if (!isObject(payload.actions) || Object.keys(payload.actions).length === 0) throw new InvocationError(400, '$.actions must map names to requests');
    const actions: Record<string, unknown> = {};
    for (const [name, inner] of Object.entries(payload.actions)) {
      const path = `$.actions[${JSON.stringify(name)}]`;
      if (!isObject(inner)) throw new InvocationError(400, `${path} must be an object`);
      const op = checkOperation(inner, path);
      if (op === 'get' || op === 'batch') throw new InvocationError(400, `${path}.operation must be create, update, patch or delete`);
      actions[name] = toAction(inner, path);
    }
    return { method: 'POST', path: `/${dataset}`, body: { batch: { actions } }, headers };
  }
  return { method: 'POST', path: `/${dataset}`, body: toAction(payload, '$'), headers };
}

/** The REST answer as the function's result; a batch answer names each action's operation and schema. */
export function toFunctionResult(payload: Record<string, unknown>, status: number, body: unknown): FunctionResult {
  if (status >= 400) {
    const error = isObject(body) && isObject(body.error) ? body.error : undefined;
    return { data: error ? { code: error.code, details: error.details } : null, status: { code: status, message: typeof error?.message === 'string' ? error.message : `upstream answered ${status}` } };
  }
  if (payload.operation === 'batch' && isObject(body) && isObject(payload.actions)) {
    const data: Record<string, unknown> = {};
    for (const [name, result] of Object.entries(body)) {
      const inner = payload.actions[name] as Record<string, unknown>;
      data[name] = { operation: inner.operation, schema: inner.schema, data: result };
    }
    return { data, status: { code: status } };
  }
  return { data: body, status: { code: status } };
}
