/**
 * query (docs/architecture.md "Lists, links and queries"): a named query of the dataset's `spec.queries`.
 *
 * The caller's arguments are checked against the declaration first (unknown, missing required,
 * wrong type: 400s naming `$.query.arguments.<name>`). Then:
 * - a filter-based query becomes a list page: its filter typed against the schema, each `${arg}`
 *   replaced by the argument's value converted to the compared property's type (a predicate whose
 *   optional argument is not given is left out), its sort, and page tokens bound to the query name
 *   and the arguments;
 * - an SQL-based query runs through the raw SQL machinery (rewriting, read-only connection) with
 *   `limit` as its row limit: one page, never a nextToken; more rows than `limit` is a 400
 *   ROW_LIMIT_EXCEEDED, never a silently cut answer. Keyset paging of arbitrary SQL would need a
 *   unique ORDER BY the service cannot know; a query that must page takes its own keyset argument.
 */
import { convertLiteral, FilterError, parseFilter, typeFilter, type TypedFilter, type TypedValue } from '../../../model/filter.js';
import { compileSort, sortText } from '../../../model/sort.js';
import { isSqlQuery, type DatasetConfig, type FilterQueryDef, type QueryDef, type SqlQueryDef } from '../../../model/types.js';
import type { LocationDriver, StatementContext } from './contract.js';
import type { QueryAction } from './actions.js';
import { ApiError, badRequest } from './errors.js';
import { schemaDefOf } from './layout.js';
import { limitOf, runPage, type FieldPath, type ListDeps, type Page, type PagePlan } from './lists.js';
import { encodeArgument, scalarType } from './sql/scalar-types.js';
import type { RawArgument, RawSqlRequest } from './sql/raw-request.js';

/** Runs rewritten raw SQL on the read-only connection (rawsql/handler.ts runRawSql, lent by the process wiring). */
export type SqlRunner = (dataset: DatasetConfig, driver: LocationDriver, request: RawSqlRequest, ctx: StatementContext, limits?: { rowLimit?: number }, whenServed?: () => void) => Promise<Record<string, unknown>[]>;

export interface QueryDeps<T> extends ListDeps<T> {
  /** The SQL runner bound to the dataset's driver; it checks the SQL before it asks whether the store is served. */
  sql?: (dataset: DatasetConfig, request: RawSqlRequest, ctx: StatementContext, limits: { rowLimit?: number }) => Promise<Record<string, unknown>[]>;
}

const member = (base: string, key: string) => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? `${base}.${key}` : `${base}[${JSON.stringify(key)}]`);

/** An argument as given: its canonical text (raw SQL's encoding; null when not given) and the JSON value. */
interface Given {
  param: string | null;
  value: unknown;
}

function queryOf(dataset: DatasetConfig, name: string, path: string): QueryDef {
  const queries = dataset.queries ?? {};
  const query = Object.hasOwn(queries, name) ? queries[name] : undefined;
  if (!query) {
    const known = Object.keys(queries);
    throw new ApiError(404, 'QUERY_NOT_FOUND', `dataset "${dataset.id}" has no query "${name}"${known.length ? `; its queries: ${known.join(', ')}` : ''}`, [{ path, message: 'unknown query' }]);
  }
  return query;
}

/** Checks the caller's arguments against the declaration: nothing undeclared, required ones present, each of its type. */
export function checkArguments(query: QueryDef, name: string, values: Record<string, unknown>, argAt: (name: string) => string): Map<string, Given> {
  const declared = query.arguments ?? {};
  for (const key of Object.keys(values)) {
    if (!Object.hasOwn(declared, key)) {
      const names = Object.keys(declared);
      throw badRequest('UNKNOWN_ARGUMENT', `query "${name}" has no argument "${key}"; ${names.length ? `its arguments: ${names.join(', ')}` : 'it takes none'}`, [
        { path: argAt(key), message: 'unknown argument' },
      ]);
    }
  }
  const given = new Map<string, Given>();
  for (const [key, def] of Object.entries(declared)) {
    const path = argAt(key);
    const value = Object.hasOwn(values, key) ? values[key] : undefined;
    if (value === undefined || value === null) {
      if (def.required) throw badRequest('MISSING_ARGUMENT', `query "${name}" needs the argument "${key}" (${def.type})`, [{ path, message: 'required' }]);
      given.set(key, { param: null, value: null });
      continue;
    }
    const type = scalarType(def.type);
    if (!type) throw new ApiError(500, 'INVALID_QUERY_SCHEMA', `query "${name}" declares "${key}" with an unknown type`);
    const encoded = encodeArgument(type, value);
    if (!encoded.ok) throw badRequest('INVALID_ARGUMENT', `argument "${key}" of query "${name}" (${def.type}): ${encoded.reason}; expected ${type.expects}`, [{ path, message: encoded.reason }]);
    given.set(key, { param: encoded.param, value });
  }
  return given;
}

/**
 * Replaces each `${arg}` by the argument's value in the compared property's type. A predicate
 * whose argument was not given is left out (and an and/or/not left empty with it): an optional
 * argument that is absent does not constrain. Undefined when nothing is left.
 */
export function bindFilter(filter: TypedFilter, given: Map<string, Given>, name: string, argAt: (name: string) => string): TypedFilter | undefined {
  const bind = (value: TypedValue, field: { dotted: string; type: Parameters<typeof convertLiteral>[1] }): TypedValue | undefined => {
    if (!('arg' in value)) return value;
    const arg = given.get(value.arg);
    if (!arg || arg.param === null) return undefined;
    // Numbers as their text (a long given as a string of digits), text and dates as given.
    const converted = convertLiteral(typeof arg.value === 'number' || typeof arg.value === 'boolean' ? arg.value : arg.param, field.type);
    if (converted === undefined) {
      throw badRequest('INVALID_ARGUMENT', `argument "${value.arg}" of query "${name}" does not fit ${field.dotted} (${field.type}): ${JSON.stringify(arg.value)}`, [
        { path: argAt(value.arg), message: `not a valid ${field.type} for ${field.dotted}` },
      ]);
    }
    return { value: converted };
  };
  const visit = (f: TypedFilter): TypedFilter | undefined => {
    switch (f.kind) {
      case 'and':
      case 'or': {
        const items = f.items.map(visit).filter((item): item is TypedFilter => item !== undefined);
        return items.length === 0 ? undefined : items.length === 1 ? items[0] : { kind: f.kind, items };
      }
      case 'not': {
        const item = visit(f.item);
        return item && { kind: 'not', item };
      }
      case 'null':
        return f;
      case 'compare': {
        const value = bind(f.value, f.field);
        return value && { ...f, value };
      }
      case 'in': {
        const values = f.values.map((v) => bind(v, f.field)).filter((v): v is TypedValue => v !== undefined);
        return values.length ? { ...f, values } : undefined;
      }
    }
  };
  return visit(filter);
}

/** Canonical JSON of the given arguments (sorted names): what page tokens are bound to. */
function canonicalArguments(given: Map<string, Given>): string {
  return JSON.stringify([...given.entries()].filter(([, g]) => g.param !== null).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, g]) => [k, g.param]));
}

/** A query schema the config should never hold (the spec was validated): not the caller's fault. */
function brokenQuery(name: string, err: unknown): ApiError {
  return new ApiError(500, 'INVALID_QUERY_SCHEMA', `query "${name}" of this dataset is invalid: ${(err as Error).message}`);
}

async function filterQueryPage<T>(deps: QueryDeps<T>, dataset: DatasetConfig, name: string, query: FilterQueryDef, action: Omit<QueryAction, 'kind'>, given: Map<string, Given>, at: FieldPath, argAt: (name: string) => string, ctx?: StatementContext): Promise<Page<T>> {
  const def = schemaDefOf(dataset, query.schema);
  if (!def) throw brokenQuery(name, new Error(`no schema "${query.schema}"`));
  let typed: TypedFilter | undefined;
  let sort;
  try {
    typed = query.filter === undefined ? undefined : typeFilter(parseFilter(query.filter), def, { arguments: new Set(given.keys()) });
    sort = compileSort(query.sort, def);
  } catch (err) {
    if (err instanceof FilterError) throw brokenQuery(name, err);
    throw err;
  }
  const filter = typed && bindFilter(typed, given, name, argAt);
  const limit = limitOf(action.limit, at('limit'));
  const binding = { dataset: dataset.id, target: `query:${name}`, filter: filter ? JSON.stringify(filter) : '', sort: sortText(sort), arguments: canonicalArguments(given) };
  const after = action.nextToken === undefined ? undefined : (deps.tokens().open(action.nextToken, binding) as unknown[]);
  const plan: PagePlan = { schema: query.schema, filter, sort, limit, binding, after };
  return runPage(deps, dataset, plan, [], ctx);
}

async function sqlQueryPage<T>(deps: QueryDeps<T>, dataset: DatasetConfig, name: string, query: SqlQueryDef, action: Omit<QueryAction, 'kind'>, given: Map<string, Given>, at: FieldPath, ctx?: StatementContext): Promise<Page<Record<string, unknown>>> {
  if (action.nextToken !== undefined) {
    throw badRequest('INVALID_NEXT_TOKEN', `query "${name}" is SQL-based: it answers one page and takes no nextToken`, [{ path: at('nextToken'), message: 'SQL queries are not paged' }]);
  }
  const limit = limitOf(action.limit, at('limit'));
  if (!deps.sql) throw new ApiError(501, 'NOT_AVAILABLE', 'SQL-based queries are not available on this data plane');
  const args = new Map<string, RawArgument>();
  for (const [key, def] of Object.entries(query.arguments ?? {})) args.set(key, { name: key, type: scalarType(def.type)!, param: given.get(key)?.param ?? null });
  const request: RawSqlRequest = { sql: query.sql, using: new Map(Object.entries(query.using ?? {})), arguments: args };
  try {
    return { items: await deps.sql(dataset, request, ctx ?? {}, { rowLimit: limit }) };
  } catch (err) {
    if (err instanceof ApiError && err.code === 'ROW_LIMIT_EXCEEDED') {
      throw badRequest('ROW_LIMIT_EXCEEDED', `query "${name}" returns more than ${limit} rows (limit); raise "limit" (at most 1000) or narrow it with its arguments — SQL queries answer one page`, [
        { path: at('limit'), message: `more than ${limit} rows` },
      ]);
    }
    // Problems in the query's own SQL name the query, not the caller's request.
    if (err instanceof ApiError && err.status === 400) throw new ApiError(400, err.code, `query "${name}": ${err.message}`, err.details.map((d) => (d.path === '$.sql' ? { ...d, path: at('schema') } : d)));
    throw err;
  }
}

/**
 * A page of a named query. `at` names the request's fields in errors (`$.query.limit`), `argAt`
 * its arguments (`$.query.arguments.postcode`; on GET the query parameter `query:postcode`).
 */
export async function queryPage<T>(
  deps: QueryDeps<T>,
  dataset: DatasetConfig,
  action: Omit<QueryAction, 'kind'>,
  at: FieldPath,
  ctx?: StatementContext,
  argAt: (name: string) => string = (key) => member(at('arguments'), key),
): Promise<Page<T | Record<string, unknown>>> {
  const query = queryOf(dataset, action.schema, at('schema'));
  const given = checkArguments(query, action.schema, action.arguments, argAt);
  if (isSqlQuery(query)) return sqlQueryPage(deps, dataset, action.schema, query, action, given, at, ctx);
  return filterQueryPage(deps, dataset, action.schema, query, action, given, at, argAt, ctx);
}

const NUMERIC = new Set(['integer', 'long', 'float', 'double', 'decimal', 'number']);

/**
 * Arguments given as text (GET query parameters) as the JSON values their declared types take:
 * numbers for numeric types (a long or decimal beyond a double's precision stays text, which those
 * types accept), true/false for booleans, parsed JSON for json. Anything that does not convert is
 * passed on as text, so the argument check names it; undeclared names too.
 */
export function argumentsFromText(dataset: DatasetConfig, name: string, texts: Record<string, string>): Record<string, unknown> {
  const declared = (dataset.queries ?? {})[name]?.arguments ?? {};
  const values: Record<string, unknown> = {};
  for (const [key, text] of Object.entries(texts)) {
    const type = Object.hasOwn(declared, key) ? declared[key].type : undefined;
    let value: unknown = text;
    if (type && NUMERIC.has(type) && /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(text)) {
      const n = Number(text);
      value = Number.isFinite(n) && (String(n) === text || !['long', 'decimal'].includes(type)) ? n : text;
    } else if (type === 'boolean' && (text === 'true' || text === 'false')) value = text === 'true';
    else if (type === 'json') {
      try {
        value = JSON.parse(text);
      } catch {
        value = text;
      }
    }
    Object.defineProperty(values, key, { value, enumerable: true, writable: true, configurable: true });
  }
  return values;
}
