/**
 * graphql's variable coercion (`getVariableValues`) with a shortcut for the common case: an
 * operation whose variables are all scalars (`$id: ID!`, `$limit: Int`), each given a value that
 * is not null. graphql coerces such a value with the scalar's own `parseValue` and nothing else;
 * the general code around it (the type looked up from the AST, closures, a dictionary object,
 * try/catch per call) cost a GraphQL read by id about as much as executing it (docs/performance.md,
 * "The sixth round"). The shortcut calls the same `parseValue`; anything else (a missing or null
 * value, a default, a list, an input object or an enum, a value `parseValue` refuses) goes through
 * `getVariableValues`, so every refusal keeps graphql's own wording. Pure.
 */
import { getNullableType, getVariableValues, isNonNullType, isScalarType, typeFromAST, type GraphQLError, type GraphQLScalarType, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';

type Coerced = { coerced: Record<string, unknown>; errors?: undefined } | { coerced?: undefined; errors: readonly GraphQLError[] };

interface ScalarVariable {
  name: string;
  scalar: GraphQLScalarType;
}

/** Per operation (and the schema its types came from): its variables when all are scalars without defaults, else null. */
const plans = new WeakMap<OperationDefinitionNode, { schema: GraphQLSchema; variables: ScalarVariable[] | null }>();

function planOf(schema: GraphQLSchema, operation: OperationDefinitionNode): ScalarVariable[] | null {
  const known = plans.get(operation);
  if (known?.schema === schema) return known.variables;
  let variables: ScalarVariable[] | null = [];
  for (const definition of operation.variableDefinitions ?? []) {
    const type = typeFromAST(schema, definition.type);
    const named = type && (isNonNullType(type) ? getNullableType(type) : type);
    // `$__proto__` is a valid name; graphql's spread of a prototype-less object keeps it a property, an assignment would not.
    if (definition.defaultValue || !named || !isScalarType(named) || definition.variable.name.value === '__proto__') {
      variables = null;
      break;
    }
    variables.push({ name: definition.variable.name.value, scalar: named });
  }
  plans.set(operation, { schema, variables });
  return variables;
}

/** The operation's variables coerced as graphql's `getVariableValues` coerces them (same values, same errors). */
export function coerceVariables(schema: GraphQLSchema, operation: OperationDefinitionNode, inputs: Record<string, unknown>, maxErrors: number): Coerced {
  const plan = planOf(schema, operation);
  if (plan) {
    const coerced: Record<string, unknown> = {};
    let i = 0;
    for (; i < plan.length; i++) {
      const { name, scalar } = plan[i];
      const value = Object.hasOwn(inputs, name) ? inputs[name] : undefined;
      if (value === undefined || value === null) break;
      let parsed: unknown;
      try {
        parsed = scalar.parseValue(value);
      } catch {
        break;
      }
      if (parsed === undefined) break;
      coerced[name] = parsed;
    }
    if (i === plan.length) return { coerced };
  }
  return getVariableValues(schema, operation.variableDefinitions ?? [], inputs, { maxErrors });
}
