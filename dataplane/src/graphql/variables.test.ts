/** The shortcut of variable coercion (variables.ts) gives graphql's own answer: the same values, the same errors, for ordinary and hostile input. */
import { expect } from 'chai';
import { getVariableValues, parse, type OperationDefinitionNode } from 'graphql';
import { buildDatasetSchema } from './schema.js';
import { coerceVariables } from './variables.js';
import { MAX_VARIABLE_ERRORS } from './limits.js';
import type { DatasetConfig } from '../../../model/types.js';

const dataset = {
  id: 'demo',
  schemas: {
    'demo.Person': { properties: { name: { type: 'string' }, age: { type: 'integer' }, born: { type: 'date' }, seen: { type: 'timestamp' }, score: { type: 'number' }, active: { type: 'boolean' } } },
  },
} as unknown as DatasetConfig;
const schema = buildDatasetSchema(dataset);
const operationOf = (text: string) => parse(text).definitions[0] as OperationDefinitionNode;

/** What a client sees of a coercion: the values, or the errors as JSON. */
const answer = (result: { coerced?: Record<string, unknown>; errors?: readonly { toJSON(): unknown }[] }) =>
  result.errors ? { errors: result.errors.map((e) => e.toJSON()) } : { coerced: { ...result.coerced }, prototype: Object.getPrototypeOf(result.coerced) };

const OPERATIONS = [
  'query Q($id: ID!) { demo_Person(id: $id) { id } }',
  'query Q($id: ID!, $version: Int) { demo_Person(id: $id, version: $version) { id } }',
  'query Q($id: ID, $f: String, $l: Int, $x: Float, $b: Boolean, $n: Long, $d: Date, $t: DateTime) { demo_Person(id: "a") { id } }',
  'query Q($id: ID!, $l: Int = 5) { demo_Person(id: $id) { id } list_demo_Person(limit: $l) { items { id } } }',
  'query Q($op: ChangeOp, $ids: [ID!]) { demo_Person(id: "a") { id } }',
  'query Q($nope: NoSuchType) { demo_Person(id: "a") { id } }',
  'query Q { demo_Person(id: "a") { id } }',
  'query Q($__proto__: ID!, $constructor: ID) { demo_Person(id: $__proto__) { id } }',
  `query Q(${Array.from({ length: 12 }, (_, i) => `$v${i}: Int!`).join(', ')}) { demo_Person(id: "a") { id } }`,
];

const VALUES: unknown[] = [
  'p1', '', 'ünïcödé \u{1F600}', 0, 1, -1, 2.5, 2 ** 31, -(2 ** 31) - 1, 2 ** 53, Number.MAX_SAFE_INTEGER + 2, 1e308, true, false, null, undefined,
  {}, [], ['p1'], { id: 'p1' }, { __proto__: null }, '2024-01-01', 'CREATE', 'NOPE', '1', '1.5',
];

function inputsFor(operation: OperationDefinitionNode): Record<string, unknown>[] {
  const names = (operation.variableDefinitions ?? []).map((d) => d.variable.name.value);
  const sets: Record<string, unknown>[] = [{}, { unrelated: 1 }, JSON.parse('{"__proto__": {"id": "x"}, "id": "p1"}'), JSON.parse('{"__proto__": "p1", "constructor": "c"}')];
  for (const value of VALUES) {
    sets.push(Object.fromEntries(names.map((n) => [n, value])));
    // One variable off, the others right: the shortcut must give up on the first it cannot take.
    sets.push(Object.fromEntries(names.map((n, i) => [n, i === names.length - 1 ? value : 'p1'])));
    sets.push(Object.fromEntries(names.map((n, i) => [n, i === names.length - 1 ? value : 7])));
  }
  sets.push(Object.fromEntries(names.slice(1).map((n) => [n, 'p1']))); // the first missing
  return sets;
}

describe('GraphQL variable coercion (variables.ts)', () => {
  it('answers as graphql\'s getVariableValues does, values and errors, for every kind of variable and value', () => {
    let compared = 0;
    for (const text of OPERATIONS) {
      const operation = operationOf(text);
      for (const inputs of inputsFor(operation)) {
        // Twice: the first call works out the operation's plan, the second uses it.
        for (let round = 0; round < 2; round++) {
          const expected = answer(getVariableValues(schema, operation.variableDefinitions ?? [], inputs, { maxErrors: MAX_VARIABLE_ERRORS }));
          expect(answer(coerceVariables(schema, operation, inputs, MAX_VARIABLE_ERRORS)), `${text} with ${JSON.stringify(inputs)}`).to.deep.equal(expected);
          compared++;
        }
      }
    }
    expect(compared).to.be.greaterThan(500);
  });

  it('works out an operation\'s variables against the schema it is coerced for', () => {
    const other = buildDatasetSchema({ id: 'other', schemas: { 'demo.Person': { properties: { name: { type: 'string' } } } } } as unknown as DatasetConfig);
    const operation = operationOf('query Q($id: ID!) { demo_Person(id: $id) { id } }');
    expect(answer(coerceVariables(schema, operation, { id: 5 }, MAX_VARIABLE_ERRORS))).to.deep.equal({ coerced: { id: '5' }, prototype: Object.prototype });
    expect(answer(coerceVariables(other, operation, { id: 'p2' }, MAX_VARIABLE_ERRORS))).to.deep.equal({ coerced: { id: 'p2' }, prototype: Object.prototype });
    expect(answer(coerceVariables(other, operation, { id: true }, MAX_VARIABLE_ERRORS))).to.deep.equal(answer(getVariableValues(other, operation.variableDefinitions!, { id: true })));
  });
});
