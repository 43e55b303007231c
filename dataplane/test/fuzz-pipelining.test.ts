/**
 * Seeded random HTTP/1.1 pipelining against main.ts (the real entry point): many connections at
 * once, each writing a random number of requests (1 to 3,000) of random kinds in one go — probes,
 * metrics, OpenAPI documents and record lists with a principal, unknown paths, bodies, a
 * `Connection: close` in the middle, a request cut off half-way — and most never reading an
 * answer. The process never dies, /readyz answers, its RSS stays within 150 MB of where it began,
 * and a connection that does read gets answers below 500, never more than
 * DAS_MAX_PIPELINED_REQUESTS. Deterministic (fixed seeds): the seed and connection are in the message.
 */
import { expect } from 'chai';
import { call } from '../test-support/http.js';
import { memoryOf, startReadyMain, stopMain, type ReadyMain } from '../test-support/main-process.js';
import { pipelined, rawRequest, type HeldSocket } from '../test-support/pipelining.js';
import { random } from '../test-support/seeded-random.js';

const MAX_PIPELINED = 16; // DAS_MAX_PIPELINED_REQUESTS's default
const ADMIN = { host: 'iam.localhost', headers: { authorization: 'Proxy demo-admin' } };

/** One random request, as raw bytes. */
function randomRequest(next: () => number, pick: <T>(items: readonly T[]) => T): string {
  const kind = pick(['probe', 'metrics', 'openapi', 'list', 'unknown', 'post', 'close', 'ten'] as const);
  switch (kind) {
    case 'probe':
      return rawRequest({ path: pick(['/healthz', '/readyz']) });
    case 'metrics':
      return rawRequest({ path: '/metrics' });
    case 'openapi':
      return rawRequest({ path: '/demo/openapi', ...ADMIN });
    case 'list':
      return rawRequest({ path: `/demo/demo.Person?limit=${1 + Math.floor(next() * 100)}`, ...ADMIN });
    case 'unknown':
      return rawRequest({ path: `/${'x'.repeat(Math.floor(next() * 200))}` });
    case 'post': {
      const body = JSON.stringify({ read: { schema: 'demo.Person', id: 'ada' } });
      return `POST /demo HTTP/1.1\r\nHost: iam.localhost\r\nAuthorization: Proxy demo-admin\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    }
    case 'close':
      return rawRequest({ path: '/healthz', headers: { connection: 'close' } });
    case 'ten':
      return 'GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n';
  }
}

describe('fuzz: pipelined HTTP nobody reads (main.ts)', function () {
  this.timeout(300_000);
  let main: ReadyMain;

  before(async () => {
    main = await startReadyMain({ LOG_LEVEL: 'warn', DAS_SEND_TIMEOUT_MS: '2000' });
  });
  after(() => stopMain(main));

  for (const seed of [11, 29]) {
    it(`seed ${seed}: 24 connections of random depth, most never reading: alive, RSS bounded, answers below 500, at most the cap`, async () => {
      const { next, pick } = random(seed);
      expect((await call(main.url, { path: '/demo/openapi', ...ADMIN })).status).to.equal(200);
      const baselineMb = memoryOf(main.child.pid!).now;
      const connections: { held: HeldSocket; reads: boolean; label: string }[] = [];
      for (let c = 0; c < 24; c++) {
        const depth = Math.max(1, Math.floor(Math.exp(next() * Math.log(3000))));
        const held = await pipelined(main.port, { path: '/healthz' }, 0);
        let bytes = '';
        for (let i = 0; i < depth; i++) bytes += randomRequest(next, pick);
        // Some connections end on a request cut off half-way.
        if (next() < 0.2) bytes += rawRequest({ path: '/metrics' }).slice(0, 10);
        held.socket.write(bytes);
        connections.push({ held, reads: next() < 0.25, label: `seed ${seed}, connection ${c}, depth ${depth}` });
      }
      let peakMb = baselineMb;
      for (let i = 0; i < 20; i++) {
        peakMb = Math.max(peakMb, memoryOf(main.child.pid!).now);
        await new Promise((r) => setTimeout(r, 200));
      }
      for (const { held, reads, label } of connections) {
        if (!reads) continue;
        const { statuses } = await held.readAnswers(1000);
        expect(statuses.length, label).to.be.at.most(MAX_PIPELINED);
        for (const status of statuses) expect(status, label).to.be.below(500);
      }
      peakMb = Math.max(peakMb, memoryOf(main.child.pid!).now);
      for (const { held } of connections) held.socket.destroy();
      expect(main.child.exitCode, main.output().slice(-2000)).to.equal(null);
      expect((await call(main.url, { path: '/readyz' })).status).to.equal(200);
      expect(peakMb - baselineMb, `RSS ${baselineMb.toFixed(0)} → ${peakMb.toFixed(0)} MiB`).to.be.below(150);
    });
  }
});
