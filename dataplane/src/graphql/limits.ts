/**
 * A bound on how deep an operation may select: every level below a link or an inverse link is
 * one more engine call per record, so `employees { items { employer { employees { … } } } }` could
 * otherwise multiply reads without end. Checked with the standard rules, on HTTP and WebSocket.
 */
import { GraphQLError, specifiedRules, validate, type ASTVisitor, type DocumentNode, type GraphQLSchema, type ValidationContext, type ValidationRule } from 'graphql';

export const MAX_SELECTION_DEPTH = 12;

export function depthLimit(max: number): ValidationRule {
  return (context: ValidationContext): ASTVisitor => {
    let depth = 0;
    let reported = false;
    return {
      SelectionSet: {
        enter(node) {
          depth++;
          if (depth > max && !reported) {
            reported = true;
            context.reportError(new GraphQLError(`the operation selects deeper than ${max} levels`, { nodes: [node], extensions: { code: 'QUERY_TOO_DEEP' } }));
          }
        },
        leave() {
          depth--;
        },
      },
    };
  };
}

const RULES = [...specifiedRules, depthLimit(MAX_SELECTION_DEPTH)];

/** graphql's validate with the depth bound added. */
export function validateOperation(schema: GraphQLSchema, document: DocumentNode): readonly GraphQLError[] {
  return validate(schema, document, RULES);
}
