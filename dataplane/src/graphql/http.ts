/**
 * GraphQL queries over HTTP: POST /{dataset}/graphql with `{query, variables?, operationName?}`
 * (the front door has authenticated the caller and parsed the JSON body). Answers `{data, errors}`
 * with 200 as GraphQL-over-HTTP clients expect; a body that is no GraphQL request is a 400 naming
 * the field, and a subscription over HTTP a 400 pointing at the WebSocket. Mutations write through
 * the record engine as REST does (mutation-schema.ts, operation.ts).
 */
import { GraphQLError, type ExecutionResult } from 'graphql';
import { ApiError, badRequest } from '../engine/errors.js';
import type { DatasetConfig } from '../../../model/types.js';
import type { StatementContext } from '../engine/contract.js';
import type { RecordEngine } from '../engine/engine.js';
import { datasetSchema } from './schema.js';
import { executeOperation } from './operation.js';
import { DEFAULT_QUERY_LIMITS, isLimitError, operationOf, prepareOperation, type QueryLimits } from './limits.js';

export interface GraphQLRequest {
  query: string;
  variables?: Record<string, unknown>;
  operationName?: string;
}

/** Longest query text accepted (the body limit bounds it too). */
export const MAX_QUERY_LENGTH = 100_000;

const REQUEST_FIELDS: ReadonlySet<string> = new Set(['query', 'variables', 'operationName', 'extensions']);

/** Checks the body's shape: 400 with the JSON path of the first problem. */
export function parseGraphQLRequest(body: unknown): GraphQLRequest {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw badRequest('INVALID_BODY', 'send a GraphQL request: {"query": "…", "variables": {…}}', [{ path: '$', message: 'not an object' }]);
  const b = body as Record<string, unknown>;
  for (const key in b) {
    if (Object.hasOwn(b, key) && !REQUEST_FIELDS.has(key)) throw badRequest('INVALID_BODY', `unknown field "${key}"`, [{ path: `$.${key}`, message: 'unknown field' }]);
  }
  if (typeof b.query !== 'string' || !b.query.trim()) throw badRequest('INVALID_BODY', 'query must be a GraphQL document', [{ path: '$.query', message: 'missing or not a string' }]);
  if (b.query.length > MAX_QUERY_LENGTH) throw badRequest('QUERY_TOO_LONG', `query is longer than ${MAX_QUERY_LENGTH} characters`, [{ path: '$.query', message: 'too long' }]);
  if (b.variables !== undefined && b.variables !== null && (typeof b.variables !== 'object' || Array.isArray(b.variables))) {
    throw badRequest('INVALID_BODY', 'variables must be an object', [{ path: '$.variables', message: 'not an object' }]);
  }
  if (b.operationName !== undefined && b.operationName !== null && typeof b.operationName !== 'string') {
    throw badRequest('INVALID_BODY', 'operationName must be a string', [{ path: '$.operationName', message: 'not a string' }]);
  }
  return { query: b.query, variables: (b.variables as Record<string, unknown> | null) ?? undefined, operationName: (b.operationName as string | null) ?? undefined };
}

/** Runs a query, a mutation (operation.ts) or introspection against the dataset's schema; an operation over a limit (limits.ts) is a 400 naming it. */
export function runGraphQLQuery(engine: RecordEngine, dataset: DatasetConfig, request: GraphQLRequest, ctx?: StatementContext, limits: QueryLimits = DEFAULT_QUERY_LIMITS): Promise<Record<string, unknown>> {
  // Not async: the answer is one `then` on the execution's promise (no frame of its own); a refusal is the promise's.
  try {
    const schema = datasetSchema(dataset);
    const prepared = prepareOperation(schema, request.query, request.variables, limits, request.operationName);
    if (prepared.errors) {
      const limit = prepared.errors.find(isLimitError);
      if (limit) throw badRequest(String(limit.extensions.code), limit.message, [{ path: '$.query', message: limit.message }]);
      return Promise.resolve({ errors: prepared.errors.map((p) => p.toJSON()) });
    }
    const document = prepared.document;
    const operation = operationOf(document, request.operationName);
    if (!operation) return Promise.resolve({ errors: [new GraphQLError(request.operationName ? `no operation named "${request.operationName}"` : 'name the operation to run (operationName)').toJSON()] });
    if (operation.operation === 'subscription') {
      throw new ApiError(400, 'SUBSCRIPTION_OVER_HTTP', 'subscriptions are served over WebSocket at this path (protocols graphql-transport-ws and graphql-ws)', [{ path: '$.query', message: 'a subscription' }]);
    }
    return executeOperation({ schema, document, variableValues: request.variables, operationName: request.operationName, contextValue: { engine, dataset, ctx } }).then(answerOf);
  } catch (err) {
    return Promise.reject(err);
  }
}

const answerOf = (result: ExecutionResult): Record<string, unknown> => (result.errors ? { errors: result.errors.map((e) => e.toJSON()), data: result.data ?? null } : { data: result.data ?? null });
