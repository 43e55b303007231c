/**
 * Clients that write many requests on one connection and never read the answers (HTTP/1.1
 * pipelining), through the real entry point (main.ts as a child process): the data plane and the
 * function gateway hold a bounded number of answers per connection (model/pipelining.ts), so the
 * process's memory stays bounded and other clients are still served; a client that does read
 * gets its answers in order, up to the cap; one that stops reading is disconnected.
 */
import { expect } from 'chai';
import { freePort } from '../src/db/embedded.js';
import { call } from '../test-support/http.js';
import { memoryOf, startMain, startReadyMain, stopMain, waitReady, type MainProcess, type ReadyMain } from '../test-support/main-process.js';
import { healthzMs, pipelined, type HeldSocket } from '../test-support/pipelining.js';

const ADMIN = { host: 'iam.localhost', headers: { authorization: 'Proxy demo-admin' } };
const MAX_PIPELINED = 16; // DAS_MAX_PIPELINED_REQUESTS's default

/**
 * Holds the sockets for `ms`, sampling the process's RSS and /healthz from another client. The
 * first /healthz waits behind node's parsing of the bytes already received (node parses each
 * connection's first read, up to 64 KiB, in one go whatever the application does); every one after
 * it must answer within the second, for as long as the sockets are held.
 */
async function whileHeld(pid: number, url: string, ms: number): Promise<{ peakMb: number; slowestHealthzMs: number }> {
  let peakMb = memoryOf(pid).now;
  expect(await healthzMs(url), 'the first /healthz answers').to.be.below(Infinity);
  let slowestHealthzMs = 0;
  const started = Date.now();
  while (Date.now() < started + ms) {
    peakMb = Math.max(peakMb, memoryOf(pid).now);
    slowestHealthzMs = Math.max(slowestHealthzMs, await healthzMs(url));
    await new Promise((r) => setTimeout(r, 200));
  }
  return { peakMb, slowestHealthzMs };
}

describe('pipelined requests nobody reads (main.ts)', function () {
  this.timeout(180_000);
  let main: ReadyMain;
  const held: HeldSocket[] = [];

  before(async () => {
    main = await startReadyMain({ LOG_LEVEL: 'warn' });
  });
  afterEach(() => {
    for (const h of held.splice(0)) h.socket.destroy();
  });
  after(() => stopMain(main));

  it('8 sockets × 1,000 GET /metrics and 4 × 1,000 GET /demo/openapi with a principal: RSS within 150 MB of before, /healthz within 1 s while they are held', async () => {
    // Warm: the documents and metrics have been rendered once, as a running replica's have.
    for (const path of ['/metrics', '/demo/openapi']) expect((await call(main.url, { path, ...ADMIN })).status).to.equal(200);
    const baselineMb = memoryOf(main.child.pid!).now;
    for (let i = 0; i < 8; i++) held.push(await pipelined(main.port, { path: '/metrics' }, 1000));
    for (let i = 0; i < 4; i++) held.push(await pipelined(main.port, { path: '/demo/openapi', ...ADMIN }, 1000));
    const { peakMb, slowestHealthzMs } = await whileHeld(main.child.pid!, main.url, 5000);
    expect(peakMb - baselineMb, `RSS ${baselineMb.toFixed(0)} → ${peakMb.toFixed(0)} MiB`).to.be.below(150);
    expect(slowestHealthzMs, 'slowest /healthz while the sockets were held').to.be.below(1000);
    expect(main.child.exitCode, main.output().slice(-2000)).to.equal(null);

    // A client that reads after all gets the answers before the cap, in order, and then the connection ends.
    const answers = await held[0].readAnswers();
    expect(answers.statuses).to.deep.equal(Array(MAX_PIPELINED).fill(200));
    expect(answers.closedByServer, 'closed after the answers before the cap').to.equal(true);
    expect(main.output()).to.contain('too many pipelined requests on one connection');
  });

  it('a client pipelining up to the cap gets every answer in order on a connection that stays open', async () => {
    const paths = ['/healthz', '/metrics', '/demo/openapi', '/readyz', '/nope'];
    const h = await pipelined(main.port, { path: '/healthz' }, 0);
    held.push(h);
    h.socket.write(paths.map((path) => `GET ${path} HTTP/1.1\r\nHost: iam.localhost\r\nAuthorization: Proxy demo-admin\r\n\r\n`).join(''));
    const answers = await h.readAnswers(1000);
    expect(answers.statuses).to.deep.equal([200, 200, 200, 200, 404]);
    expect(answers.closedByServer).to.equal(false);
  });
});

describe('unsent answers over the budget stop reading the connection (main.ts)', function () {
  this.timeout(180_000);
  let main: ReadyMain;

  before(async () => {
    // The cap high enough that only the byte budget bounds the connection; a short send timeout.
    main = await startReadyMain({ DAS_MAX_PIPELINED_REQUESTS: '10000', DAS_MAX_UNSENT_RESPONSE_BYTES: String(256 * 1024), DAS_SEND_TIMEOUT_MS: '3000' });
  });
  after(() => stopMain(main));

  const answered = () => main.output().split('\n').filter((line) => line.includes('"path":"/demo/openapi"') && line.includes('"msg":"request"')).length;

  it('handles no further request while the client does not read, all of them once it does', async () => {
    const depth = 400; // ~40 MB of answers: more than the kernel's socket buffers take
    const h = await pipelined(main.port, { path: '/demo/openapi', ...ADMIN }, depth);
    await new Promise((r) => setTimeout(r, 2000));
    const whileNotReading = answered();
    expect(whileNotReading, 'answers made while the client read nothing').to.be.above(0).and.below(depth / 2);
    const answers = await h.readAnswers(1000);
    expect(answers.statuses).to.deep.equal(Array(depth).fill(200));
    h.socket.destroy();
  });

  it('disconnects a client that takes none of its answers within DAS_SEND_TIMEOUT_MS', async () => {
    const h = await pipelined(main.port, { path: '/demo/openapi', ...ADMIN }, 400);
    const deadline = Date.now() + 15_000;
    while (!main.output().includes('client took none of its answers within the send timeout') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    expect(main.output()).to.contain('client took none of its answers within the send timeout');
    // What the kernel had taken is still there to read; then the connection is gone.
    const answers = await h.readAnswers(1000);
    expect(answers.statuses.length).to.be.below(400);
    expect(answers.closedByServer).to.equal(true);
    expect((await call(main.url, { path: '/readyz' })).status).to.equal(200);
  });
});

describe('pipelined requests nobody reads on the function gateway (main.ts, DAS_MODE=function-gateway)', function () {
  this.timeout(60_000);
  let gateway: MainProcess;
  let url: string;
  let port: number;

  before(async () => {
    port = await freePort();
    url = `http://127.0.0.1:${port}`;
    gateway = startMain({ DAS_MODE: 'function-gateway', DAS_UPSTREAM_URL: 'http://127.0.0.1:1', DAS_FUNCTION_NAME: 'fn', PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' });
    await waitReady(url, gateway);
  });
  after(() => stopMain(gateway));

  it('answers each connection up to the cap and closes it; /healthz from another client answers meanwhile', async () => {
    const baselineMb = memoryOf(gateway.child.pid!).now;
    const held: HeldSocket[] = [];
    for (let i = 0; i < 8; i++) held.push(await pipelined(port, { path: '/healthz' }, 1000));
    const { peakMb, slowestHealthzMs } = await whileHeld(gateway.child.pid!, url, 3000);
    expect(peakMb - baselineMb).to.be.below(150);
    expect(slowestHealthzMs).to.be.below(1000);
    for (const h of held) {
      const answers = await h.readAnswers(1000);
      expect(answers.statuses).to.deep.equal(Array(MAX_PIPELINED).fill(200));
      expect(answers.closedByServer).to.equal(true);
      h.socket.destroy();
    }
    expect(gateway.output()).to.contain('too many pipelined requests on one connection');
  });
});

