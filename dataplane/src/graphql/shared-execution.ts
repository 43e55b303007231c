/**
 * Subscriptions executed once per event and query, not once per subscriber. graphql-js's
 * `subscribe` runs `execute` for every event of every subscription; with many subscribers of one
 * change (the dispatcher hands them all the same event object) that is the same work many times.
 * Here an event's result is computed once per distinct (schema, dataset config, query text,
 * operation, variables where the selection uses them) and the result object is shared: the
 * subscribers of one dataset may all read the same records (no per-record rules), and resolvers
 * read only the event, the engine and the dataset.
 *
 * Variables only in the subscription field's own arguments (filter, ids, after) choose the events,
 * not what an event resolves to, so subscribers that differ only there share one execution.
 */
import { createSourceEventStream, execute, getOperationAST, Kind, visit, type ASTNode, type DocumentNode, type ExecutionArgs, type ExecutionResult, type GraphQLSchema } from 'graphql';

/** Per event object: its results by share key (a Promise while a resolver is still reading). */
const results = new WeakMap<object, Map<string, ExecutionResult | Promise<ExecutionResult>>>();
/** Identities of schemas and dataset configs, as parts of share keys. */
const ids = new WeakMap<object, number>();
let nextId = 1;
const idOf = (o: object) => {
  let id = ids.get(o);
  if (id === undefined) ids.set(o, (id = nextId++));
  return id;
};

/**
 * Whether the operation's result for an event can depend on its variables: a variable used
 * anywhere but in the arguments of the root subscription field (a directive, a nested field's
 * argument, a fragment) may change it. Pure.
 */
export function resultUsesVariables(document: DocumentNode, operationName?: string | null): boolean {
  const operation = getOperationAST(document, operationName);
  if (!operation) return true;
  const roots = operation.selectionSet.selections;
  // One root field without directives (a subscription has exactly one): its arguments are exempt.
  const exempt = roots.length === 1 && roots[0].kind === Kind.FIELD && !roots[0].directives?.length ? roots[0].arguments : undefined;
  let used = false;
  const scan = (node: ASTNode) =>
    visit(node, {
      Variable: () => void (used = true),
      Argument: (arg) => (exempt?.includes(arg) ? false : undefined),
      VariableDefinition: () => false, // declarations, not uses
    });
  scan(operation);
  for (const definition of document.definitions) if (definition.kind === Kind.FRAGMENT_DEFINITION) scan(definition);
  return used;
}

/** The key under which subscribers share an event's result. */
export function shareKey(args: ExecutionArgs): string {
  const text = args.document.loc?.source.body ?? JSON.stringify(args.document);
  const dataset = (args.contextValue as { dataset?: object } | undefined)?.dataset;
  const variables = resultUsesVariables(args.document, args.operationName) ? JSON.stringify(args.variableValues ?? {}) : '';
  return `${idOf(args.schema as GraphQLSchema)}|${dataset ? idOf(dataset) : 0}|${args.operationName ?? ''}|${variables}|${text}`;
}

/** An event's result for one share key, executed on first use. */
function resultFor(args: ExecutionArgs, key: string, event: unknown): ExecutionResult | Promise<ExecutionResult> {
  if (!event || typeof event !== 'object') return execute({ ...args, rootValue: event });
  let byKey = results.get(event);
  if (!byKey) results.set(event, (byKey = new Map()));
  let result = byKey.get(key);
  if (!result) {
    result = execute({ ...args, rootValue: event });
    byKey.set(key, result);
  }
  return result;
}

/** graphql-js's `subscribe`, with results shared between subscribers of the same event. */
export async function subscribeShared(args: ExecutionArgs): Promise<AsyncIterableIterator<ExecutionResult> | ExecutionResult> {
  const source = await createSourceEventStream(args);
  if (!(Symbol.asyncIterator in Object(source))) return source as ExecutionResult;
  const events = (source as AsyncIterable<unknown>)[Symbol.asyncIterator]();
  const key = shareKey(args);
  const mapped: AsyncIterableIterator<ExecutionResult> = {
    async next() {
      const next = await events.next();
      if (next.done) return { value: undefined, done: true };
      return { value: await resultFor(args, key, next.value), done: false };
    },
    async return() {
      await events.return?.();
      return { value: undefined, done: true };
    },
    async throw(err: unknown) {
      if (events.throw) await events.throw(err);
      throw err;
    },
    [Symbol.asyncIterator]() {
      return mapped;
    },
  };
  return mapped;
}
