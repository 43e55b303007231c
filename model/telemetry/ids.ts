/**
 * Trace and span ids for the SDK's `idGenerator`, cut from a pool of random bytes turned into hex
 * once per pool: the SDK's RandomIdGenerator calls Math.random per 4 bytes and hex-encodes each id
 * on its own, and a traced read takes three ids. W3C ids: 32 (trace) and 16 (span) lowercase hex
 * characters, never all zeros.
 */
import { randomFillSync } from 'node:crypto';

/**
 * Ids per pool refill: 64 KiB of randomness (2048 traced reads), 128 Ki hex characters. A refill
 * costs ~6.5 µs before its first byte (randomFillSync's call), so 4 KiB refills cost 62 ns per read
 * and these 15.
 */
export const POOL_BYTES = 64 * 1024;
const TRACE_ZEROS = '0'.repeat(32);
const SPAN_ZEROS = '0'.repeat(16);

export interface IdGenerator {
  generateTraceId(): string;
  generateSpanId(): string;
}

/**
 * The pool's generator also says where the last id's bytes are (`lastBytes`, `lastAt`): the lean
 * tracer keeps them with the span and the encoder copies them, instead of decoding the hex again.
 * Each refill takes a new buffer, so the bytes of ids handed out stay as they were.
 */
export interface PoolIdGenerator extends IdGenerator {
  readonly lastBytes: Buffer;
  readonly lastAt: number;
}

export function poolIdGenerator(): PoolIdGenerator {
  let bytes = Buffer.alloc(0);
  let hex = '';
  let at = 0;
  const generator = {
    lastBytes: bytes,
    lastAt: 0,
    generateTraceId: () => next(32),
    generateSpanId: () => next(16),
  };
  const next = (length: number): string => {
    for (;;) {
      if (at + length > hex.length) {
        bytes = randomFillSync(Buffer.allocUnsafeSlow(POOL_BYTES));
        hex = bytes.toString('hex');
        at = 0;
      }
      const start = at;
      const id = hex.slice(at, (at += length));
      // An id of all zeros is invalid (one in 2^64 for a span id): take the next one.
      if (id !== (length === 32 ? TRACE_ZEROS : SPAN_ZEROS)) {
        generator.lastBytes = bytes;
        generator.lastAt = start >>> 1;
        return id;
      }
    }
  };
  return generator;
}
