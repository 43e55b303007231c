/** The operator's own HTTP port under a client that pipelines requests and does not read (model/pipelining.ts). */
import { expect } from 'chai';
import { connect } from 'node:net';
import { Registry } from 'prom-client';
import { startHttpServer, type OperatorHttpServer } from './http-server.js';

describe('operator HTTP port: pipelined requests nobody reads', () => {
  let server: OperatorHttpServer;
  before(async () => {
    server = await startHttpServer({ port: 0, host: '127.0.0.1', registry: new Registry(), isReady: () => true });
  });
  after(() => server.close());

  it('answers 16 (the default cap) of 1,000 pipelined GET /metrics, in order, then closes the connection; other clients are served meanwhile', async () => {
    const socket = connect(server.port, '127.0.0.1');
    socket.pause();
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write('GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'.repeat(1000));
    await new Promise((r) => setTimeout(r, 300));
    const other = await fetch(`http://127.0.0.1:${server.port}/healthz`);
    expect(other.status).to.equal(200);
    const text = await new Promise<string>((resolve) => {
      let received = '';
      socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
      socket.once('close', () => resolve(received));
      socket.resume();
    });
    expect([...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]))).to.deep.equal(Array(16).fill(200));
  });
});
