/**
 * The warehouse examples (examples/warehouse: `sales` on snowflake, `lake` on iceberg) served by a
 * data plane through the real snowflake-sdk against the Snowflake test peer, with the statements
 * the driver sends asserted from the peer's query log: round trips per request, the Iceberg rules,
 * QUERY_TAG, the executor's warehouse, raw SQL under the read-only role, ASYNC submission.
 */
import { expect } from 'chai';
import type { QueryLogEntry, SnowflakeTestPeerHandle } from '../../../../e2e/peers/snowflake/peer.js';
import { startTestDataPlane, type TestDataPlane } from '../../../test-support/dataplane.js';
import { client } from '../../../test-support/http.js';
import { sharedSnowflakePeer, warehouseExampleManifests } from '../../../test-support/snowflake-peer.js';

describe('warehouse datasets over HTTP (examples/warehouse, snowflake-sdk against the test peer): the statements sent', function () {
  this.timeout(120_000);
  let dp: TestDataPlane;
  let peer: SnowflakeTestPeerHandle;
  const SALES = `SALES_${process.pid}`;
  const LAKE = `LAKE_${process.pid}`;
  /**
   * Each request carries a probe tag (QUERY_TAG) unless it names its own tags, so that the
   * statements a request sent are told apart from what else the data plane runs meanwhile (the
   * transaction runner looks for bulk loads on its own schedule).
   */
  let probe = '';
  const sales = () => client(dp.url, { host: 'iam.localhost', headers: { authorization: 'Proxy sales-admin', tags: probe } });
  const lake = () => client(dp.url, { host: 'iam.localhost', headers: { authorization: 'Proxy lake-admin', tags: probe } });
  let probes = 0;
  /** The statements a request sent to one database, by its tags (the log is the peer's, shared by the process). */
  const sent = async (database: string, request: () => Promise<unknown>, tags?: string): Promise<QueryLogEntry[]> => {
    probe = JSON.stringify({ probe: ++probes });
    peer.clearQueries();
    await request();
    return peer.queries().filter((q) => q.database === database && q.queryTag === (tags === undefined ? probe : tags));
  };
  const creates = (schema: string, prefix: string, n: number, consistency = 'ATOMIC', data: (i: number) => Record<string, unknown> = (i) => ({ name: `n${i}` })) => ({
    batch: { actions: Object.fromEntries(Array.from({ length: n }, (_, i) => [`a${i}`, { create: { schema, id: `${prefix}-${i}`, data: data(i), consistency } }])) },
  });

  before(async () => {
    peer = await sharedSnowflakePeer();
    const { manifests, secretsDir } = warehouseExampleManifests(peer, { sales: SALES, lake: LAKE });
    dp = await startTestDataPlane({ manifests, env: { DAS_SECRETS_DIR: secretsDir } });
    for (const [api, path] of [[sales, '/sales/sales.Customer/none'], [lake, '/lake/lake.Device/none']] as const) {
      for (let i = 0; i < 200 && (await api()({ path })).status !== 404; i++) await new Promise((r) => setTimeout(r, 100));
    }
  });
  after(async () => dp?.stop());

  it('an ATOMIC batch costs the same few statements for 10 actions as for 100: BEGIN, one SELECT, a MERGE per table, the change row INSERT, COMMIT', async () => {
    const ten = await sent(SALES, async () => expect((await sales()({ method: 'POST', path: '/sales', body: creates('sales.Customer', 'ten', 10) })).status).to.equal(200));
    const hundred = await sent(SALES, async () => expect((await sales()({ method: 'POST', path: '/sales', body: creates('sales.Customer', 'hundred', 100) })).status).to.equal(200));
    const shape = (log: QueryLogEntry[]) => log.map((q) => q.sqlText.split(/\s+/).slice(0, 3).join(' '));
    expect(shape(hundred)).to.deep.equal(shape(ten));
    expect(shape(hundred)).to.deep.equal(['BEGIN', 'SELECT 0 AS', 'MERGE INTO "SALES"."SALES_CUSTOMER"', 'MERGE INTO "SALES"."SALES_CUSTOMER_HISTORY"', 'INSERT INTO "SALES"."DAS_CHANGES"', 'COMMIT']);
    expect(hundred.every((q) => q.sessionId === hundred[0].sessionId), 'one session').to.equal(true);
    expect(hundred.filter((q) => /RETURNING/i.test(q.sqlText))).to.deep.equal([]);
    expect((await sales()({ path: '/sales/sales.Customer/hundred-99' })).json).to.include({ version: 1, name: 'n99' });
  });

  it('QUORUM and EVENTUAL: the current rows read outside, then the table\'s records, history and change rows in one transaction', async () => {
    for (const consistency of ['QUORUM', 'EVENTUAL']) {
      const log = await sent(SALES, () => sales()({ method: 'POST', path: '/sales', body: creates('sales.Customer', consistency, 20, consistency) }));
      // The records, the history, the change log (docs/warehouse.md, "Change feed").
      expect(log.map((q) => q.sqlText.split(' ').slice(0, 3).join(' ')), consistency).to.deep.equal(['SELECT 0 AS', 'BEGIN', 'MERGE INTO "SALES"."SALES_CUSTOMER"', 'MERGE INTO "SALES"."SALES_CUSTOMER_HISTORY"', 'INSERT INTO "SALES"."DAS_CHANGES"', 'COMMIT']);
      expect(log.filter((q) => /^(MERGE|INSERT)/.test(q.sqlText)).every((q) => q.inTransaction)).to.equal(true);
    }
  });

  it('tags reach every statement as QUERY_TAG; the executor-name picks the warehouse in force, the dataset\'s own otherwise', async () => {
    const tags = { team: 'billing', run: 7 };
    const tagged = await sent(SALES, () => sales()({ method: 'POST', path: '/sales', headers: { tags: JSON.stringify(tags), 'executor-name': 'reporting' }, body: creates('sales.Customer', 'tagged', 3) }), JSON.stringify(tags));
    expect(tagged.map((q) => q.sqlText.split(' ')[0])).to.deep.equal(['BEGIN', 'SELECT', 'MERGE', 'MERGE', 'INSERT', 'COMMIT']);
    for (const q of tagged) {
      expect(q.warehouse).to.equal('REPORTING_WH');
      expect(q.role).to.equal('SERVICE_WRITER');
    }
    const plain = await sent(SALES, () => client(dp.url, { host: 'iam.localhost', headers: { authorization: 'Proxy sales-admin' } })({ path: '/sales/sales.Customer/tagged-0' }), null as never);
    expect(plain.filter((q) => q.sqlText.includes('"SALES_CUSTOMER"')).map((q) => [q.warehouse, q.queryTag])).to.deep.equal([['LOADING_WH', null]]);
    const unknown = await sales()({ path: '/sales/sales.Customer/tagged-0', headers: { 'executor-name': 'nope' } });
    expect(unknown.status).to.equal(400);
  });

  it('Iceberg: ATOMIC is one MERGE per table, each table in a transaction of its own with its change rows; tables made on the external volume', async () => {
    const body = {
      batch: {
        actions: {
          d1: { create: { schema: 'lake.Device', id: 'd1', data: { name: 'Probe', installed: '2024-01-02' } } },
          d2: { create: { schema: 'lake.Device', id: 'd2', data: { name: 'Spare' } } },
          r1: { create: { schema: 'lake.Reading', id: 'r1', data: { at: '2024-05-01T10:00:00Z', celsius: 21.5, device: { id: 'd1' } } } },
          r2: { create: { schema: 'lake.Reading', id: 'r2', data: { at: '2024-05-01T11:00:00Z', celsius: 22, device: { id: 'd1' } } } },
        },
      },
    };
    let status = 0;
    const log = await sent(LAKE, async () => (status = (await lake()({ method: 'POST', path: '/lake', body })).status));
    expect(status).to.equal(200);
    // Per table: the records, the history, then that table's changes, committed together; no
    // transaction spans the two tables (atomic per table).
    const shape = log.filter((q) => !q.sqlText.startsWith('SELECT')).map((q) => q.sqlText.split(' ').slice(0, 3).join(' ').replace(/^(BEGIN|COMMIT).*/, '$1'));
    expect(shape).to.deep.equal([
      'BEGIN', 'MERGE INTO "EVENTS"."LAKE_DEVICE"', 'MERGE INTO "EVENTS"."LAKE_DEVICE_HISTORY"', 'INSERT INTO "EVENTS"."DAS_CHANGES"', 'COMMIT',
      'BEGIN', 'MERGE INTO "EVENTS"."LAKE_READING"', 'MERGE INTO "EVENTS"."LAKE_READING_HISTORY"', 'INSERT INTO "EVENTS"."DAS_CHANGES"', 'COMMIT',
    ]);
    expect(log.filter((q) => /^(MERGE|INSERT)/.test(q.sqlText)).every((q) => q.inTransaction)).to.equal(true);
    const reading = await lake()({ path: '/lake/lake.Reading/r1' });
    expect(reading.json).to.include({ celsius: 21.5, at: '2024-05-01T10:00:00.000Z' });
    const tables = await peer.icebergTables(LAKE);
    expect(tables.map((t) => `${t.table} ${t.externalVolume} ${t.catalog} ${t.baseLocation}`).sort()).to.include('LAKE_DEVICE LAKE_VOLUME SNOWFLAKE das/lake/LAKE_DEVICE');
  });

  it('Iceberg: ATOMIC_ALL is a 400 before any statement is sent', async () => {
    let res: Awaited<ReturnType<ReturnType<typeof lake>>> | undefined;
    const log = await sent(LAKE, async () => (res = await lake()({ method: 'POST', path: '/lake', body: { create: { schema: 'lake.Device', id: 'never', data: { name: 'x' }, consistency: 'ATOMIC_ALL' } } })));
    expect(res!.status).to.equal(400);
    expect(res!.json.error.code).to.equal('CONSISTENCY_NOT_SUPPORTED');
    expect(res!.json.error.message).to.include('per table');
    expect(log).to.deep.equal([]);
  });

  it('raw SQL runs under the read-only role: unquoted aliases come back upper case, quoted ones as written', async () => {
    await sales()({ method: 'POST', path: '/sales', body: creates('sales.Customer', 'raw', 2, 'ATOMIC', (i) => ({ name: `r${i}`, region: 'north' })) });
    let res: Awaited<ReturnType<ReturnType<typeof sales>>> | undefined;
    const log = await sent(SALES, async () => {
      res = await sales()({
        method: 'POST',
        path: '/sales/raw-query',
        headers: { tags: '{"report":"regions"}', 'executor-name': 'reporting' },
        body: { sql: 'SELECT @{c.region} AS region, COUNT(*) AS "customerCount" FROM @{c} WHERE @{c.region} = ${region} GROUP BY @{c.region} // per region', using: { c: 'sales.Customer' }, arguments: { region: { value: 'north', type: 'string' } } },
      });
    }, '{"report":"regions"}');
    expect(res!.status, res!.text).to.equal(200);
    expect(res!.json).to.deep.equal([{ REGION: 'north', customerCount: 2 }]);
    expect(log.map((q) => [q.role, q.warehouse, q.queryTag])).to.deep.equal([['SERVICE_READONLY', 'REPORTING_WH', '{"report":"regions"}']]);
  });

  for (const [what, sql] of [
    ['INSERT', `INSERT INTO @{c} ("ID", "VERSION") VALUES ('intruder', 1)`],
    ['UPDATE', `UPDATE @{c} SET "NAME" = 'x'`],
    ['DELETE', 'DELETE FROM @{c}'],
    ['CREATE', 'CREATE TABLE "SALES"."INTRUDER" (X VARCHAR)'],
  ]) {
    it(`raw SQL ${what} is refused by the warehouse's read-only role (403), and nothing changes`, async () => {
      let res: Awaited<ReturnType<ReturnType<typeof sales>>> | undefined;
      const log = await sent(SALES, async () => (res = await sales()({ method: 'POST', path: '/sales/raw-query', body: { sql, using: { c: 'sales.Customer' } } })));
      expect(res!.status, res!.text).to.equal(403);
      expect(res!.json.error.code).to.equal('PERMISSION_DENIED');
      // The statement reached the warehouse, which refused it: the database's refusal, not ours.
      expect(log.map((q) => q.role)).to.deep.equal(['SERVICE_READONLY']);
      expect(res!.json.error.details[0]).to.include({ snowflakeCode: '003001' });
      expect((await sales()({ path: '/sales/sales.Customer/intruder' })).status).to.equal(404);
      expect((await sales()({ path: '/sales/sales.Customer/raw-0' })).json).to.include({ name: 'r0', version: 1 });
    });
  }

  it('list, inverse link and a query schema page through the warehouse (keyset, sorted, filtered)', async () => {
    const orders = Object.fromEntries(
      Array.from({ length: 7 }, (_, i) => [`o${i}`, { create: { schema: 'sales.Order', id: `o${i}`, data: { placed: `2024-05-0${i + 1}T09:00:00Z`, total: i * 10, status: i % 2 ? 'open' : 'shipped', customer: { id: 'buyer' } } } }]),
    );
    const created = await sales()({ method: 'POST', path: '/sales', body: { batch: { actions: { buyer: { create: { schema: 'sales.Customer', id: 'buyer', data: { name: 'Buyer' } } }, ...orders } } } });
    expect(created.status, created.text).to.equal(200);
    const ids = async (request: (token?: string) => Promise<{ json: { items: { id: string }[]; nextToken?: string } }>) => {
      const out: string[] = [];
      let token: string | undefined;
      do {
        const page = (await request(token)).json;
        out.push(...page.items.map((r) => r.id));
        token = page.nextToken;
      } while (token);
      return out;
    };
    const listed = await ids((token) => sales()({ path: `/sales/sales.Order?sort=total:desc&limit=3${token ? `&nextToken=${encodeURIComponent(token)}` : ''}` }) as never);
    expect(listed).to.deep.equal(['o6', 'o5', 'o4', 'o3', 'o2', 'o1', 'o0']);
    const linked = await ids((token) => sales()({ path: `/sales/sales.Customer/buyer/orders?filter=${encodeURIComponent("status == 'open'")}&sort=placed&limit=2${token ? `&nextToken=${encodeURIComponent(token)}` : ''}` }) as never);
    expect(linked).to.deep.equal(['o1', 'o3', 'o5']);
    const queried = await ids((token) => sales()({ method: 'POST', path: '/sales', body: { query: { schema: 'sales.OrdersByStatus', arguments: { status: 'shipped' }, limit: 3, ...(token ? { nextToken: token } : {}) } } }) as never);
    expect(queried).to.deep.equal(['o6', 'o4', 'o2', 'o0']);
  });

  it('ASYNC: 202 at once, then the write submitted asynchronously (asyncExec) in a transaction with its change row, and completed', async () => {
    probe = JSON.stringify({ probe: ++probes });
    peer.clearQueries();
    const res = await sales()({ method: 'POST', path: '/sales', body: { create: { schema: 'sales.Customer', id: 'later', data: { name: 'Later' }, consistency: 'ASYNC' } } });
    expect(res.status).to.equal(202);
    let read = await sales()({ path: '/sales/sales.Customer/later' });
    for (let i = 0; i < 100 && read.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 50));
      read = await sales()({ path: '/sales/sales.Customer/later' });
    }
    expect(read.json).to.include({ name: 'Later', version: 1 });
    // The record is readable once its table's MERGE is done; the history's follows.
    const mine = () => peer.queries().filter((q) => q.database === SALES && q.queryTag === probe);
    const writes = () => mine().filter((q) => /^(MERGE|INSERT)/.test(q.sqlText));
    for (let i = 0; i < 100 && writes().length < 3; i++) await new Promise((r) => setTimeout(r, 20));
    expect(writes().map((q) => q.sqlText.split(' ')[2])).to.deep.equal(['"SALES"."SALES_CUSTOMER"', '"SALES"."SALES_CUSTOMER_HISTORY"', '"SALES"."DAS_CHANGES"']);
    // The records' MERGEs submitted asynchronously, and with the change row in one transaction.
    expect(writes().slice(0, 2).every((q) => q.async)).to.equal(true);
    expect(writes().every((q) => q.inTransaction)).to.equal(true);
    // The async MERGEs' counts came back through getResultsFromQueryId: no re-read after them.
    for (let i = 0; i < 100 && !mine().some((q) => q.sqlText === 'COMMIT'); i++) await new Promise((r) => setTimeout(r, 20));
    const statements = mine().filter((q) => !/"ID" = \?/.test(q.sqlText));
    expect(statements.map((q) => q.sqlText.split(' ')[0])).to.deep.equal(['SELECT', 'BEGIN', 'MERGE', 'MERGE', 'INSERT', 'COMMIT']);
  });
});
