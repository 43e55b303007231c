/**
 * A mutation's argument of the wrong type (a string for an integer property, as a literal or in
 * variables) is refused by graphql-js before any resolver runs, in its own words and without a
 * code. REST refuses the same value with a code and a status (400 INVALID_RECORD for record data,
 * INVALID_CONSISTENCY, INVALID_FIELD): those go into the error's `extensions`, graphql-js's message
 * (which names the argument and the path) is kept.
 */
import { getOperationAST, GraphQLError, parse, type DocumentNode } from 'graphql';

/** graphql-js's messages for a value that does not fit its input type (validation and variable coercion), and those of the record scalars (schema.ts). */
const INPUT_VALUE_ERROR = /^(Expected value of type |Expected type |Variable "\$[^"]+" got invalid value |Variable "\$[^"]+" of (required|non-null) type |Field "[^"]+" of required type |Field "[^"]+" is not defined by type |Value "[^"]*" does not exist in "|[A-Za-z]+ cannot represent |(Long|Date|DateTime) must be an? (integer|string)$)/;

/** REST's code for a bad value of this input: the consistency and mode arguments have their own, record data and ids REST's record checks. */
function restCodeOf(message: string): string {
  if (message.includes('"Consistency"')) return 'INVALID_CONSISTENCY';
  if (message.includes('"UpdateMode"')) return 'INVALID_FIELD';
  return 'INVALID_RECORD';
}

function isMutation(query: string | DocumentNode, operationName: string | null | undefined): boolean {
  try {
    return getOperationAST(typeof query === 'string' ? parse(query) : query, operationName)?.operation === 'mutation';
  } catch {
    return false;
  }
}

/**
 * `errors` with REST's code and status on each wrong-typed mutation argument. Every transport gets
 * them from the one preparation and execution (limits.ts `prepareOperation`, operation.ts), so HTTP
 * and both WebSocket protocols answer alike. Given the text (a document that did not validate), it
 * parses it again: only on the error path.
 */
export function withRestInputCodes(errors: readonly GraphQLError[], query: string | DocumentNode, operationName: string | null | undefined): readonly GraphQLError[] {
  if (!errors.some((e) => INPUT_VALUE_ERROR.test(e.message) && !e.extensions?.code) || !isMutation(query, operationName)) return errors;
  return errors.map((e) =>
    INPUT_VALUE_ERROR.test(e.message) && !e.extensions?.code
      ? new GraphQLError(e.message, { nodes: e.nodes, source: e.source, positions: e.positions, path: e.path, originalError: e.originalError, extensions: { ...e.extensions, code: restCodeOf(e.message), status: 400 } })
      : e,
  );
}
