/**
 * Shared execution (shared-execution.ts) with the generated schema and real graphql-js: which
 * operations' results depend on their variables; subscribers of the same event and query share one
 * result object, also when their filters differ; a different query, a different dataset config, or
 * variables the selection uses give results of their own, each correct; ending a subscription ends
 * its source.
 */
import { expect } from 'chai';
import { parse, type ExecutionResult } from 'graphql';
import { renderDatasetConfig } from '../../../model/render.js';
import { EventQueue } from './event-queue.js';
import type { ChangeEvent, GraphQLContext, SubscriptionRequest } from './schema.js';
import { datasetSchema } from './schema.js';
import { resultUsesVariables, subscribeShared } from './shared-execution.js';

const dataset = renderDatasetConfig({
  apiVersion: 'dataaccess.dev/v1alpha1',
  kind: 'Dataset',
  metadata: { name: 'mem', generation: 1 },
  spec: { environment: 'local', location: { kind: 'postgres' }, schemas: { 'mem.Item': { properties: { n: { type: 'integer' }, label: { type: 'string' } } } } },
});

describe('shared subscription execution', () => {
  it('tells whether a result can depend on the variables', () => {
    const uses = (text: string) => resultUsesVariables(parse(text));
    expect(uses('subscription($f: String, $a: String) { mem_Item(filter: $f, after: $a) { op record { id } } }')).to.equal(false);
    expect(uses('subscription S($f: String) { item: mem_Item(filter: $f) { cursor } }')).to.equal(false);
    expect(uses('subscription { mem_Item { op } }')).to.equal(false);
    expect(uses('subscription($f: String, $x: Boolean!) { mem_Item(filter: $f) { op record @include(if: $x) { id } } }')).to.equal(true);
    expect(uses('subscription($x: Boolean!) { mem_Item @skip(if: $x) { op } }')).to.equal(true);
    expect(uses('subscription($x: Boolean!) { mem_Item { ...F } } fragment F on mem_ItemEvent { record @include(if: $x) { id } }')).to.equal(true);
    expect(uses('subscription { mem_Item { ...F } } fragment F on mem_ItemEvent { record { id } }')).to.equal(false);
  });

  /** A subscription of `query` whose source is a queue the test pushes into. */
  const open = async (query: string, variables: Record<string, unknown>, config = dataset) => {
    const queue = new EventQueue<ChangeEvent>(100, () => undefined);
    const requests: SubscriptionRequest[] = [];
    const contextValue: GraphQLContext = {
      engine: undefined as never,
      dataset: config,
      subscribe: (request) => {
        requests.push(request);
        return queue;
      },
    };
    const result = await subscribeShared({ schema: datasetSchema(config), document: parse(query), variableValues: variables, contextValue });
    expect(Symbol.asyncIterator in result, JSON.stringify(result)).to.equal(true);
    return { queue, requests, results: result as AsyncIterableIterator<ExecutionResult> };
  };

  it('gives subscribers of one event and query the same result, executed once; others their own', async () => {
    const query = 'subscription($f: String) { mem_Item(filter: $f) { op cursor record { id n } } }';
    const a = await open(query, { f: 'n == 1' });
    const b = await open(query, { f: 'n > 0' });
    const other = await open('subscription { mem_Item { cursor record { label } } }', {});
    const include = 'subscription($x: Boolean!) { mem_Item { cursor record @include(if: $x) { id } } }';
    const shown = await open(include, { x: true });
    const hidden = await open(include, { x: false });
    const reloaded = await open(query, { f: 'n == 1' }, { ...dataset });
    expect(a.requests).to.deep.equal([{ schema: 'mem.Item', filter: 'n == 1', ids: undefined, after: undefined }]);

    const event: ChangeEvent = { op: 'CREATE', cursor: '7', record: { id: 'i1', version: 1, n: 1, label: 'one' } as never };
    for (const s of [a, b, other, shown, hidden, reloaded]) s.queue.push(event);
    const [ra, rb, ro, rs, rh, rr] = await Promise.all([a, b, other, shown, hidden, reloaded].map(async (s) => (await s.results.next()).value as ExecutionResult));
    expect(ra).to.deep.equal({ data: { mem_Item: { op: 'CREATE', cursor: '7', record: { id: 'i1', n: 1 } } } });
    expect(rb).to.equal(ra); // the same object: one execution
    expect(ro).to.deep.equal({ data: { mem_Item: { cursor: '7', record: { label: 'one' } } } });
    expect(rs).to.deep.equal({ data: { mem_Item: { cursor: '7', record: { id: 'i1' } } } });
    expect(rh).to.deep.equal({ data: { mem_Item: { cursor: '7' } } });
    expect(rr).to.deep.equal(ra);
    expect(rr).to.not.equal(ra); // another config object: executed on its own

    // The next event is a new execution, not the last result again.
    const second: ChangeEvent = { op: 'DELETE', cursor: '8', record: { id: 'i1', version: 2 } as never };
    a.queue.push(second);
    b.queue.push(second);
    const [na, nb] = await Promise.all([a.results.next(), b.results.next()]);
    expect(na.value).to.deep.equal({ data: { mem_Item: { op: 'DELETE', cursor: '8', record: { id: 'i1', n: null } } } });
    expect(nb.value).to.equal(na.value);
  });

  it('ending the subscription ends its source', async () => {
    let ended = false;
    const queue = new EventQueue<ChangeEvent>(10, () => (ended = true));
    const contextValue: GraphQLContext = { engine: undefined as never, dataset, subscribe: () => queue };
    const results = (await subscribeShared({ schema: datasetSchema(dataset), document: parse('subscription { mem_Item { op } }'), contextValue })) as AsyncIterableIterator<ExecutionResult>;
    await results.return!();
    expect(ended).to.equal(true);
    expect(await results.next()).to.deep.equal({ value: undefined, done: true });
  });

  it('answers a subscription that cannot start with its errors', async () => {
    const contextValue: GraphQLContext = { engine: undefined as never, dataset };
    const result = await subscribeShared({ schema: datasetSchema(dataset), document: parse('subscription { mem_Item { op } }'), contextValue });
    expect(Symbol.asyncIterator in result).to.equal(false);
    expect((result as ExecutionResult).errors?.[0].extensions?.code).to.equal('SUBSCRIPTION_OVER_HTTP');
  });
});
