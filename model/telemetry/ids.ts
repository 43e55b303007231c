/**
 * Trace and span ids for the SDK's `idGenerator`, cut from a pool of random bytes turned into hex
 * once per pool: the SDK's RandomIdGenerator calls Math.random per 4 bytes and hex-encodes each id
 * on its own, and a traced read takes three ids. W3C ids: 32 (trace) and 16 (span) lowercase hex
 * characters, never all zeros.
 */
import { randomFillSync } from 'node:crypto';

/** Ids per pool refill: 4 KiB of randomness, 8192 hex characters. */
const POOL_BYTES = 4096;
const TRACE_ZEROS = '0'.repeat(32);
const SPAN_ZEROS = '0'.repeat(16);

export interface IdGenerator {
  generateTraceId(): string;
  generateSpanId(): string;
}

export function poolIdGenerator(): IdGenerator {
  const bytes = Buffer.allocUnsafe(POOL_BYTES);
  let hex = '';
  let at = POOL_BYTES * 2;
  const next = (length: number): string => {
    for (;;) {
      if (at + length > hex.length) {
        hex = randomFillSync(bytes).toString('hex');
        at = 0;
      }
      const id = hex.slice(at, (at += length));
      // An id of all zeros is invalid (one in 2^64 for a span id): take the next one.
      if (id !== (length === 32 ? TRACE_ZEROS : SPAN_ZEROS)) return id;
    }
  };
  return { generateTraceId: () => next(32), generateSpanId: () => next(16) };
}
