/**
 * Parsing of structured requests (`POST /{dataset}`) into typed actions. Every problem is a 400
 * naming the JSON path of the offending input.
 */
import { CONSISTENCY_LEVELS, type Consistency } from '../../../model/types.js';
import { badRequest } from './errors.js';

export interface ReadAction {
  kind: 'read';
  schema: string;
  id: string;
  version?: number;
  expand: string[];
  projection?: string[];
  /** How fresh: QUORUM and stronger read the latest commit; EVENTUAL (and ASYNC) may read a replica behind it. */
  consistency?: Consistency;
}
export interface CreateAction {
  kind: 'create';
  schema: string;
  id?: string;
  data: Record<string, unknown>;
  expand: string[];
  projection?: string[];
  consistency?: Consistency;
}
export interface UpdateAction {
  kind: 'update';
  schema: string;
  id: string;
  data: Record<string, unknown>;
  merge: boolean;
  expand: string[];
  projection?: string[];
  consistency?: Consistency;
}
export interface DeleteAction {
  kind: 'delete';
  schema: string;
  id: string;
  consistency?: Consistency;
}
export type WriteAction = CreateAction | UpdateAction | DeleteAction;
export type SingleAction = ReadAction | WriteAction;
export interface BatchAction {
  kind: 'batch';
  actions: Record<string, WriteAction>;
  order: string[];
}
/** A page of a schema's records (list), or of the records a link leads to (link). */
export interface PageRequest {
  filter?: string;
  sort?: string;
  limit?: number;
  nextToken?: string;
  expand: string[];
}
export interface ListAction extends PageRequest {
  kind: 'list';
  schema: string;
}
export interface LinkAction extends PageRequest {
  kind: 'link';
  schema: string;
  id: string;
  link: string;
}
/** A named query of the dataset (spec.queries): `schema` names the query, `arguments` maps names to values. */
export interface QueryAction {
  kind: 'query';
  schema: string;
  arguments: Record<string, unknown>;
  limit?: number;
  nextToken?: string;
}
export type StructuredAction = SingleAction | BatchAction | ListAction | LinkAction | QueryAction;

const ACTION_FIELDS: Record<string, { required: string[]; optional: string[] }> = {
  read: { required: ['schema', 'id'], optional: ['version', 'expand', 'projection', 'consistency', 'linkConsistency'] },
  create: { required: ['schema', 'data'], optional: ['id', 'expand', 'projection', 'consistency', 'expressions'] },
  update: { required: ['schema', 'id', 'data'], optional: ['expand', 'projection', 'consistency', 'expressions', 'mode'] },
  delete: { required: ['schema', 'id'], optional: ['consistency'] },
  batch: { required: ['actions'], optional: [] },
  list: { required: ['schema'], optional: ['filter', 'sort', 'limit', 'nextToken', 'expand'] },
  link: { required: ['schema', 'id', 'link'], optional: ['filter', 'sort', 'limit', 'nextToken', 'expand'] },
  query: { required: ['schema'], optional: ['arguments', 'limit', 'nextToken'] },
};
export const MAX_BATCH_ACTIONS = 1000;
const MAX_ID_LENGTH = 512;
/** Versions are stored as 32-bit integers: no record reaches a higher one. */
export const MAX_VERSION = 2 ** 31 - 1;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function wrapperKey(body: unknown, path: string, allowed: string[]): [string, Record<string, unknown>] {
  if (!isObject(body)) throw badRequest('INVALID_BODY', 'the body must be a JSON object with exactly one action key', [{ path, message: 'not an object' }]);
  const keys = Object.keys(body);
  if (keys.length !== 1 || !allowed.includes(keys[0])) {
    throw badRequest('INVALID_BODY', `the body must have exactly one key, one of ${allowed.join(', ')}; got ${keys.length ? keys.map((k) => JSON.stringify(k)).join(', ') : 'none'}`, [
      { path, message: `expected exactly one of ${allowed.join(', ')}` },
    ]);
  }
  const args = body[keys[0]];
  if (!isObject(args)) throw badRequest('INVALID_BODY', `"${keys[0]}" must be an object`, [{ path: `${path}.${keys[0]}`, message: 'not an object' }]);
  return [keys[0], args];
}

function checkFields(kind: string, args: Record<string, unknown>, path: string): void {
  const spec = ACTION_FIELDS[kind];
  for (const key of spec.required) {
    if (args[key] === undefined) throw badRequest('MISSING_FIELD', `${kind} needs "${key}"`, [{ path: `${path}.${key}`, message: 'required' }]);
  }
  for (const key of Object.keys(args)) {
    if (!spec.required.includes(key) && !spec.optional.includes(key)) {
      throw badRequest('UNKNOWN_FIELD', `${kind} has no field "${key}"`, [{ path: `${path}.${key}`, message: 'unknown field' }]);
    }
  }
  for (const key of ['expressions', 'linkConsistency'] as const) {
    if (args[key] !== undefined) throw badRequest('NOT_SUPPORTED', `"${key}" is not supported by this service yet`, [{ path: `${path}.${key}`, message: 'not supported' }]);
  }
}

function str(args: Record<string, unknown>, key: string, path: string, maxLength = MAX_ID_LENGTH): string {
  const value = args[key];
  if (typeof value !== 'string' || value.length === 0 || value.length > maxLength) {
    throw badRequest('INVALID_FIELD', `"${key}" must be a non-empty string of at most ${maxLength} characters`, [{ path: `${path}.${key}`, message: 'must be a non-empty string' }]);
  }
  // No store keeps NUL in a key (PostgreSQL text cannot hold it): refused here, not by the database.
  if (value.includes('\u0000')) throw badRequest('INVALID_FIELD', `"${key}" must not contain NUL characters`, [{ path: `${path}.${key}`, message: 'contains U+0000' }]);
  return value;
}

export function isVersionNumber(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= 1 && (value as number) <= MAX_VERSION;
}

/** `expand` and `projection` are sets of names: a JSON array of strings, or a comma-separated string. */
export function nameList(value: unknown, path: string, field: string): string[] {
  if (value === undefined) return [];
  const list = typeof value === 'string' ? value.split(',').map((s) => s.trim()).filter(Boolean) : value;
  if (!Array.isArray(list) || !list.every((v) => typeof v === 'string' && v.length > 0)) {
    throw badRequest('INVALID_FIELD', `"${field}" must be an array of property names`, [{ path, message: 'must be an array of strings' }]);
  }
  return [...new Set(list as string[])];
}

export function parseConsistency(value: unknown, path: string): Consistency | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !(CONSISTENCY_LEVELS as readonly string[]).includes(value)) {
    throw badRequest('INVALID_CONSISTENCY', `"consistency" must be one of ${CONSISTENCY_LEVELS.join(', ')}`, [{ path, message: `unknown value ${JSON.stringify(value)}` }]);
  }
  return value as Consistency;
}

function data(args: Record<string, unknown>, path: string): Record<string, unknown> {
  if (!isObject(args.data)) throw badRequest('INVALID_FIELD', '"data" must be an object of property values', [{ path: `${path}.data`, message: 'must be an object' }]);
  return args.data;
}

function parseSingle(kind: string, args: Record<string, unknown>, path: string): SingleAction {
  checkFields(kind, args, path);
  const schema = str(args, 'schema', path, 255);
  const projection = args.projection === undefined ? undefined : nameList(args.projection, `${path}.projection`, 'projection');
  switch (kind) {
    case 'read': {
      let version: number | undefined;
      if (args.version !== undefined) {
        if (!isVersionNumber(args.version)) {
          throw badRequest('INVALID_FIELD', `"version" must be a positive integer of at most ${MAX_VERSION}`, [{ path: `${path}.version`, message: 'must be a positive integer' }]);
        }
        version = args.version as number;
      }
      const consistency = parseConsistency(args.consistency, `${path}.consistency`);
      return { kind, schema, id: str(args, 'id', path), version, expand: nameList(args.expand, `${path}.expand`, 'expand'), projection, ...(consistency ? { consistency } : {}) };
    }
    case 'create':
      return {
        kind,
        schema,
        id: args.id === undefined ? undefined : str(args, 'id', path),
        data: data(args, path),
        expand: nameList(args.expand, `${path}.expand`, 'expand'),
        projection,
        consistency: parseConsistency(args.consistency, `${path}.consistency`),
      };
    case 'update': {
      if (args.mode !== undefined && args.mode !== 'merge' && args.mode !== 'replace') {
        throw badRequest('INVALID_FIELD', '"mode" must be "merge" or "replace"', [{ path: `${path}.mode`, message: `unknown mode ${JSON.stringify(args.mode)}` }]);
      }
      return {
        kind,
        schema,
        id: str(args, 'id', path),
        data: data(args, path),
        merge: args.mode === 'merge',
        expand: nameList(args.expand, `${path}.expand`, 'expand'),
        projection,
        consistency: parseConsistency(args.consistency, `${path}.consistency`),
      };
    }
    default:
      return { kind: 'delete', schema, id: str(args, 'id', path), consistency: parseConsistency(args.consistency, `${path}.consistency`) };
  }
}

/** Longest filter or sort text, and nextToken, accepted in a request (model/filter.ts has the same filter limit). */
const MAX_PAGE_TEXT = 8192;

function optionalText(args: Record<string, unknown>, key: string, path: string): string | undefined {
  if (args[key] === undefined) return undefined;
  return str(args, key, path, MAX_PAGE_TEXT);
}

/** `limit` as the caller gave it; its range (1 to the maximum page) is the engine's to check. */
function limitOf(args: Record<string, unknown>, path: string): number | undefined {
  const value = args.limit;
  if (value === undefined) return undefined;
  if (!Number.isInteger(value)) throw badRequest('INVALID_LIMIT', '"limit" must be a whole number', [{ path: `${path}.limit`, message: 'must be an integer' }]);
  return value as number;
}

function parsePage(kind: 'list' | 'link', args: Record<string, unknown>, path: string): ListAction | LinkAction {
  checkFields(kind, args, path);
  const page: PageRequest = {
    filter: optionalText(args, 'filter', path),
    sort: optionalText(args, 'sort', path),
    limit: limitOf(args, path),
    nextToken: optionalText(args, 'nextToken', path),
    expand: nameList(args.expand, `${path}.expand`, 'expand'),
  };
  const schema = str(args, 'schema', path, 255);
  if (kind === 'list') return { kind, schema, ...page };
  return { kind, schema, id: str(args, 'id', path), link: str(args, 'link', path, 255), ...page };
}

/** `{"query": {schema, arguments, limit, nextToken}}`: the arguments' values are checked against the query's declaration by the engine. */
function parseQuery(args: Record<string, unknown>, path: string): QueryAction {
  checkFields('query', args, path);
  const values = args.arguments ?? {};
  if (!isObject(values)) throw badRequest('INVALID_FIELD', '"arguments" must be an object mapping argument names to values', [{ path: `${path}.arguments`, message: 'must be an object' }]);
  return { kind: 'query', schema: str(args, 'schema', path, 255), arguments: values, limit: limitOf(args, path), nextToken: optionalText(args, 'nextToken', path) };
}

export function parseStructuredRequest(body: unknown): StructuredAction {
  const [kind, args] = wrapperKey(body, '$', Object.keys(ACTION_FIELDS));
  if (kind === 'list' || kind === 'link') return parsePage(kind, args, `$.${kind}`);
  if (kind === 'query') return parseQuery(args, '$.query');
  if (kind !== 'batch') return parseSingle(kind, args, `$.${kind}`);
  checkFields('batch', args, '$.batch');
  if (!isObject(args.actions)) throw badRequest('INVALID_FIELD', '"actions" must be a map of names to actions', [{ path: '$.batch.actions', message: 'must be an object' }]);
  const order = Object.keys(args.actions);
  if (order.length === 0) throw badRequest('INVALID_FIELD', 'a batch needs at least one action', [{ path: '$.batch.actions', message: 'empty' }]);
  if (order.length > MAX_BATCH_ACTIONS) throw badRequest('BATCH_TOO_LARGE', `a batch holds at most ${MAX_BATCH_ACTIONS} actions`, [{ path: '$.batch.actions', message: `${order.length} actions` }]);
  const actions: Record<string, WriteAction> = {};
  for (const name of order) {
    const path = `$.batch.actions[${JSON.stringify(name)}]`;
    const [innerKind, innerArgs] = wrapperKey(args.actions[name], path, ['create', 'update', 'delete']);
    actions[name] = parseSingle(innerKind, innerArgs, `${path}.${innerKind}`) as WriteAction;
  }
  return { kind: 'batch', actions, order };
}
