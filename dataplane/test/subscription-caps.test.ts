/**
 * Caps derived from the Pod's memory limit: a data plane whose cgroup (DAS_CGROUP_ROOT, a fixture
 * directory) says the limit leaves room for two subscribers takes two and refuses the third
 * WebSocket before the upgrade (503 with Retry-After, the JSON error shape); once one leaves, the
 * next is taken again.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';

const MiB = 1024 * 1024;

/** Opens a subscriber; resolves with the socket once its subscription is sent, or with the HTTP refusal. */
function subscriber(url: string): Promise<{ ws?: WebSocket; status?: number; retryAfter?: string; body?: any }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace('http://', 'ws://') + '/demo/graphql', 'graphql-transport-ws', { headers: { host: 'iam.localhost' } });
    ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: 'Proxy demo-admin' } })));
    ws.on('message', (data) => {
      if (JSON.parse(String(data)).type !== 'connection_ack') return;
      ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: 'subscription { demo_Person { op } }' } }));
      resolve({ ws });
    });
    ws.on('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode, retryAfter: res.headers['retry-after'] as string, body: JSON.parse(text) }));
    });
    ws.on('error', reject);
  });
}

describe('WebSocket caps from the cgroup memory limit', function () {
  this.timeout(60_000);
  let dp: TestDataPlane;
  let cgroup: string;

  before(async () => {
    cgroup = mkdtempSync(join(tmpdir(), 'das-cgroup-'));
    // 100 MiB reserve + 2 subscribers of 1 MiB each (+ half of one, rounded down).
    writeFileSync(join(cgroup, 'memory.max'), `${102 * MiB + MiB / 2}\n`);
    dp = await startTestDataPlane({ env: { DAS_CGROUP_ROOT: cgroup, DAS_MEMORY_RESERVE_BYTES: String(100 * MiB), DAS_MEMORY_PER_SUBSCRIBER_BYTES: String(MiB) } });
  });
  after(async () => {
    await dp?.stop();
    rmSync(cgroup, { recursive: true, force: true });
  });

  it('takes as many subscribers as the limit leaves room for and refuses the next before the upgrade with 503 and Retry-After', async () => {
    const first = await subscriber(dp.url);
    const second = await subscriber(dp.url);
    expect(first.ws && second.ws, 'two fit').to.not.equal(undefined);
    const third = await subscriber(dp.url);
    expect(third.ws).to.equal(undefined);
    expect(third.status).to.equal(503);
    expect(Number(third.retryAfter)).to.be.greaterThan(0);
    expect(third.body.error.code).to.equal('TOO_MANY_CONNECTIONS');
    expect(third.body.error.message).to.contain('at most 2 WebSocket connections');

    const closed = new Promise((r) => first.ws!.once('close', r));
    first.ws!.close();
    await closed;
    const deadline = Date.now() + 5000;
    while ((dp.dataPlane.subscriptions.connectionCount > 1 || dp.dataPlane.dispatcher.subscriptions !== 1) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(dp.dataPlane.dispatcher.subscriptions, 'the left subscription is released').to.equal(1);
    const again = await subscriber(dp.url);
    expect(again.ws, 'room again once one left').to.not.equal(undefined);
    for (const s of [second, again]) s.ws!.close();
  });
});
