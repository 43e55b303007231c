/**
 * How every transport executes a query or mutation (HTTP POST, graphql-transport-ws, the older
 * graphql-ws): a query of a cached document as compiled code (compiled.ts), anything else through
 * graphql's `execute`, except for a mutation marked `@batch`. Its root fields are
 * first collected as the executor would (fragments, `@skip`/`@include`, one action per response
 * name), their arguments coerced by graphql, and run as one REST batch (`{"batch": {"actions":
 * {<response name>: {"create": …}}}}`, REST's parser and the record engine); then the operation is
 * executed with the batch's outcomes, so each field answers its own result or error and selects
 * from it as usual. A batch the engine refuses as a whole (at ATOMIC, one failed action) is the
 * operation's only error, with REST's code and status, and `data` is null.
 */
import {
  execute,
  getArgumentValues,
  getDirectiveValues,
  GraphQLIncludeDirective,
  GraphQLSkipDirective,
  Kind,
  type ExecutionArgs,
  type ExecutionResult,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import type { Consistency } from '../../../model/types.js';
import { parseStructuredRequest } from '../engine/actions.js';
import type { ApiError } from '../engine/errors.js';
import { BatchDirective, batchEntryOf, restAction, type WriteField, type WriteResult } from './mutation-schema.js';
import { graphqlErrorOf, type GraphQLContext } from './schema.js';
import { withRestInputCodes } from './input-errors.js';
import { MAX_VARIABLE_ERRORS, operationOf } from './limits.js';
import { coerceVariables } from './variables.js';
import { compiledQueryFor, runCompiled } from './compiled.js';

/**
 * Runs the operation; a wrong-typed mutation argument met while executing carries REST's code and
 * status (input-errors.ts). Never throws: a failure is the promise's. Not async itself: one `then`
 * on the execution's promise, no frame of its own.
 */
export function executeOperation(args: ExecutionArgs): Promise<ExecutionResult> {
  try {
    const result = executeWithBatch(args);
    return result instanceof Promise ? result.then((r) => withInputCodes(r, args)) : Promise.resolve(withInputCodes(result, args));
  } catch (err) {
    return Promise.reject(err);
  }
}

function withInputCodes(result: ExecutionResult, args: ExecutionArgs): ExecutionResult {
  return result.errors ? { ...result, errors: withRestInputCodes(result.errors, args.document, args.operationName) } : result;
}

/** Not async itself: a compiled query's promise (or answer) comes back without a promise and a turn of its own. */
function executeWithBatch(args: ExecutionArgs): ExecutionResult | Promise<ExecutionResult> {
  const operation = operationOf(args.document, args.operationName);
  const compiled = operation && compiledQueryFor(args.schema, args.document, operation, args.operationName);
  if (compiled) return runCompiled(compiled, args);
  const marked = operation?.operation === 'mutation' && operation.directives?.some((d) => d.name.value === BatchDirective.name);
  if (!operation || !marked) return execute(args);
  return executeBatch(args, operation);
}

async function executeBatch(args: ExecutionArgs, operation: OperationDefinitionNode): Promise<ExecutionResult> {
  const coerced = coerceVariables(args.schema, operation, args.variableValues ?? {}, MAX_VARIABLE_ERRORS);
  if (coerced.errors) return { errors: coerced.errors };
  const variables = coerced.coerced;
  const level = getDirectiveValues(BatchDirective, operation, variables)?.consistency as Consistency | undefined;
  const mutationType = args.schema.getMutationType()!;
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of args.document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);

  const writes = new Map<string, { write: WriteField; field: GraphQLField<unknown, unknown>; node: FieldNode }>();
  const collect = (set: SelectionSetNode) => {
    for (const s of set.selections) {
      if (getDirectiveValues(GraphQLSkipDirective, s, variables)?.if === true || getDirectiveValues(GraphQLIncludeDirective, s, variables)?.if === false) continue;
      if (s.kind === Kind.INLINE_FRAGMENT) collect(s.selectionSet);
      else if (s.kind === Kind.FRAGMENT_SPREAD) {
        const fragment = fragments.get(s.name.value);
        if (fragment) collect(fragment.selectionSet);
      } else {
        const field = mutationType.getFields()[s.name.value];
        const write = field?.extensions?.write as WriteField | undefined;
        // Fields of one response name are one field to the executor (validation made them equal).
        if (write && !writes.has((s.alias ?? s.name).value)) writes.set((s.alias ?? s.name).value, { write, field, node: s });
      }
    }
  };
  collect(operation.selectionSet);
  if (!writes.size) return execute(args);

  const context = args.contextValue as GraphQLContext;
  const actions: Record<string, unknown> = {};
  const order = [...writes.keys()];
  try {
    for (const name of order) {
      const { write, field, node } = writes.get(name)!;
      Object.defineProperty(actions, name, { value: restAction(write, getArgumentValues(field, node, variables), level), enumerable: true });
    }
    const result = await context.engine.execute(context.dataset, parseStructuredRequest({ batch: { actions } }), context.ctx);
    const body = result.body as Record<string, unknown>;
    const outcomes = new Map<string, WriteResult | ApiError>();
    for (const name of order) {
      const { kind } = writes.get(name)!.write;
      if (result.status === 202) {
        const accepted = (body.actions as Record<string, { id: string }>)[name];
        outcomes.set(name, { id: accepted.id, version: null, deleted: false, pending: true, record: null });
      } else outcomes.set(name, batchEntryOf(kind, body[name] as Record<string, unknown>));
    }
    return await execute({ ...args, contextValue: { ...context, batch: outcomes } satisfies GraphQLContext });
  } catch (err) {
    return { errors: [graphqlErrorOf(err)], data: null };
  }
}
