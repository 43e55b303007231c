/**
 * Remote bodies (https, S3) within time: the time the load spends waiting on a body is at most
 * DAS_BULK_SOURCE_DEADLINE_MS per file, and while it waits the body must keep up
 * DAS_BULK_SOURCE_MIN_BYTES_PER_S over each DAS_BULK_SOURCE_RATE_WINDOW_MS; a body that stalls
 * fails the load (SOURCE_UNREADABLE) instead of holding a load slot until the peer closes. Only
 * waiting counts: a load busy writing to its store does not make its source look slow.
 */
import { Readable } from 'node:stream';
import type { SourceLimits } from './limits.js';
import { SourceError } from './sources.js';

/** The body's bytes as they arrive, failing with SourceError once the source is too slow or past its deadline. */
export function guarded(body: Readable, name: string, limits: SourceLimits): Readable {
  return Readable.from(timed(body, name, limits), { objectMode: false });
}

async function* timed(body: Readable, name: string, limits: SourceLimits): AsyncGenerator<Buffer> {
  const it = body[Symbol.asyncIterator]() as AsyncIterator<Buffer | string>;
  let waitedTotal = 0;
  let waitedWindow = 0;
  let bytesWindow = 0;
  const slow = () =>
    new SourceError('SOURCE_UNREADABLE', `${name} sent ${bytesWindow} bytes in ${Math.round(waitedWindow / 1000)} s, slower than DAS_BULK_SOURCE_MIN_BYTES_PER_S (${limits.minBytesPerSecond}); the load stops`);
  const late = () => new SourceError('SOURCE_UNREADABLE', `${name} took longer than DAS_BULK_SOURCE_DEADLINE_MS (${limits.deadlineMs} ms) to send its bytes; the load stops`);
  try {
    for (;;) {
      // The longest this wait may take: to the deadline, or to the end of the window at the rate still owed.
      const owed = Math.max(0, (limits.minBytesPerSecond * limits.rateWindowMs) / 1000 - bytesWindow);
      const toDeadline = limits.deadlineMs - waitedTotal;
      const budget = Math.min(toDeadline, owed > 0 ? limits.rateWindowMs - waitedWindow : Infinity);
      const started = Date.now();
      let timer: NodeJS.Timeout | undefined;
      const next = await Promise.race([
        it.next(),
        new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), Math.max(1, budget)))),
      ]).finally(() => clearTimeout(timer));
      const waited = Date.now() - started;
      waitedTotal += waited;
      waitedWindow += waited;
      // Which limit ran out is the one the wait was bounded by (a timer may fire a millisecond before Date.now() says so).
      if (next === 'timeout') throw budget === toDeadline ? late() : slow();
      if (next.done) return;
      const chunk = typeof next.value === 'string' ? Buffer.from(next.value) : next.value;
      bytesWindow += chunk.length;
      if (waitedWindow >= limits.rateWindowMs) {
        if ((bytesWindow * 1000) / waitedWindow < limits.minBytesPerSecond) throw slow();
        waitedWindow = 0;
        bytesWindow = 0;
      }
      if (waitedTotal >= limits.deadlineMs) throw late();
      yield chunk;
    }
  } finally {
    body.destroy();
  }
}

/** A range read's body: at most `max` bytes (a server that sends more is refused), within the time limits. */
export async function readAtMost(body: Readable, max: number, name: string, limits: SourceLimits): Promise<ArrayBuffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of timed(body, name, limits)) {
    total += chunk.length;
    if (total > max) throw new SourceError('SOURCE_UNREADABLE', `${name} sent more than the ${max} bytes asked for`);
    chunks.push(chunk);
  }
  const all = Buffer.concat(chunks, total);
  return all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength) as ArrayBuffer;
}
