/**
 * Graceful shutdown: readiness drains first while the replica keeps serving (every answer closing
 * its connection), then in-flight requests finish, subscriptions end with 1012, background writes
 * drain, nothing is lost. The process-level path (main.ts, SIGTERM) is in process-lifecycle.test.ts
 * and rolling-restart.test.ts.
 */
import { expect } from 'chai';
import { Agent } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import pg from 'pg';
import pino from 'pino';
import WebSocket from 'ws';
import { startFunctionGateway } from '../src/function-gateway/server.js';
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

  it('drains before it stops: /readyz 503 draining at once, serving with Connection: close during the delay, idle sockets closed, WebSockets of both protocols closed with 1012', async () => {
    const dp = await startTestDataPlane();
    const delayMs = 1500;
    // An idle keep-alive connection opened before the signal, on a raw socket.
    const idle = connect((dp.dataPlane.server.address() as AddressInfo).port, '127.0.0.1');
    const idleClosed = new Promise<void>((resolve) => idle.once('close', () => resolve()));
    idle.on('error', () => undefined);
    const firstAnswer = new Promise<string>((resolve) => idle.once('data', (d) => resolve(String(d))));
    idle.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
    expect(await firstAnswer).to.match(/keep-alive/i);
    // A keep-alive client that keeps sending.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    expect((await call(dp.url, { ...admin, path: '/healthz', agent })).headers.connection).to.equal('keep-alive');
    // Subscribers of both protocols.
    const closes = ['graphql-transport-ws', 'graphql-ws'].map((protocol) => {
      const ws = new WebSocket(dp.url.replace('http://', 'ws://') + '/demo/graphql', protocol, { headers: { host: 'iam.localhost' } });
      ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: 'Proxy demo-admin' } })));
      ws.on('message', (data) => {
        if (JSON.parse(String(data)).type === 'connection_ack') ws.send(JSON.stringify({ id: '1', type: protocol === 'graphql-ws' ? 'start' : 'subscribe', payload: { query: 'subscription { demo_Person { op cursor } }' } }));
      });
      return new Promise<{ code: number; at: number }>((resolve) => ws.once('close', (code) => resolve({ code, at: Date.now() })));
    });
    const deadline = Date.now() + 10_000;
    while (dp.dataPlane.subscriptions.connectionCount < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));

    const signalled = Date.now();
    const stopped = dp.dataPlane.stop({ delayMs, deadlineMs: 60_000 });
    const ready = await call(dp.url, { path: '/readyz', agent: false });
    expect(ready.status).to.equal(503);
    expect(ready.json).to.deep.equal({ status: 'draining' });
    // Still serving, and every answer asks the client to close its connection.
    const keptAlive = await call(dp.url, { ...admin, path: '/demo/demo.Person/nobody', agent });
    expect(keptAlive.status).to.equal(404);
    expect(keptAlive.headers.connection).to.equal('close');
    const fresh = await call(dp.url, { ...admin, path: '/demo', agent: false, body: { create: { schema: 'demo.Person', id: 'during-drain', data: { name: 'Late' } } } });
    expect(fresh.status).to.equal(201);
    expect(fresh.headers.connection).to.equal('close');

    const [transportWs, legacyWs] = await Promise.all(closes);
    expect(transportWs.code, 'graphql-transport-ws').to.equal(1012);
    expect(legacyWs.code, 'graphql-ws (older protocol)').to.equal(1012);
    expect(transportWs.at - signalled, 'subscriptions end after the delay, not at the signal').to.be.at.least(delayMs - 50);
    await idleClosed;
    await stopped;
    // Nothing was left: stop does not sit out its 60 s deadline (generous bound, not a timing test).
    expect(Date.now() - signalled).to.be.below(30_000);
    agent.destroy();
  });

  it('the function gateway drains too: /readyz 503 draining during the delay while invocations are still answered with Connection: close', async () => {
    const gateway = await startFunctionGateway({ upstreamUrl: 'http://127.0.0.1:1', principal: 'fn', logger: pino({ level: 'silent' }), port: 0, host: '127.0.0.1' });
    const stopped = gateway.stop({ delayMs: 800 });
    const ready = await call(gateway.url, { path: '/readyz', agent: false });
    expect(ready.status).to.equal(503);
    expect(ready.json.data).to.deep.equal({ status: 'draining' });
    const health = await call(gateway.url, { path: '/healthz' });
    expect(health.status).to.equal(200);
    expect(health.headers.connection).to.equal('close');
    await stopped;
    let refused = false;
    await call(gateway.url, { path: '/healthz', agent: false }).catch(() => (refused = true));
    expect(refused, 'new connections are refused once stopped').to.equal(true);
  });
});
