/**
 * Remote bodies within time, on real sockets (an HTTP server on 127.0.0.1): a body that stalls,
 * one that trickles past the deadline, and a range answer longer than the range all fail with
 * SourceError; a body that keeps up arrives whole; time the reader is busy does not count.
 */
import { expect } from 'chai';
import { createServer, get, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SourceLimits } from './limits.js';
import { guarded, readAtMost } from './source-limits.js';
import { SourceError } from './sources.js';

describe('bulk-load sources: remote bodies within a deadline and a minimum rate', () => {
  let server: Server;
  let base: string;
  const routes: Record<string, (res: ServerResponse) => void> = {
    '/stall': (res) => {
      res.write('0123456789');
      // …and nothing more, the connection kept open.
    },
    '/trickle': (res) => {
      const timer = setInterval(() => res.write('x'), 20);
      res.on('close', () => clearInterval(timer));
    },
    '/whole': (res) => res.end(Buffer.alloc(300_000, 'w')),
    '/too-long': (res) => res.end(Buffer.alloc(5000, 'r')),
  };
  before(async () => {
    server = createServer((req, res) => {
      const route = routes[req.url ?? ''];
      if (route) route(res);
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });
  const body = (path: string) => new Promise<IncomingMessage>((resolve, reject) => get(`${base}${path}`, resolve).on('error', reject));
  const drain = async (limits: SourceLimits, path: string, busyMs = 0) => {
    let bytes = 0;
    for await (const chunk of guarded(await body(path), path, limits)) {
      bytes += (chunk as Buffer).length;
      if (busyMs) await sleep(busyMs);
    }
    return bytes;
  };
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => {
        throw new Error('no failure');
      },
      (err: unknown) => err as SourceError,
    );

  it('a body that stalls fails once a rate window passes below the minimum', async () => {
    const err = await failure(drain({ deadlineMs: 60_000, minBytesPerSecond: 1000, rateWindowMs: 300 }, '/stall'));
    expect(err).to.be.instanceOf(SourceError);
    expect(err.code).to.equal('SOURCE_UNREADABLE');
    expect(err.message).to.match(/^\/stall sent 10 bytes in 0 s, slower than DAS_BULK_SOURCE_MIN_BYTES_PER_S \(1000\); the load stops$/);
  });

  it('a body that keeps a trickle going fails at the deadline', async () => {
    const err = await failure(drain({ deadlineMs: 400, minBytesPerSecond: 1, rateWindowMs: 100 }, '/trickle'));
    expect(err.message).to.equal('/trickle took longer than DAS_BULK_SOURCE_DEADLINE_MS (400 ms) to send its bytes; the load stops');
  });

  it('a body that keeps up arrives whole, however long the reader itself is busy between pieces', async () => {
    expect(await drain({ deadlineMs: 60_000, minBytesPerSecond: 1000, rateWindowMs: 50 }, '/whole', 30)).to.equal(300_000);
  });

  it('a range answer longer than the range is refused', async () => {
    const limits = { deadlineMs: 60_000, minBytesPerSecond: 1, rateWindowMs: 30_000 };
    const err = await failure(readAtMost(await body('/too-long'), 100, 'range', limits));
    expect(err.message).to.equal('range sent more than the 100 bytes asked for');
    expect((await readAtMost(await body('/too-long'), 5000, 'range', limits)).byteLength).to.equal(5000);
  });
});
