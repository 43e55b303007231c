/**
 * The one way an operation's text becomes a document every transport runs (HTTP POST, both
 * WebSocket protocols): parsed with a token bound, validated with graphql's rules, then measured
 * against the operation limits: selection depth, aliases and cost. Without them one message could
 * ask for 1,000 aliased reads, or 300 pages of 1,000 records, in one operation.
 *
 * Cost counts the records an operation may make the engine read: a field that reads one record
 * (a query by id, a link) costs 1 per parent it is resolved for; a page (a list, an inverse link)
 * costs its `limit` (default 100) and multiplies what is selected inside its items. Fragments are
 * measured once and multiplied where they are spread, so nesting spreads cannot hide work.
 * Which fields read is declared by the schema (`extensions.reads`), not guessed from names.
 * Arguments, variables (with their defaults) and `@skip`/`@include` are read as the executor reads
 * them: graphql's own coercion (getVariableValues — through variables.ts's shortcut for scalars —,
 * getArgumentValues, getDirectiveValues) of the operation that will run, so what is measured is
 * what executes.
 *
 * Before validation, a document with more selections (fields, fragment spreads, inline fragments,
 * counted in the text, not expanded) than `maxSelections` is refused: graphql's validation compares
 * fields pairwise (OverlappingFieldsCanBeMerged), so its cost grows with the square of the
 * selections — 1,000 conflicting selections took 0.3–0.4 s, 4,000 took 0.6 s on one core. Counting
 * is one pass over the parsed document. Pure.
 */
import { DATAPLANE_DEFAULTS } from '../../../model/settings/dataplane.js';
import { withRestInputCodes } from './input-errors.js';
import { coerceVariables } from './variables.js';
import {
  getArgumentValues,
  getDirectiveValues,
  getNamedType,
  getOperationAST,
  GraphQLError,
  GraphQLIncludeDirective,
  GraphQLSkipDirective,
  isObjectType,
  Kind,
  parse,
  specifiedRules,
  validate,
  visit,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionNode,
  type SelectionSetNode,
} from 'graphql';

export interface QueryLimits {
  /** Lexical tokens in the query text. */
  maxTokens: number;
  /** Selections in the document's text (fields, fragment spreads, inline fragments), counted before validation. */
  maxSelections: number;
  /** Nesting of selection sets, fragments expanded (15: what graphql's standard introspection query needs). */
  maxDepth: number;
  /** Aliased fields, counted where fragments are spread. */
  maxAliases: number;
  /** Records the operation may make the engine read (see above). */
  maxCost: number;
}

export const DEFAULT_QUERY_LIMITS: QueryLimits = {
  maxTokens: DATAPLANE_DEFAULTS.DAS_GRAPHQL_MAX_TOKENS,
  maxSelections: DATAPLANE_DEFAULTS.DAS_GRAPHQL_MAX_SELECTIONS,
  maxDepth: DATAPLANE_DEFAULTS.DAS_GRAPHQL_MAX_DEPTH,
  maxAliases: DATAPLANE_DEFAULTS.DAS_GRAPHQL_MAX_ALIASES,
  maxCost: DATAPLANE_DEFAULTS.DAS_GRAPHQL_MAX_COST,
};

/** What a field of the schema reads: one record, or a page of them, or writes one (schema.ts sets it). */
export type FieldReads = 'record' | 'page' | 'write';

/** Records a page field reads when the operation gives no `limit` (the engine's default page). */
export const DEFAULT_PAGE_LIMIT = 100;

/** The error codes of the limits, also what the HTTP answer carries. */
export const LIMIT_CODES = { tokens: 'QUERY_TOO_LONG', selections: 'TOO_MANY_SELECTIONS', depth: 'QUERY_TOO_DEEP', aliases: 'TOO_MANY_ALIASES', cost: 'QUERY_TOO_COMPLEX' } as const;
const LIMIT_CODE_SET = new Set<string>(Object.values(LIMIT_CODES));

/** Whether an error is a refusal by one of the limits above (rather than a mistake in the query). */
export function isLimitError(err: GraphQLError): boolean {
  return LIMIT_CODE_SET.has(String(err.extensions?.code));
}

export type PreparedOperation = { document: DocumentNode; errors?: undefined } | { document?: undefined; errors: readonly GraphQLError[] };

/**
 * Parses, validates and measures an operation (the one `operationName` picks, as the executor
 * does): its document, or the errors to answer with (a wrong-typed mutation argument with REST's
 * code and status, input-errors.ts).
 */
export function prepareOperation(
  schema: GraphQLSchema,
  text: string,
  variables: Record<string, unknown> | null | undefined,
  limits: QueryLimits = DEFAULT_QUERY_LIMITS,
  operationName?: string | null,
): PreparedOperation {
  const checked = checkedDocument(schema, text, limits);
  if (checked.errors) return isLimitError(checked.errors[0]) ? checked : { errors: withRestInputCodes(checked.errors, text, operationName) };
  const document = checked.document;
  const measured = measureOperation(schema, document, variables ?? {}, operationName);
  if ('errors' in measured) return { errors: withRestInputCodes(measured.errors, document, operationName) };
  if (measured.depth > limits.maxDepth) return { errors: [limitError(LIMIT_CODES.depth, `the operation selects deeper than ${limits.maxDepth} levels`)] };
  if (measured.aliases > limits.maxAliases) return { errors: [limitError(LIMIT_CODES.aliases, `the operation has ${measured.aliases} aliased fields; at most ${limits.maxAliases} are allowed`)] };
  if (measured.cost > limits.maxCost) {
    return { errors: [limitError(LIMIT_CODES.cost, `the operation may read ${measured.cost} records; at most ${limits.maxCost} per operation (lower the limit of its lists or split it)`)] };
  }
  return { document };
}

/**
 * Documents that parsed and validated against a schema, by limits and query text: clients send
 * the same few operations over and over (the values in variables), and parsing plus validation
 * cost more than running a read by id. A schema is one config generation's (schema.ts caches it
 * per dataset config), so a new config starts empty. Bounded: texts up to CACHED_TEXT_LENGTH,
 * CACHED_DOCUMENTS per schema, least recently used out first. Only what depends on the text alone
 * is cached; the measure against the limits (it depends on the variables) runs every time.
 */
const documents = new WeakMap<GraphQLSchema, WeakMap<QueryLimits, Map<string, DocumentNode>>>();
export const CACHED_DOCUMENTS = 128;
export const CACHED_TEXT_LENGTH = 2048;
/** The schema of each document the cache holds now, and those of them served again from it (compiled.ts compiles only those). */
const cachedFor = new WeakMap<DocumentNode, GraphQLSchema>();
const reused = new WeakSet<DocumentNode>();

/**
 * Whether the document cache holds this document, validated against this schema, and has served
 * it at least twice: compiling costs a few times parsing and validating, so texts sent once (or
 * cycled through more texts than the cache holds) are never compiled.
 */
export function isReusedDocument(schema: GraphQLSchema, document: DocumentNode): boolean {
  return reused.has(document) && cachedFor.get(document) === schema;
}

function checkedDocument(schema: GraphQLSchema, text: string, limits: QueryLimits): PreparedOperation {
  const cacheable = text.length <= CACHED_TEXT_LENGTH;
  // By the limits object (one per server), then the text itself: no key string built per request.
  let cache = cacheable ? documents.get(schema)?.get(limits) : undefined;
  const hit = cache?.get(text);
  if (hit) {
    // Most recently used last: delete and re-insert.
    cache!.delete(text);
    cache!.set(text, hit);
    reused.add(hit);
    return { document: hit };
  }
  let document: DocumentNode;
  try {
    document = parse(text, { maxTokens: limits.maxTokens });
  } catch (err) {
    const e = err as GraphQLError;
    if (/contains more th\w+ \d+ tokens/.test(e.message)) return { errors: [limitError(LIMIT_CODES.tokens, `the query has more than ${limits.maxTokens} tokens`)] };
    return { errors: [e] };
  }
  const selections = countSelections(document, limits.maxSelections);
  if (selections > limits.maxSelections) {
    return { errors: [limitError(LIMIT_CODES.selections, `the query has more than ${limits.maxSelections} selections (fields and fragments); split it into smaller operations`)] };
  }
  const problems = validate(schema, document, specifiedRules);
  if (problems.length) return { errors: problems };
  if (cacheable) {
    let byLimits = documents.get(schema);
    if (!byLimits) documents.set(schema, (byLimits = new WeakMap()));
    if (!cache) byLimits.set(limits, (cache = new Map()));
    if (cache.size >= CACHED_DOCUMENTS) {
      const oldest = cache.keys().next().value!;
      cachedFor.delete(cache.get(oldest)!);
      cache.delete(oldest);
    }
    cache.set(text, document);
    cachedFor.set(document, schema);
  }
  return { document };
}

/** Fields, fragment spreads and inline fragments in the document's text, counting stopped once past `stopAfter`. Iterative: depth costs no stack. */
export function countSelections(document: DocumentNode, stopAfter = Infinity): number {
  let count = 0;
  const pending: SelectionSetNode[] = [];
  for (const d of document.definitions) if ('selectionSet' in d && d.selectionSet) pending.push(d.selectionSet);
  while (pending.length && count <= stopAfter) {
    for (const s of pending.pop()!.selections) {
      count++;
      if (s.kind !== Kind.FRAGMENT_SPREAD && s.selectionSet) pending.push(s.selectionSet);
    }
  }
  return count;
}

function limitError(code: string, message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code } });
}

interface Measure {
  depth: number;
  aliases: number;
  cost: number;
}

type Variables = Record<string, unknown>;

/**
 * graphql's `getOperationAST` (the operation `operationName` picks, or the only one; null when
 * none or several), remembered per document and name: a request asked it three times (the
 * measure, the HTTP handler, the executor), each a walk of the definitions and an array.
 */
const operations = new WeakMap<DocumentNode, Map<string | null, OperationDefinitionNode | null>>();
export function operationOf(document: DocumentNode, operationName?: string | null): OperationDefinitionNode | null {
  let byName = operations.get(document);
  if (!byName) operations.set(document, (byName = new Map()));
  const key = operationName ?? null;
  const known = byName.get(key);
  if (known !== undefined) return known;
  const operation = getOperationAST(document, operationName) ?? null;
  // Names found are bounded by the document's operations; names that find none are not, so only a few are kept.
  if (operation || byName.size < 16) byName.set(key, operation);
  return operation;
}

/** Variable coercion errors reported at most (graphql's `maxErrors`). */
export const MAX_VARIABLE_ERRORS = 10;

/**
 * The measure of the operation the executor will run, its variables coerced as the executor
 * coerces them (defaults filled in); coercion errors are the executor's own answer. Without a
 * single operation to run (several, and no operationName) the executor runs nothing: each
 * operation whose variables coerce is measured and the largest counts.
 */
export function measureOperation(schema: GraphQLSchema, document: DocumentNode, variables: Variables, operationName?: string | null): Measure | { errors: readonly GraphQLError[] } {
  const chosen = operationOf(document, operationName);
  const operations = chosen ? [chosen] : document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  const total: Measure = { depth: 0, aliases: 0, cost: 0 };
  for (const operation of operations) {
    const coerced = coerceVariables(schema, operation, variables, MAX_VARIABLE_ERRORS);
    if (coerced.errors) {
      if (chosen) return { errors: coerced.errors };
      continue;
    }
    const m = measureOf(schema, document, coerced.coerced, operation);
    total.depth = Math.max(total.depth, m.depth);
    total.aliases = Math.max(total.aliases, m.aliases);
    total.cost = Math.max(total.cost, m.cost);
  }
  return total;
}

/**
 * Measures of operations no variable can change, per document (cached per schema and text, so per
 * config generation) and operation: the measure reads variables only in `@skip`/`@include` and in
 * `limit` arguments; an operation without a variable there measures the same every request.
 */
const constantMeasures = new WeakMap<OperationDefinitionNode, Measure | null>();

function measureOf(schema: GraphQLSchema, document: DocumentNode, variables: Variables, operation: OperationDefinitionNode): Measure {
  const known = constantMeasures.get(operation);
  if (known) return known;
  const m = measure(schema, document, variables, operation);
  if (known === undefined) constantMeasures.set(operation, measureReadsVariables(document, operation) ? null : m);
  return m;
}

/** Whether a variable appears in a directive or a `limit` argument of the operation or of any fragment (fragments may be spread into it). Pure. */
export function measureReadsVariables(document: DocumentNode, operation: OperationDefinitionNode): boolean {
  let reads = false;
  const inside = { directive: 0, limit: 0 };
  const visitor = {
    Directive: { enter: () => void inside.directive++, leave: () => void inside.directive-- },
    Argument: { enter: (a: { name: { value: string } }) => void (a.name.value === 'limit' && inside.limit++), leave: (a: { name: { value: string } }) => void (a.name.value === 'limit' && inside.limit--) },
    Variable: () => void (reads ||= inside.directive > 0 || inside.limit > 0),
    VariableDefinition: () => false, // declarations (and their directives), not uses
  };
  visit(operation.selectionSet, visitor);
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) visit(d.selectionSet, visitor);
  return reads;
}

/**
 * Depth, aliases and cost of a valid document's operation with coerced variables (of each
 * operation when none is given, the largest counting). Selections `@skip`/`@include` leave out
 * are not counted.
 */
export function measure(schema: GraphQLSchema, document: DocumentNode, variables: Variables, only?: OperationDefinitionNode): Measure {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  const memo = new Map<string, Measure>();
  const total: Measure = { depth: 0, aliases: 0, cost: 0 };

  // Validation has refused fragment cycles, so the recursion ends; the memo keeps it linear.
  const fragment = (name: string): Measure => {
    let m = memo.get(name);
    if (!m) {
      const def = fragments.get(name)!;
      m = selectionSet(def.selectionSet, schema.getType(def.typeCondition.name.value));
      memo.set(name, m);
    }
    return m;
  };

  const selectionSet = (set: SelectionSetNode, parent: GraphQLNamedType | undefined | null): Measure => {
    const m: Measure = { depth: 1, aliases: 0, cost: 0 };
    const add = (inner: Measure, times: number, weight: number, extraDepth: number) => {
      m.depth = Math.max(m.depth, inner.depth + extraDepth);
      m.aliases += inner.aliases * times;
      m.cost += weight + inner.cost * times;
    };
    for (const s of set.selections) {
      if (!included(s, variables)) continue;
      if (s.kind === Kind.FRAGMENT_SPREAD) add(fragment(s.name.value), 1, 0, 0);
      else if (s.kind === Kind.INLINE_FRAGMENT) add(selectionSet(s.selectionSet, s.typeCondition ? schema.getType(s.typeCondition.name.value) : parent), 1, 0, 0);
      else {
        if (s.alias) m.aliases++;
        const { weight, fanout, type } = fieldCost(s, parent, variables);
        if (s.selectionSet) add(selectionSet(s.selectionSet, type), fanout, weight, 1);
        else m.cost += weight;
      }
    }
    return m;
  };

  for (const d of document.definitions) {
    if (d.kind !== Kind.OPERATION_DEFINITION || (only && d !== only)) continue;
    const root = d.operation === 'query' ? schema.getQueryType() : d.operation === 'subscription' ? schema.getSubscriptionType() : schema.getMutationType();
    const m = selectionSet(d.selectionSet, root);
    total.depth = Math.max(total.depth, m.depth);
    total.aliases = Math.max(total.aliases, m.aliases);
    total.cost = Math.max(total.cost, m.cost);
  }
  return total;
}

/** Whether the executor resolves a selection: `@skip(if: true)` or `@include(if: false)` leave it out (graphql's own rule). */
function included(node: SelectionNode, variables: Variables): boolean {
  if (!node.directives?.length) return true;
  try {
    if (getDirectiveValues(GraphQLSkipDirective, node, variables)?.if === true) return false;
    if (getDirectiveValues(GraphQLIncludeDirective, node, variables)?.if === false) return false;
  } catch {
    // A value the executor cannot coerce fails there; counting the selection errs on the side of more.
  }
  return true;
}

/**
 * A field's own cost and how many times what it selects is resolved (a page: once per item; a
 * write — a mutation's root field — costs 1 like a record).
 */
function fieldCost(field: FieldNode, parent: GraphQLNamedType | undefined | null, variables: Variables): { weight: number; fanout: number; type?: GraphQLNamedType } {
  if (!parent || !isObjectType(parent)) return { weight: 0, fanout: 1 };
  const def = parent.getFields()[field.name.value];
  if (!def) return { weight: 0, fanout: 1 };
  const type = getNamedType(def.type);
  const reads = def.extensions?.reads as FieldReads | undefined;
  if (reads === 'record' || reads === 'write') return { weight: 1, fanout: 1, type };
  if (reads === 'page') {
    const limit = pageLimit(def, field, variables);
    return { weight: limit, fanout: limit, type };
  }
  return { weight: 0, fanout: 1, type };
}

/** The `limit` argument as the executor gives it to the resolver (literal, variable or default), else the engine's default page. */
function pageLimit(def: GraphQLField<unknown, unknown>, field: FieldNode, variables: Variables): number {
  let value: unknown;
  try {
    value = getArgumentValues(def, field, variables).limit;
  } catch {
    value = undefined; // not coercible: the executor fails the field before it reads
  }
  // A limit the engine refuses (negative, over its maximum) is refused there; count it as asked.
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : DEFAULT_PAGE_LIMIT;
}
