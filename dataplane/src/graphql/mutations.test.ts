/**
 * GraphQL mutations on a real data plane, on PostgreSQL, DynamoDB Local and iceberg (the Snowflake
 * test peer; ATOMIC_ALL is refused there as by REST): create, update
 * (REPLACE and MERGE) and delete through the record engine as REST (versions, history, the same
 * errors and codes, consistency levels), `@batch` as REST's batch (aliases as action names, all or
 * nothing at ATOMIC), serial root fields without it, over HTTP, graphql-transport-ws (the graphql-ws
 * client) and the older graphql-ws protocol; a subscriber on another connection receives the writes.
 */
import { expect } from 'chai';
import { buildClientSchema, getIntrospectionQuery, printSchema, type IntrospectionQuery } from 'graphql';
import { adminClient, startTestDataPlane, subscriptionsCounted, type TestDataPlane } from '../../test-support/dataplane.js';
import { dynamoDbSecrets, dynamoDbTransactionManifests } from '../../test-support/dynamodb.js';
import { gqlClient, take } from '../../test-support/graphql-ws.js';
import { legacyOperation } from '../../test-support/legacy-ws.js';
import { warehouseDemoManifests } from '../../test-support/snowflake-peer.js';

type Answer = { data?: any; errors?: { message: string; path?: string[]; extensions?: Record<string, any> }[] };

function mutationSuite(location: string, start: () => Promise<TestDataPlane>) {
  describe(`GraphQL mutations on ${location}`, function () {
    this.timeout(120_000);
    let dp: TestDataPlane;
    let admin: ReturnType<typeof adminClient>;
    const gql = async (query: string, variables?: Record<string, unknown>): Promise<Answer> => {
      const r = await admin({ path: '/demo/graphql', body: { query, variables } });
      expect(r.status, r.text).to.equal(200);
      return r.json;
    };
    const rest = (path: string) => admin({ method: 'GET', path: `/demo/${path}` });

    before(async () => {
      dp = await start();
      admin = adminClient(dp);
    });
    after(async () => dp?.stop());

    it('introspection shows the Mutation type, its input and result types and @batch', async () => {
      const r = await gql(getIntrospectionQuery({ descriptions: false }));
      const sdl = printSchema(buildClientSchema(r.data as IntrospectionQuery)).replace(/\s+/g, ' ');
      expect(sdl).to.contain('create_demo_Person(id: ID, data: demo_PersonInput!, consistency: Consistency): demo_PersonWriteResult');
      expect(sdl).to.contain('update_demo_Person(id: ID!, data: demo_PersonInput!, mode: UpdateMode, consistency: Consistency): demo_PersonWriteResult');
      expect(sdl).to.contain('delete_demo_Company(id: ID!, consistency: Consistency): demo_CompanyWriteResult');
      expect(sdl).to.match(/input demo_PersonInput \{ name: String email: String age: Long address: demo_Person__addressInput employer: LinkInput \}/);
      expect(sdl).to.contain('input LinkInput { id: ID! }');
      expect(sdl).to.contain('type demo_PersonWriteResult { id: ID! version: Int deleted: Boolean! pending: Boolean! record: demo_Person }');
      expect(sdl).to.contain('enum Consistency { ATOMIC_ALL ATOMIC QUORUM EVENTUAL ASYNC }');
      expect(sdl).to.contain('enum UpdateMode { REPLACE MERGE }');
      expect(sdl).to.contain('directive @batch(consistency: Consistency) on MUTATION');
      // Inverse links are not stored: not in the input.
      expect(sdl).to.match(/input demo_CompanyInput \{ name: String \}/);
    });

    it('create, replace, merge and delete write versions and history as REST does', async () => {
      const created = await gql('mutation { c: create_demo_Company(id: "acme", data: { name: "Acme" }) { id version deleted pending record { name } } }');
      expect(created).to.deep.equal({ data: { c: { id: 'acme', version: 1, deleted: false, pending: false, record: { name: 'Acme' } } } });
      const person = await gql('mutation($d: demo_PersonInput!) { create_demo_Person(data: $d) { id version record { name age address { postcode } employer { id name } } } }', {
        d: { name: 'Ada', age: 36, address: { postcode: 'N1' }, employer: { id: 'acme' } },
      });
      const id = person.data.create_demo_Person.id;
      expect(id).to.match(/^[0-9a-f-]{36}$/);
      expect(person.data.create_demo_Person.record).to.deep.equal({ name: 'Ada', age: 36, address: { postcode: 'N1' }, employer: { id: 'acme', name: 'Acme' } });
      const merged = await gql(`mutation { update_demo_Person(id: "${id}", data: { age: 37 }, mode: MERGE) { version record { name age } } }`);
      expect(merged.data.update_demo_Person).to.deep.equal({ version: 2, record: { name: 'Ada', age: 37 } });
      const replaced = await gql(`mutation { update_demo_Person(id: "${id}", data: { name: "Ada L." }) { version record { name age } } }`);
      expect(replaced.data.update_demo_Person).to.deep.equal({ version: 3, record: { name: 'Ada L.', age: null } });
      // REST sees the same record and its history.
      expect((await rest(`demo.Person/${id}`)).json).to.deep.equal({ id, version: 3, name: 'Ada L.' });
      expect((await rest(`demo.Person/${id}?version=1`)).json).to.deep.include({ version: 1, name: 'Ada', age: 36 });
      const deleted = await gql(`mutation { delete_demo_Person(id: "${id}") { id version deleted record { id } } }`);
      expect(deleted).to.deep.equal({ data: { delete_demo_Person: { id, version: 4, deleted: true, record: null } } });
      expect((await rest(`demo.Person/${id}`)).json.error.code).to.equal('RECORD_NOT_FOUND');
      expect((await rest(`demo.Person/${id}?version=2`)).json).to.deep.include({ age: 37 });
    });

    it("errors carry REST's code, status and message", async () => {
      const cases: [string, unknown][] = [
        [`mutation { create_demo_Company(id: "${'x'.repeat(513)}", data: { name: "X" }) { id } }`, { create: { schema: 'demo.Company', id: 'x'.repeat(513), data: { name: 'X' } } }],
        ['mutation { update_demo_Company(id: "nobody", data: { name: "X" }, mode: MERGE) { id } }', { update: { schema: 'demo.Company', id: 'nobody', data: { name: 'X' }, mode: 'merge' } }],
        ['mutation { create_demo_Company(id: "acme", data: { name: "Again" }) { id } }', { create: { schema: 'demo.Company', id: 'acme', data: { name: 'Again' } } }],
        ['mutation { create_demo_Person(data: { name: "Bo", age: 9007199254740993 }) { id } }', { create: { schema: 'demo.Person', data: { name: 'Bo', age: 9007199254740993 } } }],
      ];
      for (const [query, body] of cases) {
        const viaRest = await admin({ path: '/demo', body });
        expect(viaRest.status, viaRest.text).to.be.within(400, 499);
        const viaGraphql = await gql(query);
        const [error] = viaGraphql.errors!;
        expect(error.extensions, query).to.deep.include({ code: viaRest.json.error.code, status: viaRest.status });
        expect(error.message, query).to.equal(viaRest.json.error.message);
      }
    });

    it("an argument of the wrong type (literal or variable) is refused with REST's code and status for the same value", async () => {
      const cases: [string, Record<string, unknown> | undefined, unknown][] = [
        ['mutation { create_demo_Person(data: { name: "Bo", age: "old" }) { id } }', undefined, { create: { schema: 'demo.Person', data: { name: 'Bo', age: 'old' } } }],
        ['mutation($d: demo_PersonInput!) { create_demo_Person(data: $d) { id } }', { d: { name: 'Bo', age: 'old' } }, { create: { schema: 'demo.Person', data: { name: 'Bo', age: 'old' } } }],
        ['mutation($d: demo_PersonInput!) { create_demo_Person(data: $d) { id } }', { d: { name: 42 } }, { create: { schema: 'demo.Person', data: { name: 42 } } }],
        ['mutation { create_demo_Company(data: { name: "X" }, consistency: STRONG) { id } }', undefined, { create: { schema: 'demo.Company', data: { name: 'X' }, consistency: 'STRONG' } }],
      ];
      for (const [query, variables, body] of cases) {
        const viaRest = await admin({ path: '/demo', body });
        expect(viaRest.status, viaRest.text).to.equal(400);
        const viaGraphql = await gql(query, variables);
        expect(viaGraphql.data ?? null, query).to.equal(null);
        const [error] = viaGraphql.errors!;
        expect(error.extensions, `${query} ${JSON.stringify(variables)}: ${error.message}`).to.deep.include({ code: viaRest.json.error.code, status: viaRest.status });
      }
      // Nothing was written.
      const people = await admin({ method: 'GET', path: '/demo/demo.Person?filter=name%20%3D%3D%20%22Bo%22' });
      expect(people.status, people.text).to.equal(200);
      expect(people.json.items).to.deep.equal([]);
    });

    it("over both WebSocket protocols, a wrong-typed argument carries REST's code and status as over HTTP", async () => {
      const cases: [string, Record<string, unknown> | undefined, string][] = [
        ['mutation { create_demo_Person(data: { name: "Bo", age: "old" }) { id } }', undefined, 'INVALID_RECORD'],
        ['mutation($d: demo_PersonInput!) { create_demo_Person(data: $d) { id } }', { d: { name: 42 } }, 'INVALID_RECORD'],
        ['mutation { create_demo_Company(data: { name: "X" }, consistency: STRONG) { id } }', undefined, 'INVALID_CONSISTENCY'],
      ];
      const client = gqlClient(dp);
      try {
        for (const [query, variables, code] of cases) {
          const overHttp = (await gql(query, variables)).errors![0];
          expect(overHttp.extensions, query).to.deep.include({ code, status: 400 });
          // graphql-transport-ws: an operation that does not validate is refused with an `error` message.
          const refused = await new Promise<{ message: string; extensions?: Record<string, unknown> }[]>((resolve, reject) =>
            client.subscribe({ query, variables }, { next: (v) => reject(new Error(`answered ${JSON.stringify(v)}`)), error: (e) => resolve(e as never), complete: () => reject(new Error('completed without an error')) }),
          );
          expect(refused[0].extensions, `graphql-transport-ws: ${query}`).to.deep.include({ code, status: 400 });
          expect(refused[0].message).to.equal(overHttp.message);
          const legacy = await legacyOperation(dp, query, variables);
          expect(legacy.type, `graphql-ws: ${query}`).to.equal('error');
          expect((legacy.payload as Answer['errors'])![0].extensions, `graphql-ws: ${query}`).to.deep.include({ code, status: 400 });
        }
      } finally {
        await client.dispose();
      }
    });

    it("each consistency level is accepted or refused as REST's", async () => {
      for (const level of ['ATOMIC_ALL', 'ATOMIC', 'QUORUM', 'EVENTUAL', 'ASYNC']) {
        const viaRest = await admin({ path: '/demo', body: { create: { schema: 'demo.Company', id: `rest-${level}`, data: { name: level }, consistency: level } } });
        const viaGraphql = await gql(`mutation { create_demo_Company(id: "gql-${level}", data: { name: "${level}" }, consistency: ${level}) { id pending } }`);
        if (viaRest.status >= 400) {
          expect(viaGraphql.errors?.[0]?.extensions, level).to.deep.include({ code: viaRest.json.error.code, status: viaRest.status });
          expect(viaGraphql.errors?.[0]?.message, level).to.equal(viaRest.json.error.message);
        } else expect(viaGraphql, level).to.deep.equal({ data: { create_demo_Company: { id: `gql-${level}`, pending: viaRest.status === 202 } } });
        if (location.startsWith('iceberg') && level === 'ATOMIC_ALL') expect(viaGraphql.errors?.[0]?.extensions?.code).to.equal('CONSISTENCY_NOT_SUPPORTED');
      }
    });

    it('@batch runs the root fields as one REST batch: aliases as action names, all or nothing at ATOMIC', async () => {
      const ok = await gql('mutation B @batch(consistency: ATOMIC) { a: create_demo_Company(id: "b-a", data: { name: "A" }) { id version } b: create_demo_Person(id: "b-p", data: { name: "P", employer: { id: "b-a" } }) { record { employer { name } } } }');
      expect(ok).to.deep.equal({ data: { a: { id: 'b-a', version: 1 }, b: { record: { employer: { name: 'A' } } } } });
      const failed = await gql('mutation B @batch(consistency: ATOMIC) { fresh: create_demo_Company(id: "b-new", data: { name: "New" }) { id } dup: create_demo_Company(id: "b-a", data: { name: "Dup" }) { id } }');
      expect(failed.data).to.equal(null);
      expect(failed.errors).to.have.length(1);
      expect(failed.errors![0].extensions).to.deep.include({ code: 'RECORD_EXISTS', status: 409 });
      expect(failed.errors![0].message).to.match(/^batch action "dup" failed, nothing was written \(ATOMIC\)/);
      expect((await rest('demo.Company/b-new')).status, 'nothing of the failed batch is written').to.equal(404);
      // The same batch through REST answers the same.
      const viaRest = await admin({ path: '/demo', body: { batch: { actions: { fresh: { create: { schema: 'demo.Company', id: 'b-new', data: { name: 'New' }, consistency: 'ATOMIC' } }, dup: { create: { schema: 'demo.Company', id: 'b-a', data: { name: 'Dup' }, consistency: 'ATOMIC' } } } } } });
      expect([viaRest.status, viaRest.json.error.code, viaRest.json.error.message]).to.deep.equal([409, 'RECORD_EXISTS', failed.errors![0].message]);
    });

    it('without @batch, root fields run one after another, each its own write', async () => {
      const r = await gql('mutation { first: create_demo_Company(id: "s-1", data: { name: "S1" }) { id } again: create_demo_Company(id: "s-1", data: { name: "S1" }) { id } second: update_demo_Company(id: "s-1", data: { name: "S1b" }) { version } }');
      expect(r.data).to.deep.equal({ first: { id: 's-1' }, again: null, second: { version: 2 } });
      expect(r.errors).to.have.length(1);
      expect(r.errors![0]).to.deep.include({ path: ['again'] });
      expect(r.errors![0].extensions).to.deep.include({ code: 'RECORD_EXISTS', status: 409 });
    });

    it('the alias and cost limits count each root field as a write', async () => {
      const fields = (n: number) => Array.from({ length: n }, (_, i) => `w${i}: delete_demo_Company(id: "none-${i}") { id }`).join(' ');
      const r = await admin({ path: '/demo/graphql', body: { query: `mutation { ${fields(101)} }` } });
      expect(r.status, r.text).to.equal(400);
      expect(r.json.error.code).to.equal('TOO_MANY_ALIASES');
    });

    it('over both WebSocket protocols; a subscriber on another connection receives the writes', async () => {
      const watcher = gqlClient(dp);
      const writer = gqlClient(dp);
      try {
        const events = watcher.iterate<{ demo_Company: { op: string; record: { id: string; name?: string } } }>({ query: 'subscription { demo_Company(ids: ["ws-1"]) { op record { id name } } }' });
        // The writes once the subscription has taken its start position (a change committed before may not reach it).
        await subscriptionsCounted(dp);
        const created = await new Promise<Answer>((resolve, reject) => {
          writer.subscribe({ query: 'mutation { create_demo_Company(id: "ws-1", data: { name: "Over transport-ws" }) { id version } }' }, { next: (v) => resolve(v as Answer), error: reject, complete: () => undefined });
        });
        expect(created).to.deep.equal({ data: { create_demo_Company: { id: 'ws-1', version: 1 } } });
        const legacy = await legacyOperation(dp, 'mutation M($n: String) @batch { u: update_demo_Company(id: "ws-1", data: { name: $n }, mode: MERGE) { version record { name } } }', { n: 'Over legacy' });
        expect(legacy).to.deep.equal({ type: 'data', id: '1', payload: { data: { u: { version: 2, record: { name: 'Over legacy' } } } } });
        const refused = await legacyOperation(dp, 'mutation { delete_demo_Company(id: "never") { id } }');
        expect(refused.type).to.equal('data');
        expect((refused.payload as Answer).errors![0].extensions).to.deep.include({ code: 'RECORD_NOT_FOUND', status: 404 });
        const got = await take(events[Symbol.asyncIterator](), 2, 20_000);
        expect(got.map((e) => e.data?.demo_Company)).to.deep.equal([
          { op: 'CREATE', record: { id: 'ws-1', name: 'Over transport-ws' } },
          { op: 'UPDATE', record: { id: 'ws-1', name: 'Over legacy' } },
        ]);
      } finally {
        await watcher.dispose();
        await writer.dispose();
      }
    });
  });
}

mutationSuite('PostgreSQL', () => startTestDataPlane());
mutationSuite('DynamoDB Local', async () => {
  const secrets = await dynamoDbSecrets();
  return startTestDataPlane({ manifests: await dynamoDbTransactionManifests(secrets.name), env: { DAS_SECRETS_DIR: secrets.dir } });
});
mutationSuite('iceberg (the Snowflake test peer)', async () => {
  const { manifests, secretsDir } = await warehouseDemoManifests('iceberg');
  return startTestDataPlane({ manifests, env: { DAS_SECRETS_DIR: secretsDir, DAS_WAREHOUSE_CHANGE_POLL_MS: '300' } });
});
