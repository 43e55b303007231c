/**
 * Queries run as compiled code (graphql-jit): graphql-js's `execute` walks the document on every
 * request (collecting fields, coercing arguments, completing values through generic code) and that
 * walk was most of a GraphQL read's own cost (docs/performance.md, "GraphQL: compiled execution").
 * graphql-jit turns one operation of a document into a function once; a read by id then costs the
 * resolvers and little else.
 *
 * Compiled once per (document, operation): a document is one schema's (limits.ts caches documents
 * per schema, so per config generation), and only documents that cache holds and has served again
 * are compiled, so the compilations are bounded by it, go when their document does, and a text
 * sent once costs no compilation. Queries only: mutations run
 * through operation.ts's `@batch` path and graphql-js, subscriptions through shared-execution.ts.
 *
 * Answers are graphql-js's to the letter (compiled.test.ts compares them on PostgreSQL). The one
 * place graphql-jit words things its own way is the coercion of variables; graphql-js has coerced
 * them before (the measure, limits.ts) and answered any refusal itself.
 */
import { execute, type DocumentNode, type ExecutionArgs, type ExecutionResult, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { isReusedDocument } from './limits.js';

const compiled = new WeakMap<DocumentNode, Map<string, CompiledQuery | null>>();

/** The compiled query for this operation of a reused cached document; undefined when graphql-js runs it. */
export function compiledQueryFor(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, operationName: string | null | undefined): CompiledQuery | undefined {
  if (operation.operation !== 'query' || !isReusedDocument(schema, document)) return undefined;
  let byName = compiled.get(document);
  if (!byName) compiled.set(document, (byName = new Map()));
  const key = operationName ?? '';
  let query = byName.get(key);
  if (query === undefined) {
    const made = compileQuery(schema, document, operationName ?? undefined);
    query = isCompiledQuery(made) ? made : null;
    // Operations of one document are bounded by its text (limits.ts CACHED_TEXT_LENGTH).
    byName.set(key, query);
  }
  return query ?? undefined;
}

/**
 * Runs a compiled query. The variables were coerced by graphql-js when the operation was measured
 * (limits.ts), so graphql-jit's own (generated, cheap) coercion accepts them; should it refuse what
 * graphql-js accepted, graphql-js runs the operation.
 */
export function runCompiled(query: CompiledQuery, args: ExecutionArgs): ExecutionResult | Promise<ExecutionResult> {
  const result = query.query(args.rootValue, args.contextValue, args.variableValues ?? {});
  return isThenable(result) ? Promise.resolve(result).then((answer) => orGraphqlJs(answer, args)) : orGraphqlJs(result, args);
}

const isThenable = (value: unknown): value is PromiseLike<ExecutionResult> => typeof (value as { then?: unknown }).then === 'function';

const orGraphqlJs = (result: ExecutionResult, args: ExecutionArgs) => (result.errors && !('data' in result) ? execute(args) : result);
