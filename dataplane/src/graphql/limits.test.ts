/** The operation limits (limits.ts) on the example dataset's schema, and a connection's byte budget (send-budget.ts, event-queue.ts). */
import { expect } from 'chai';
import { getIntrospectionQuery, parse } from 'graphql';
import { buildDatasetSchema } from './schema.js';
import { DEFAULT_QUERY_LIMITS, measure, prepareOperation } from './limits.js';
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
