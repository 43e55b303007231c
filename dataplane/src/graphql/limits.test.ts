/** The operation limits (limits.ts) on the example dataset's schema, and a connection's byte budget (send-budget.ts, event-queue.ts). */
import { expect } from 'chai';
import { getIntrospectionQuery, parse, type OperationDefinitionNode } from 'graphql';
import { buildDatasetSchema } from './schema.js';
import { countSelections, DEFAULT_QUERY_LIMITS, measure, measureOperation, measureReadsVariables, prepareOperation } from './limits.js';
import { EventQueue } from './event-queue.js';
import { SendBudget } from './send-budget.js';
import type { DatasetConfig } from '../../../model/types.js';

const dataset = {
  id: 'demo',
  schemas: {
    'demo.Company': { properties: { name: { type: 'string' }, employees: { type: 'links', schema: 'demo.Person', property: 'employer' } } },
    'demo.Person': { properties: { name: { type: 'string' }, employer: { type: 'link', schema: 'demo.Company' } } },
  },
} as unknown as DatasetConfig;
const schema = buildDatasetSchema(dataset);
const cost = (query: string, variables: Record<string, unknown> = {}) => measure(schema, parse(query), variables).cost;
const codeOf = (query: string, variables?: Record<string, unknown>) => prepareOperation(schema, query, variables).errors?.[0]?.extensions?.code;

describe('GraphQL operation limits', () => {
  it('costs what the engine may read: a record 1, a page its limit (default 100) times what each item selects', () => {
    expect(cost('{ demo_Person(id: "a") { name } }')).to.equal(1);
    expect(cost('{ demo_Person(id: "a") { employer { name } } }')).to.equal(2);
    expect(cost('{ list_demo_Person { items { name } } }')).to.equal(100);
    expect(cost('{ list_demo_Person(limit: 10) { items { employer { name } } } }')).to.equal(10 + 10);
    expect(cost('query Q($n: Int) { list_demo_Company(limit: $n) { items { employees(limit: 5) { items { id } } } } }', { n: 20 })).to.equal(20 + 20 * 5);
    expect(cost('{ __typename demo_Person(id: "a") { id version } }')).to.equal(1);
  });

  it('a cached document is measured again with each request\'s variables where they count (a `limit`, `@skip`/`@include`, in a fragment too)', () => {
    const texts = [
      'query Q($l: Int) { list_demo_Company(limit: $l) { items { id } } }',
      'query Q($big: Boolean!) { demo_Person(id: "a") { id } list_demo_Company(limit: 1000) @include(if: $big) { items { employees(limit: 1000) { items { id } } } } }',
      'query Q($l: Int) { ...F } fragment F on Query { list_demo_Company(limit: 100) { items { employees(limit: $l) { items { id } } } } }',
    ];
    const [page, include, fragment] = texts;
    for (let round = 0; round < 2; round++) {
      // The same text, so the same cached document: small variables pass, large ones are refused.
      expect(codeOf(page, { l: 10 }), page).to.equal(undefined);
      expect(codeOf(page, { l: 6000 }), page).to.equal('QUERY_TOO_COMPLEX');
      expect(codeOf(include, { big: false }), include).to.equal(undefined);
      expect(codeOf(include, { big: true }), include).to.equal('QUERY_TOO_COMPLEX');
      expect(codeOf(fragment, { l: 1 }), fragment).to.equal(undefined);
      expect(codeOf(fragment, { l: 1000 }), fragment).to.equal('QUERY_TOO_COMPLEX');
    }
    expect(measureReadsVariables(parse(texts[0]), parse(texts[0]).definitions[0] as OperationDefinitionNode)).to.equal(true);
    const byId = parse('query Q($id: ID!) { demo_Person(id: $id) { id name employer { name } } }');
    expect(measureReadsVariables(byId, byId.definitions[0] as OperationDefinitionNode), 'an id in variables does not change the measure').to.equal(false);
  });

  it('costs the operation as the executor runs it: variables with their defaults, @skip/@include, the operation named', () => {
    const opCost = (query: string, variables: Record<string, unknown> = {}, name?: string) => {
      const m = measureOperation(schema, parse(query), variables, name);
      return 'errors' in m ? m.errors[0].message : m.cost;
    };
    const defaulted = 'query Q($l: Int = 1000) { list_demo_Company(limit: 49) { items { id employees(limit: $l) { items { id name } } } } }';
    expect(opCost(defaulted)).to.equal(49 + 49 * 1000);
    expect(opCost(defaulted, { l: 2 })).to.equal(49 + 49 * 2);
    expect(opCost(defaulted, { l: null })).to.equal(49 + 49 * 100); // null: the engine's default page
    expect(prepareOperation(schema, defaulted, {}).errors?.[0]?.message).to.equal('the operation may read 49049 records; at most 5000 per operation (lower the limit of its lists or split it)');
    // Defaults inside a fragment, and an input the executor cannot coerce is the executor's error.
    const viaFragment = 'query Q($l: Int = 500) { list_demo_Company(limit: 20) { items { ...E } } } fragment E on demo_Company { employees(limit: $l) { items { id } } }';
    expect(opCost(viaFragment)).to.equal(20 + 20 * 500);
    expect(opCost(defaulted, { l: 'many' })).to.match(/\$l.*Int/);
    // @skip/@include with variables and defaults, on fields, spreads and inline fragments.
    const directed = 'query Q($big: Boolean = true, $skip: Boolean! = false) { a: list_demo_Person(limit: 1000) @include(if: $big) { items { id } } ... @skip(if: $skip) { b: list_demo_Person(limit: 7) { items { id } } } }';
    expect(opCost(directed)).to.equal(1007);
    expect(opCost(directed, { big: false })).to.equal(7);
    expect(opCost(directed, { big: false, skip: true })).to.equal(0);
    // Only the operation that runs is measured; with none chosen, the largest.
    const two = 'query Small { list_demo_Person(limit: 3) { items { id } } } query Big { list_demo_Person(limit: 900) { items { id } } }';
    expect(opCost(two, {}, 'Small')).to.equal(3);
    expect(opCost(two)).to.equal(900);
  });

  it('counts the selections of the text before validation and refuses past the budget', () => {
    expect(countSelections(parse('{ a: __typename ... on Query { __typename } ...F } fragment F on Query { __typename }'))).to.equal(5);
    const many = (n: number) => `{ ${'__typename '.repeat(n)}}`;
    expect(codeOf(many(DEFAULT_QUERY_LIMITS.maxSelections))).to.equal(undefined);
    const refused = prepareOperation(schema, many(DEFAULT_QUERY_LIMITS.maxSelections + 1), {}).errors?.[0];
    expect(refused?.extensions.code).to.equal('TOO_MANY_SELECTIONS');
    expect(refused?.message).to.equal('the query has more than 500 selections (fields and fragments); split it into smaller operations');
    // The reported document: 9,000 selections, 99 KB, inside the token limit.
    const reported = many(9000);
    expect(reported.length).to.be.within(90_000, 100_000);
    expect(codeOf(reported)).to.equal('TOO_MANY_SELECTIONS');
    expect(prepareOperation(schema, reported, {}, { ...DEFAULT_QUERY_LIMITS, maxSelections: 10_000 }).errors?.[0]?.extensions.code).to.not.equal('TOO_MANY_SELECTIONS');
  });

  it('counts fragments where they are spread, so nesting spreads cannot hide work or depth', () => {
    const q = 'fragment P on demo_Person { employer { name } } fragment C on demo_Company { employees(limit: 10) { items { ...P } } } { a: demo_Company(id: "x") { ...C } b: demo_Company(id: "y") { ...C } }';
    expect(measure(schema, parse(q), {})).to.deep.equal({ depth: 5, aliases: 2, cost: 2 * (1 + 10 + 10) });
  });

  it('refuses over each limit with its code; the standard introspection query passes', () => {
    const aliases = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: __typename`).join(' ')} }`;
    expect(codeOf(aliases(DEFAULT_QUERY_LIMITS.maxAliases))).to.equal(undefined);
    expect(codeOf(aliases(DEFAULT_QUERY_LIMITS.maxAliases + 1))).to.equal('TOO_MANY_ALIASES');
    expect(codeOf(aliases(5000))).to.equal('QUERY_TOO_LONG');
    expect(codeOf('{ list_demo_Person(limit: 1000) { items { employer { employees(limit: 10) { items { id } } } } } }')).to.equal('QUERY_TOO_COMPLEX');
    expect(codeOf(`{ demo_Person(id: "a") { ${'employer { employees { items { '.repeat(5)}id${' } } }'.repeat(5)} } }`)).to.equal('QUERY_TOO_DEEP');
    expect(codeOf('{ nope }')).to.equal(undefined); // a mistake, not a limit: graphql's own error
    expect(prepareOperation(schema, '{ nope }', {}).errors?.[0].message).to.contain('nope');
    expect(prepareOperation(schema, getIntrospectionQuery(), {}).errors).to.equal(undefined);
  });
});

describe("a connection's byte budget", () => {
  it('counts queued events and unsent bytes; a push past it is refused; reading an event gives its bytes back', async () => {
    let unsent = 0;
    const budget = new SendBudget(1000, () => unsent);
    const queue = new EventQueue<string>(100, () => undefined, budget, (s) => s.length);
    expect(queue.push('x'.repeat(600))).to.equal(true);
    expect(queue.push('y'.repeat(300))).to.equal(true);
    expect(queue.push('z'.repeat(200))).to.equal(false);
    expect((await queue.next()).value).to.have.length(600);
    expect(queue.push('z'.repeat(200))).to.equal(true);
    unsent = 600;
    expect(budget.exceeded).to.equal(true);
    expect(queue.push('w')).to.equal(false);
    unsent = 0;
    await queue.return();
    expect(budget.exceeded).to.equal(false);
    expect(budget.take(1000)).to.equal(true);
  });
});
