/**
 * Query schemas (`spec.queries`, docs/architecture.md "Lists, links and queries"): the cross-checks JSON
 * Schema cannot express, shared by `npm start` and the operator. A filter-based query's filter and
 * sort are parsed and typed with the same functions a list request uses; an SQL query's `${arg}`
 * and `@{alias.path}` tokens are checked against its arguments, `using` and the schemas.
 */
import { FilterError, parseFilter, typeFilter, type FieldType, type TypedFilter } from './filter.js';
import { INHERITED_NAMES, inheritedNameMessage } from './inherited-names.js';
import { kindFacts } from './location-kinds.js';
import { parseSort, typeSort } from './sort.js';
import { isSqlQuery, type DatasetSpec, type FilterQueryDef, type PropertyDef, type QueryArgumentType, type QueryDef, type SqlQueryDef } from './types.js';
import type { SpecProblem } from './validate.js';

/** Which declared argument types a filter may compare with a property of each type. */
export const ARGUMENT_TYPES_FOR_FIELD: Readonly<Record<FieldType, readonly QueryArgumentType[]>> = {
  string: ['string', 'text', 'uuid'],
  link: ['string', 'text', 'uuid'],
  integer: ['integer', 'long'],
  number: ['number', 'double', 'float', 'decimal', 'integer', 'long'],
  boolean: ['boolean'],
  date: ['date'],
  timestamp: ['timestamp'],
};

const member = (base: string, key: string) => (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? `${base}.${key}` : `${base}[${JSON.stringify(key)}]`);

/** Each `${arg}` of a typed filter with the field it is compared with. */
export function argumentUses(filter: TypedFilter): { name: string; pos: number; field: { dotted: string; type: FieldType } }[] {
  const uses: { name: string; pos: number; field: { dotted: string; type: FieldType } }[] = [];
  const visit = (f: TypedFilter) => {
    if (f.kind === 'and' || f.kind === 'or') f.items.forEach(visit);
    else if (f.kind === 'not') visit(f.item);
    else if (f.kind === 'compare' || f.kind === 'in') {
      for (const v of f.kind === 'compare' ? [f.value] : f.values) if ('arg' in v) uses.push({ name: v.arg, pos: v.pos, field: f.field });
    }
  };
  visit(filter);
  return uses;
}

export function checkQueries(spec: DatasetSpec, base = '$.spec'): SpecProblem[] {
  const problems: SpecProblem[] = [];
  for (const [name, query] of Object.entries(spec.queries ?? {})) {
    const path = member(`${base}.queries`, name);
    const raw = query as Partial<FilterQueryDef & SqlQueryDef>;
    if (raw.schema !== undefined && raw.sql !== undefined) {
      problems.push({ path, message: 'a query has either "schema" (filter-based) or "sql" (SQL-based), not both' });
    } else if (raw.schema === undefined && raw.sql === undefined) {
      problems.push({ path, message: 'a query needs "schema" (filter-based: schema, filter, sort) or "sql" (SQL-based: sql, using)' });
    } else if (isSqlQuery(query as QueryDef)) problems.push(...checkSqlQuery(spec, query as SqlQueryDef, path));
    else problems.push(...checkFilterQuery(spec, query as FilterQueryDef, path));
  }
  return problems;
}

function checkFilterQuery(spec: DatasetSpec, query: FilterQueryDef, path: string): SpecProblem[] {
  const problems: SpecProblem[] = [];
  if ((query as { using?: unknown }).using !== undefined) problems.push({ path: `${path}.using`, message: 'only an SQL query has "using"' });
  const schema = Object.hasOwn(spec.schemas, query.schema) ? spec.schemas[query.schema] : undefined;
  if (!schema) return [...problems, { path: `${path}.schema`, message: `"${query.schema}" is not a schema of this dataset` }];
  const declared = query.arguments ?? {};
  problems.push(...reservedArguments(declared, path));
  const used = new Set<string>();
  if (query.filter !== undefined) {
    try {
      const typed = typeFilter(parseFilter(query.filter), schema, { arguments: new Set(Object.keys(declared)) });
      for (const use of argumentUses(typed)) {
        used.add(use.name);
        const type = declared[use.name].type;
        const fits = ARGUMENT_TYPES_FOR_FIELD[use.field.type];
        if (!fits.includes(type)) {
          problems.push({
            path: `${member(`${path}.arguments`, use.name)}.type`,
            message: `${type} does not fit ${use.field.dotted} (${use.field.type}) compared with \${${use.name}} at position ${use.pos}; declare it as ${fits.join(', ')}`,
          });
        }
      }
    } catch (err) {
      if (!(err instanceof FilterError)) throw err;
      problems.push({ path: `${path}.filter`, message: err.message });
    }
  }
  if (query.sort !== undefined) {
    try {
      typeSort(parseSort(query.sort), schema);
    } catch (err) {
      if (!(err instanceof FilterError)) throw err;
      problems.push({ path: `${path}.sort`, message: err.message });
    }
  }
  const filterOk = !problems.some((p) => p.path === `${path}.filter`);
  for (const name of Object.keys(declared)) {
    if (filterOk && !used.has(name)) problems.push({ path: member(`${path}.arguments`, name), message: `argument "${name}" is declared but the filter does not use \${${name}}` });
  }
  return problems;
}

function checkSqlQuery(spec: DatasetSpec, query: SqlQueryDef, path: string): SpecProblem[] {
  const kind = spec.location.kind;
  if (!kindFacts(kind).sql) {
    return [{ path: `${path}.sql`, message: `SQL queries run only on SQL locations; ${kind} (${kindFacts(kind).title}) has no SQL engine: write a filter-based query (schema, filter, sort)` }];
  }
  const problems: SpecProblem[] = [];
  for (const key of ['filter', 'sort'] as const) {
    if ((query as unknown as Record<string, unknown>)[key] !== undefined) problems.push({ path: `${path}.${key}`, message: `only a filter-based query (with "schema") has "${key}"` });
  }
  if (query.sql.trim() === '') return [...problems, { path: `${path}.sql`, message: 'must not be blank' }];
  const using = query.using ?? {};
  for (const [alias, schemaName] of Object.entries(using)) {
    if (!Object.hasOwn(spec.schemas, schemaName)) problems.push({ path: member(`${path}.using`, alias), message: `"${schemaName}" is not a schema of this dataset` });
  }
  const declared = query.arguments ?? {};
  problems.push(...reservedArguments(declared, path));
  const used = new Set<string>();
  for (const token of sqlTokens(query.sql)) {
    const at = `${token.kind}{${token.body}} at position ${token.pos}`;
    const names = token.body.split('.');
    if (!names.every((n) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(n)) || (token.kind === '$' && names.length > 1)) {
      problems.push({ path: `${path}.sql`, message: `${at}: write \${argument}, @{alias} or @{alias.property.path}` });
    } else if (token.kind === '$') {
      used.add(token.body);
      if (!Object.hasOwn(declared, token.body)) problems.push({ path: `${path}.sql`, message: `${at}: argument "${token.body}" is not declared in "arguments"` });
    } else if (!Object.hasOwn(using, names[0])) {
      problems.push({ path: `${path}.sql`, message: `${at}: alias "${names[0]}" is not declared in "using"` });
    } else if (names.length > 1 && Object.hasOwn(spec.schemas, using[names[0]])) {
      const problem = propertyProblem(spec.schemas[using[names[0]]].properties, names.slice(1));
      if (problem) problems.push({ path: `${path}.sql`, message: `${at}: ${problem}` });
    }
  }
  for (const name of Object.keys(declared)) {
    if (!used.has(name)) problems.push({ path: member(`${path}.arguments`, name), message: `argument "${name}" is declared but the SQL does not use \${${name}}` });
  }
  return problems;
}

/** `GET /{dataset}/queries/{name}` takes arguments as query parameters next to these. */
const RESERVED_ARGUMENT_NAMES = ['limit', 'nextToken'];

function reservedArguments(declared: Record<string, unknown>, path: string): SpecProblem[] {
  const problemOf = (name: string): string | undefined =>
    RESERVED_ARGUMENT_NAMES.includes(name) ? `"${name}" is reserved (a query's page parameter); name the argument otherwise` : INHERITED_NAMES.has(name) ? inheritedNameMessage(name, 'argument') : undefined;
  return Object.keys(declared).flatMap((name) => {
    const message = problemOf(name);
    return message === undefined ? [] : [{ path: member(`${path}.arguments`, name), message }];
  });
}

/** What the raw SQL rewriter resolves `@{alias.path}` to: a scalar leaf, a link (or its `.id`), a system column. */
function propertyProblem(props: Record<string, PropertyDef>, path: string[]): string | undefined {
  if (path.length === 1 && ['id', 'version', 'createdAt', 'updatedAt'].includes(path[0])) return undefined;
  let current = props;
  for (let i = 0; i < path.length; i++) {
    const prop = Object.hasOwn(current, path[i]) ? current[path[i]] : undefined;
    const sofar = path.slice(0, i + 1).join('.');
    if (!prop) return `no property "${sofar}"`;
    const last = i === path.length - 1;
    if (prop.type === 'object') {
      if (last) return `"${sofar}" is an object; name one of its properties`;
      current = prop.properties;
    } else if (prop.type === 'link') {
      return last || (i === path.length - 2 && path[i + 1] === 'id') ? undefined : `"${sofar}" is a link: only ${sofar}.id is a column`;
    } else if (prop.type === 'links') {
      return `"${sofar}" is an inverse link (not stored)`;
    } else if (!last) return `"${sofar}" is a ${prop.type}, it has no property "${path[i + 1]}"`;
  }
  return undefined;
}

export interface SqlToken {
  kind: '$' | '@';
  body: string;
  /** 1-based character position of the token in the SQL. */
  pos: number;
}

/**
 * The `${…}` / `@{…}` tokens of SQL code, skipping what PostgreSQL would not read as code: '…'
 * literals (E'…' with backslash escapes), "…" identifiers, $tag$…$tag$ strings, -- and nested
 * block comments. The data plane's rewriter (dataplane/src/rawsql/rewrite.ts) is the authority at
 * run time; this lighter scan lets the operator check a query before it is published, and a test
 * holds the two to the same tokens.
 */
export function sqlTokens(sql: string): SqlToken[] {
  const tokens: SqlToken[] = [];
  const skipQuoted = (start: number, quote: string, backslash: boolean) => {
    let i = start + 1;
    while (i < sql.length) {
      if (backslash && sql[i] === '\\') i += 2;
      else if (sql[i] === quote) {
        if (sql[i + 1] !== quote) return i + 1;
        i += 2;
      } else i++;
    }
    return sql.length;
  };
  let i = 0;
  while (i < sql.length) {
    const c = sql[i];
    const next = sql[i + 1];
    if (c === "'" || c === '"') i = skipQuoted(i, c, false);
    else if ((c === 'E' || c === 'e') && next === "'" && !/[A-Za-z0-9_$]/.test(sql[i - 1] ?? '')) i = skipQuoted(i + 1, "'", true);
    else if (c === '-' && next === '-') {
      const eol = sql.indexOf('\n', i);
      i = eol === -1 ? sql.length : eol + 1;
    } else if (c === '/' && next === '*') {
      let depth = 0;
      while (i < sql.length) {
        if (sql.startsWith('/*', i)) (depth++, (i += 2));
        else if (sql.startsWith('*/', i)) {
          i += 2;
          if (--depth === 0) break;
        } else i++;
      }
    } else if ((c === '$' || c === '@') && next === '{') {
      const close = sql.indexOf('}', i + 2);
      const end = close === -1 ? sql.length : close;
      tokens.push({ kind: c, body: sql.slice(i + 2, end), pos: [...sql.slice(0, i)].length + 1 });
      i = end + 1;
    } else if (c === '$') {
      const tag = /^\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i, i + 100));
      if (tag && !/[A-Za-z0-9_]/.test(sql[i - 1] ?? '')) {
        const close = sql.indexOf(tag[0], i + tag[0].length);
        i = close === -1 ? sql.length : close + tag[0].length;
      } else i++;
    } else if (/[A-Za-z_]/.test(c)) {
      while (i < sql.length && /[A-Za-z0-9_$]/.test(sql[i]) && !(sql[i] === '$' && sql[i + 1] === '{')) i++;
    } else i++;
  }
  return tokens;
}

/** Whether a dataset declares SQL-based queries (they need the read-only connection even with the raw SQL endpoint off). */
export function hasSqlQueries(dataset: { queries?: Record<string, QueryDef> }): boolean {
  return Object.values(dataset.queries ?? {}).some(isSqlQuery);
}
