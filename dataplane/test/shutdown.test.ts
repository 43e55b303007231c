/** Graceful shutdown: in-flight requests finish, background writes drain, nothing is lost. */
import { expect } from 'chai';
import pg from 'pg';
import { startTestDataPlane } from '../test-support/dataplane.js';
import { call } from '../test-support/http.js';

const admin = { host: 'iam.localhost', headers: { authorization: 'Proxy demo-admin' } };

describe('graceful shutdown', function () {
  this.timeout(60000);

  it('lets an in-flight request finish and ASYNC writes drain before closing', async () => {
    const dp = await startTestDataPlane();
    const actions: Record<string, unknown> = {};
    for (let i = 0; i < 400; i++) actions[`c${i}`] = { create: { schema: 'demo.Company', id: `c${i}`, data: { name: `Company ${i}` } } };
    const asyncWrite = await call(dp.url, { ...admin, path: '/demo', body: { create: { schema: 'demo.Company', id: 'late', data: { name: 'Late' }, consistency: 'ASYNC' } } });
    expect(asyncWrite.status).to.equal(202);
    const inFlight = call(dp.url, { ...admin, path: '/demo', body: { batch: { actions } } });
    await new Promise((r) => setTimeout(r, 30));
    const stopped = dp.stop();
    const response = await inFlight;
    await stopped;
    expect(response.status).to.equal(200);
    expect(Object.keys(response.json)).to.have.length(400);
    let refused = false;
    await call(dp.url, { ...admin, path: '/healthz' }).catch(() => (refused = true));
    expect(refused, 'new connections are refused after stop').to.equal(true);
    const db = new pg.Client(dp.databaseUrl);
    await db.connect();
    try {
      const { rows } = await db.query("SELECT count(*)::int AS n FROM demo.demo_company WHERE id = 'late' OR id LIKE 'c%'");
      expect(rows[0].n).to.equal(401);
    } finally {
      await db.end();
    }
  });
});
