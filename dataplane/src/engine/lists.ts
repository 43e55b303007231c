/**
 * list and link (docs/architecture.md "Lists, links and queries"): the request's filter and sort compiled
 * against the schema, the page token opened and checked, one driver call for limit + 1 records
 * (the extra one says whether a next page exists), and the next token signed from the last record.
 */
import { compileFilter, fieldValue, FilterError, type TypedFilter } from '../../../model/filter.js';
import { compileSort, sortText, type SortKey } from '../../../model/sort.js';
import type { DatasetConfig, LinksProperty, RecordSchemaDef } from '../../../model/types.js';
import type { LocationDriver, StatementContext, StoredRecord } from './contract.js';
import type { LinkAction, ListAction, PageRequest } from './actions.js';
import { ApiError, badRequest } from './errors.js';
import { fieldsOf, schemaDefOf, type Field } from './layout.js';
import type { PageBinding, PageTokens } from './page-token.js';

export const DEFAULT_PAGE_LIMIT = 100;
export const MAX_PAGE_LIMIT = 1000;

export interface Page<T> {
  items: T[];
  nextToken?: string;
}

/** What the engine lends the list code: its driver, tokens, and how it presents records. */
export interface ListDeps<T> {
  driver(dataset: DatasetConfig): LocationDriver;
  tokens(): PageTokens;
  /** Checks `expand` names against a schema (400 naming the path). */
  expandFields(dataset: DatasetConfig, schema: string, names: string[], path: string): Field[];
  present(dataset: DatasetConfig, stored: StoredRecord[], expand: Field[], ctx?: StatementContext): Promise<T[]>;
}

/** Where the request's fields are named in errors: `$.list.filter`, or `query:filter` on GET. */
export type FieldPath = (field: string) => string;

function schemaOf(dataset: DatasetConfig, schema: string, path: string): RecordSchemaDef {
  const def = schemaDefOf(dataset, schema);
  if (!def) throw new ApiError(404, 'SCHEMA_NOT_FOUND', `dataset "${dataset.id}" has no schema "${schema}"`, [{ path, message: 'unknown schema' }]);
  return def;
}

export function limitOf(limit: number | undefined, path: string): number {
  if (limit === undefined) return DEFAULT_PAGE_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_LIMIT) {
    throw badRequest('INVALID_LIMIT', `"limit" must be a whole number from 1 to ${MAX_PAGE_LIMIT}`, [{ path, message: `${limit} is out of range` }]);
  }
  return limit;
}

/** A filter or sort problem as a 400 naming the field and the character position. */
function compiled<R>(code: string, path: string, run: () => R): R {
  try {
    return run();
  } catch (err) {
    if (err instanceof FilterError) throw badRequest(code, `${path.replace(/^query:/, '')}: ${err.message}`, [{ path, position: err.position, message: err.message }]);
    throw err;
  }
}

export interface PagePlan {
  schema: string;
  filter?: TypedFilter;
  sort: SortKey[];
  limit: number;
  binding: PageBinding;
  after?: unknown[];
}

function planPage(dataset: DatasetConfig, schema: string, def: RecordSchemaDef, request: PageRequest, at: FieldPath, target: string, tokens: PageTokens): PagePlan {
  const filter = request.filter === undefined ? undefined : compiled('INVALID_FILTER', at('filter'), () => compileFilter(request.filter!, def));
  const sort = compiled('INVALID_SORT', at('sort'), () => compileSort(request.sort, def));
  const limit = limitOf(request.limit, at('limit'));
  const binding: PageBinding = { dataset: dataset.id, target, filter: filter ? JSON.stringify(filter) : '', sort: sortText(sort) };
  const after = request.nextToken === undefined ? undefined : (tokens.open(request.nextToken, binding) as unknown[]);
  return { schema, filter, sort, limit, binding, after };
}

export async function runPage<T>(deps: ListDeps<T>, dataset: DatasetConfig, plan: PagePlan, expand: Field[], ctx?: StatementContext, scope?: TypedFilter): Promise<Page<T>> {
  const driver = deps.driver(dataset);
  if (!driver.capabilities.list || !driver.list) throw new ApiError(501, 'NOT_AVAILABLE', `list is not available on ${driver.kind} locations yet`);
  const filter = scope && plan.filter ? { kind: 'and' as const, items: [scope, plan.filter] } : (scope ?? plan.filter);
  const rows = await driver.list(dataset, plan.schema, { filter, sort: plan.sort, limit: plan.limit + 1, after: plan.after }, ctx);
  const more = rows.length > plan.limit;
  const stored = more ? rows.slice(0, plan.limit) : rows;
  const items = await deps.present(dataset, stored, expand, ctx);
  if (!more) return { items };
  const last = stored[stored.length - 1];
  return { items, nextToken: deps.tokens().issue(plan.binding, plan.sort.map((key) => fieldValue(last, key.field))) };
}

export async function listPage<T>(deps: ListDeps<T>, dataset: DatasetConfig, action: Omit<ListAction, 'kind'>, at: FieldPath, ctx?: StatementContext): Promise<Page<T>> {
  const def = schemaOf(dataset, action.schema, at('schema'));
  const expand = deps.expandFields(dataset, action.schema, action.expand, at('expand'));
  const plan = planPage(dataset, action.schema, def, action, at, `list:${action.schema}`, deps.tokens());
  return runPage(deps, dataset, plan, expand, ctx);
}

/**
 * The records a link leads to. A to-one link (`link`) gives the target, at most one record; an
 * inverse link (`links`) pages over the source schema's records whose link points here. Filter,
 * sort and expand apply to the records of the page (the target schema).
 */
export async function linkPage<T>(deps: ListDeps<T>, dataset: DatasetConfig, action: Omit<LinkAction, 'kind'>, at: FieldPath, ctx?: StatementContext): Promise<Page<T>> {
  const def = schemaOf(dataset, action.schema, at('schema'));
  const prop = Object.hasOwn(def.properties, action.link) ? def.properties[action.link] : undefined;
  const toOne = fieldsOf(def).find((f) => f.type === 'link' && f.dotted === action.link);
  if (!toOne && prop?.type !== 'links') {
    const links = [...fieldsOf(def).filter((f) => f.type === 'link').map((f) => f.dotted), ...Object.entries(def.properties).filter(([, p]) => p.type === 'links').map(([name]) => name)];
    throw new ApiError(404, 'LINK_NOT_FOUND', `${action.schema} has no link "${action.link}"; links: ${links.join(', ') || 'none'}`, [{ path: at('link'), message: 'unknown link' }]);
  }
  const targetSchema = toOne ? toOne.target! : (prop as LinksProperty).schema;
  const targetDef = schemaOf(dataset, targetSchema, at('link'));
  const expand = deps.expandFields(dataset, targetSchema, action.expand, at('expand'));
  const plan = planPage(dataset, targetSchema, targetDef, action, at, `link:${action.schema}/${action.id}/${action.link}`, deps.tokens());
  const source = await deps.driver(dataset).read(dataset, { schema: action.schema, id: action.id }, ctx);
  if (!source) throw new ApiError(404, 'RECORD_NOT_FOUND', `no ${action.schema} record with id "${action.id}"`, [{ path: at('id'), message: 'no such record' }]);
  let scope: TypedFilter;
  if (toOne) {
    const targetId = fieldValue(source, { path: toOne.path, dotted: `${toOne.dotted}.id`, type: 'link' });
    if (targetId === null) return { items: [] };
    scope = { kind: 'compare', op: '==', field: { path: ['id'], dotted: 'id', type: 'string', system: 'id' }, value: { value: targetId } };
  } else {
    const { property } = prop as LinksProperty;
    scope = { kind: 'compare', op: '==', field: { path: [property], dotted: `${property}.id`, type: 'link' }, value: { value: action.id } };
  }
  return runPage(deps, dataset, plan, expand, ctx, scope);
}
