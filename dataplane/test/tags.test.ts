/**
 * The `tags` header through the running data plane: PostgreSQL sees the statement with the tags as
 * a comment and the session named by them, a hostile tag cannot break out, and the pool's
 * connections carry the plain application_name again afterwards.
 */
import { expect } from 'chai';
import pg from 'pg';
import { adminClient, startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { client, type CallOptions, type CallResult } from '../test-support/http.js';

const HOSTILE_TAGS = JSON.stringify({ team: 'x*/ DROP TABLE y; /*' });
const COMPANY_TABLE = '"demo"."demo_company"';

describe('tags header reaching PostgreSQL', function () {
  this.timeout(60000);
  let dp: TestDataPlane;
  let api: ReturnType<typeof client>;
  let observer: pg.Client;

  before(async () => {
    dp = await startTestDataPlane();
    api = adminClient(dp);
    observer = new pg.Client(dp.databaseUrl);
    await observer.connect();
    // The table the tag names, where an unqualified `DROP TABLE y` would find it.
    await observer.query('CREATE TABLE public.y (v int); INSERT INTO public.y VALUES (1)');
    expect((await api({ path: '/demo', body: { create: { schema: 'demo.Company', id: 'c1', data: { name: 'Before' } } } })).status).to.equal(201);
  });
  after(async () => {
    await observer?.end();
    await dp?.stop();
  });

  /**
   * Sends the request while the company table is locked, so its statement waits where
   * pg_stat_activity shows it: the text PostgreSQL received and the session's application_name.
   */
  async function sendWhileLocked(options: CallOptions): Promise<{ res: CallResult; seen: { query: string; application_name: string } }> {
    // The lock is held on a connection of its own: pg_stat_activity is read as a snapshot per transaction.
    const locker = new pg.Client(dp.databaseUrl);
    await locker.connect();
    let pending: Promise<CallResult> | undefined;
    try {
      await locker.query('BEGIN');
      await locker.query(`LOCK TABLE ${COMPANY_TABLE} IN ACCESS EXCLUSIVE MODE`);
      pending = api(options);
      const deadline = Date.now() + 10000;
      for (;;) {
        const { rows } = await observer.query(
          "SELECT query, application_name FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND wait_event_type = 'Lock'",
        );
        if (rows.length) {
          expect(rows).to.have.length(1);
          await locker.query('COMMIT');
          return { res: await pending, seen: rows[0] };
        }
        if (Date.now() > deadline) throw new Error('the request never waited on the locked table');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      await locker.end();
      await pending?.catch(() => undefined);
    }
  }

  const expectTagged = (seen: { query: string; application_name: string }, verb: string) => {
    expect(seen.query.startsWith(`/* {"tags":{"team":"x* / DROP TABLE y; / *"}} */ ${verb} `), seen.query).to.equal(true);
    expect(seen.query).to.not.contain('DROP TABLE y; /*');
    expect(seen.application_name).to.equal('data-access {"team":"x*/ DROP TABLE y; /*"}');
  };

  it('runs a GET read with the tags as its comment and application_name', async () => {
    const { res, seen } = await sendWhileLocked({ path: '/demo/demo.Company/c1', headers: { tags: HOSTILE_TAGS } });
    expectTagged(seen, 'SELECT');
    expect(res.status, res.text).to.equal(200);
    expect(res.json).to.include({ id: 'c1', name: 'Before', version: 1 });
  });

  it('runs a POST create with the tags as its comment and application_name', async () => {
    const { res, seen } = await sendWhileLocked({ path: '/demo', headers: { tags: HOSTILE_TAGS }, body: { create: { schema: 'demo.Company', id: 'c2', data: { name: 'Tagged' } } } });
    expectTagged(seen, 'WITH w AS (INSERT INTO "demo"."demo_company"');
    expect(res.status, res.text).to.equal(201);
  });

  it('leaves the named table and the records intact, and every pool connection named data-access again', async () => {
    expect((await observer.query('SELECT v FROM public.y')).rows).to.deep.equal([{ v: 1 }]);
    const { rows } = await observer.query(`SELECT id, version, name FROM ${COMPANY_TABLE} ORDER BY id`);
    expect(rows).to.deep.equal([
      { id: 'c1', version: 1, name: 'Before' },
      { id: 'c2', version: 1, name: 'Tagged' },
    ]);
    const read = await api({ path: '/demo/demo.Company/c2' });
    expect(read.json).to.include({ id: 'c2', name: 'Tagged', version: 1 });
    const sessions = await observer.query(
      "SELECT application_name FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'",
    );
    expect(sessions.rows.length).to.be.greaterThan(0);
    expect(sessions.rows.map((r) => r.application_name)).to.satisfy((names: string[]) => names.every((n) => n === 'data-access'));
  });
});
