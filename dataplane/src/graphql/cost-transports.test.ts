/**
 * The operation limits on every transport of a real data plane (HTTP POST, graphql-transport-ws
 * through the graphql-ws client, the older graphql-ws protocol through a raw socket): a list limit
 * given only as a variable's default is costed as the executor runs it, and a document with more
 * selections than the budget is refused before validation, with the same code and message on each.
 */
import { expect } from 'chai';
import { adminClient, startTestDataPlane, type TestDataPlane } from '../../test-support/dataplane.js';
import { gqlClient } from '../../test-support/graphql-ws.js';
import { legacyOperation } from '../../test-support/legacy-ws.js';

const DEFAULTED = 'query Q($l: Int = 1000) { list_demo_Company(limit: 49) { items { id employees(limit: $l) { items { id name } } } } }';
const TOO_COMPLEX = 'the operation may read 49049 records; at most 5000 per operation (lower the limit of its lists or split it)';
/** The reported document: 9,000 selections, 99 KB, inside the token and character limits. */
const WIDE = `{ ${'__typename '.repeat(9000)}}`;
const TOO_WIDE = 'the query has more than 500 selections (fields and fragments); split it into smaller operations';

interface Refusal {
  code: unknown;
  message: string;
}

/** One operation over graphql-transport-ws with the graphql-ws client: its first error. */
async function overTransportWs(dp: TestDataPlane, query: string, variables?: Record<string, unknown>): Promise<Refusal> {
  const client = gqlClient(dp);
  try {
    const result = await new Promise<unknown>((resolve, reject) => {
      client.subscribe({ query, variables }, { next: (r) => resolve(r), error: (e) => resolve(e), complete: () => reject(new Error('completed without a result')) });
    });
    const errors = (Array.isArray(result) ? result : (result as { errors?: unknown[] }).errors) as { message: string; extensions?: { code?: string } }[];
    return { code: errors?.[0]?.extensions?.code, message: errors?.[0]?.message };
  } finally {
    await client.dispose();
  }
}

/** One operation over the older protocol (subscriptions-transport-ws messages): its `error` message. */
async function overLegacyWs(dp: TestDataPlane, query: string, variables?: Record<string, unknown>): Promise<Refusal> {
  const answer = await legacyOperation(dp, query, variables);
  expect(answer.type, JSON.stringify(answer)).to.equal('error');
  const [error] = answer.payload as { message: string; extensions?: { code?: string } }[];
  return { code: error.extensions?.code, message: error.message };
}

describe('GraphQL operation limits on every transport', function () {
  this.timeout(60000);
  let dp: TestDataPlane;
  let admin: ReturnType<typeof adminClient>;

  before(async () => {
    dp = await startTestDataPlane();
    admin = adminClient(dp);
    const r = await admin({ path: '/demo', body: { create: { schema: 'demo.Company', id: 'acme', data: { name: 'Acme' } } } });
    expect(r.status, r.text).to.equal(201);
  });
  after(async () => dp?.stop());

  const overHttp = async (query: string, variables?: Record<string, unknown>): Promise<Refusal> => {
    const r = await admin({ path: '/demo/graphql', body: { query, variables } });
    expect(r.status, r.text).to.equal(400);
    expect(r.json.error.details).to.deep.equal([{ path: '$.query', message: r.json.error.message }]);
    return { code: r.json.error.code, message: r.json.error.message };
  };

  for (const [name, run] of [
    ['HTTP POST', (q: string, v?: Record<string, unknown>) => overHttp(q, v)],
    ['graphql-transport-ws (graphql-ws client)', (q: string, v?: Record<string, unknown>) => overTransportWs(dp, q, v)],
    ['graphql-ws (subscriptions-transport-ws)', (q: string, v?: Record<string, unknown>) => overLegacyWs(dp, q, v)],
  ] as const) {
    describe(name, () => {
      it("costs a list limit given by a variable's default as the executor runs it: refused naming the records", async () => {
        expect(await run(DEFAULTED)).to.deep.equal({ code: 'QUERY_TOO_COMPLEX', message: TOO_COMPLEX });
        // The same operation with a small value given runs.
        if (name === 'HTTP POST') {
          const ok = await admin({ path: '/demo/graphql', body: { query: DEFAULTED, variables: { l: 5 } } });
          expect(ok.status, ok.text).to.equal(200);
          expect(ok.json).to.deep.equal({ data: { list_demo_Company: { items: [{ id: 'acme', employees: { items: [] } }] } } });
        }
      });

      it('refuses 9,000 selections before validating them', async () => {
        expect(await run(WIDE)).to.deep.equal({ code: 'TOO_MANY_SELECTIONS', message: TOO_WIDE });
      });
    });
  }
});
