/**
 * Every socket a server of the data plane owns has an 'error' listener: an 'error' event without
 * one is an uncaught exception that ends the process (issue: one WebSocket frame killed the data
 * plane). The servers are instrumented, real connections are made in each state (a keep-alive
 * REST connection, WebSockets of both protocols before and after connection_init, an upgrade
 * being refused, the function gateway's connections), and every socket the servers saw is checked.
 */
import { expect } from 'chai';
import { request, Agent } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import pino from 'pino';
import WebSocket from 'ws';
import { startFunctionGateway } from '../src/function-gateway/server.js';
import { adminClient, startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { rawUpgrade } from '../test-support/ws-frames.js';

/** Opens a client WebSocket and waits for a first message (`init`) or just the open. */
async function open(url: string, protocol: string, init: boolean): Promise<WebSocket> {
  const ws = new WebSocket(url, protocol, { headers: { host: 'iam.localhost' } });
  ws.on('error', () => undefined);
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  if (init) {
    ws.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: 'Proxy demo-admin' } }));
    await new Promise((resolve) => ws.once('message', resolve));
  }
  return ws;
}

/** A request on a kept-alive connection, left open afterwards. */
function keptAlive(url: string, agent: Agent, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/readyz`, { agent, headers: { host } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

describe("every socket a server owns has an 'error' listener", function () {
  this.timeout(60_000);
  let dp: TestDataPlane;
  const clients: WebSocket[] = [];
  const agent = new Agent({ keepAlive: true });

  before(async () => {
    dp = await startTestDataPlane();
  });
  after(async () => {
    for (const ws of clients) ws.terminate();
    agent.destroy();
    await dp?.stop();
  });

  it('the data plane: HTTP connections, upgraded sockets and WebSockets of both protocols, before and after connection_init', async () => {
    const server = dp.dataPlane.server;
    const connections = new Set<Socket>();
    const upgraded = new Set<Duplex>();
    server.on('connection', (s: Socket) => connections.add(s));
    server.on('upgrade', (_req, s: Duplex) => upgraded.add(s));

    expect(await keptAlive(dp.url, agent, 'iam.localhost')).to.equal(200);
    const ws = dp.url.replace('http://', 'ws://') + '/demo/graphql';
    for (const [protocol, init] of [['graphql-transport-ws', false], ['graphql-transport-ws', true], ['graphql-ws', false], ['graphql-ws', true]] as const) {
      clients.push(await open(ws, protocol, init));
    }
    // An upgrade refused (unknown dataset): its socket is answered and closed by the server.
    const refused = await rawUpgrade(dp.dataPlane.port, { path: '/nope/graphql' });
    expect(refused.status).to.equal(404);
    // An upgrade left half-way: the request sent, nothing after it.
    const idle = await rawUpgrade(dp.dataPlane.port);
    expect(idle.status).to.equal(101);
    expect((await adminClient(dp)({ path: '/demo/demo.Company/nobody' })).status).to.equal(404);

    const sockets = dp.dataPlane.subscriptions.sockets;
    expect(sockets).to.have.length(5);
    for (const s of sockets) expect(s.listenerCount('error'), 'a WebSocket without an error listener').to.be.greaterThan(0);
    expect(upgraded.size).to.equal(6);
    for (const s of upgraded) if (!s.destroyed) expect(s.listenerCount('error'), 'an upgraded socket without an error listener').to.be.greaterThan(0);
    expect(connections.size).to.be.greaterThan(7);
    for (const s of connections) if (!s.destroyed) expect(s.listenerCount('error'), 'a connection without an error listener').to.be.greaterThan(0);
    // An error on any of them is one connection's problem: the server goes on answering.
    for (const s of sockets) s.emit('error', new Error('injected'));
    for (const s of upgraded) if (!s.destroyed) s.emit('error', new Error('injected'));
    expect((await adminClient(dp)({ path: '/demo/demo.Company/nobody' })).status).to.equal(404);
    idle.socket.destroy();
  });

  it('the function gateway: its connections', async () => {
    const gateway = await startFunctionGateway({ upstreamUrl: dp.url, principal: 'service-local-function-service-gateway', logger: pino({ level: 'silent' }), port: 0, host: '127.0.0.1' });
    try {
      const connections = new Set<Socket>();
      gateway.server.on('connection', (s: Socket) => connections.add(s));
      expect(await keptAlive(gateway.url, agent, 'gateway.localhost')).to.equal(200);
      expect(connections.size).to.equal(1);
      for (const s of connections) {
        expect(s.listenerCount('error')).to.be.greaterThan(0);
        s.emit('error', new Error('injected'));
      }
      expect(await keptAlive(gateway.url, new Agent(), 'gateway.localhost')).to.equal(200);
    } finally {
      await gateway.stop();
    }
  });
});
