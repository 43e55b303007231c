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
 * Which fields read is declared by the schema (`extensions.reads`), not guessed from names. Pure.
 */
import { DATAPLANE_DEFAULTS } from '../../../model/settings/dataplane.js';
import {
  getNamedType,
  GraphQLError,
  isObjectType,
  Kind,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLNamedType,
  type GraphQLSchema,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';

export interface QueryLimits {
  /** Lexical tokens in the query text. */
  maxTokens: number;
  /** Nesting of selection sets, fragments expanded (15: what graphql's standard introspection query needs). */
  maxDepth: number;
  /** Aliased fields, counted where fragments are spread. */
  maxAliases: number;
  /** Records the operation may make the engine read (see above). */
  maxCost: number;
}

export const DEFAULT_QUERY_LIMITS: QueryLimits = {
  maxTokens: DATAPLANE_DEFAULTS.DAS_GRAPHQL_MAX_TOKENS,
  maxDepth: DATAPLANE_DEFAULTS.DAS_GRAPHQL_MAX_DEPTH,
  maxAliases: DATAPLANE_DEFAULTS.DAS_GRAPHQL_MAX_ALIASES,
  maxCost: DATAPLANE_DEFAULTS.DAS_GRAPHQL_MAX_COST,
};

/** What a field of the schema reads: one record, or a page of them (schema.ts sets it). */
export type FieldReads = 'record' | 'page';

/** Records a page field reads when the operation gives no `limit` (the engine's default page). */
export const DEFAULT_PAGE_LIMIT = 100;

/** The error codes of the limits, also what the HTTP answer carries. */
export const LIMIT_CODES = { tokens: 'QUERY_TOO_LONG', depth: 'QUERY_TOO_DEEP', aliases: 'TOO_MANY_ALIASES', cost: 'QUERY_TOO_COMPLEX' } as const;
const LIMIT_CODE_SET = new Set<string>(Object.values(LIMIT_CODES));

/** Whether an error is a refusal by one of the limits above (rather than a mistake in the query). */
export function isLimitError(err: GraphQLError): boolean {
  return LIMIT_CODE_SET.has(String(err.extensions?.code));
}

export type PreparedOperation = { document: DocumentNode; errors?: undefined } | { document?: undefined; errors: readonly GraphQLError[] };

/** Parses, validates and measures an operation: its document, or the errors to answer with. */
export function prepareOperation(schema: GraphQLSchema, text: string, variables: Record<string, unknown> | null | undefined, limits: QueryLimits = DEFAULT_QUERY_LIMITS): PreparedOperation {
  let document: DocumentNode;
  try {
    document = parse(text, { maxTokens: limits.maxTokens });
  } catch (err) {
    const e = err as GraphQLError;
    if (/contains more th\w+ \d+ tokens/.test(e.message)) return { errors: [limitError(LIMIT_CODES.tokens, `the query has more than ${limits.maxTokens} tokens`)] };
    return { errors: [e] };
  }
  return validateDocument(schema, document, variables, limits);
}

/** The same checks on a document already parsed (with maxTokens) by someone else. */
export function validateDocument(schema: GraphQLSchema, document: DocumentNode, variables: Record<string, unknown> | null | undefined, limits: QueryLimits = DEFAULT_QUERY_LIMITS): PreparedOperation {
  const problems = validate(schema, document, specifiedRules);
  if (problems.length) return { errors: problems };
  const measured = measure(schema, document, variables ?? {});
  if (measured.depth > limits.maxDepth) return { errors: [limitError(LIMIT_CODES.depth, `the operation selects deeper than ${limits.maxDepth} levels`)] };
  if (measured.aliases > limits.maxAliases) return { errors: [limitError(LIMIT_CODES.aliases, `the operation has ${measured.aliases} aliased fields; at most ${limits.maxAliases} are allowed`)] };
  if (measured.cost > limits.maxCost) {
    return { errors: [limitError(LIMIT_CODES.cost, `the operation may read ${measured.cost} records; at most ${limits.maxCost} per operation (lower the limit of its lists or split it)`)] };
  }
  return { document };
}

function limitError(code: string, message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code } });
}

interface Measure {
  depth: number;
  aliases: number;
  cost: number;
}

/** Depth, aliases and cost of a valid document's operations (the largest of each over them). */
export function measure(schema: GraphQLSchema, document: DocumentNode, variables: Record<string, unknown>): Measure {
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
    if (d.kind !== Kind.OPERATION_DEFINITION) continue;
    const root = d.operation === 'query' ? schema.getQueryType() : d.operation === 'subscription' ? schema.getSubscriptionType() : schema.getMutationType();
    const m = selectionSet(d.selectionSet, root);
    total.depth = Math.max(total.depth, m.depth);
    total.aliases = Math.max(total.aliases, m.aliases);
    total.cost = Math.max(total.cost, m.cost);
  }
  return total;
}

/** A field's own cost and how many times what it selects is resolved (a page: once per item). */
function fieldCost(field: FieldNode, parent: GraphQLNamedType | undefined | null, variables: Record<string, unknown>): { weight: number; fanout: number; type?: GraphQLNamedType } {
  if (!parent || !isObjectType(parent)) return { weight: 0, fanout: 1 };
  const def = parent.getFields()[field.name.value];
  if (!def) return { weight: 0, fanout: 1 };
  const type = getNamedType(def.type);
  const reads = def.extensions?.reads as FieldReads | undefined;
  if (reads === 'record') return { weight: 1, fanout: 1, type };
  if (reads === 'page') {
    const limit = pageLimit(field, variables);
    return { weight: limit, fanout: limit, type };
  }
  return { weight: 0, fanout: 1, type };
}

/** The `limit` argument as the engine will see it: a literal or a variable, else the default page. */
function pageLimit(field: FieldNode, variables: Record<string, unknown>): number {
  const arg = field.arguments?.find((a) => a.name.value === 'limit');
  const value = arg ? valueOf(arg.value, variables) : undefined;
  // A limit the engine refuses (negative, over its maximum) is refused there; count it as asked.
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : DEFAULT_PAGE_LIMIT;
}

function valueOf(node: ValueNode, variables: Record<string, unknown>): unknown {
  if (node.kind === Kind.INT) return Number(node.value);
  if (node.kind === Kind.VARIABLE) return variables[node.name.value];
  return undefined;
}
