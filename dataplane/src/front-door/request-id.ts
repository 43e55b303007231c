/**
 * New request ids: random version 4 UUIDs, as `crypto.randomUUID` makes them (the same random
 * source, in batches of BATCH ids), written out as one string.
 *
 * Why not randomUUID: node builds each id from about twenty concatenated two-character pieces,
 * ~0.5 KiB of short-lived strings per request (measured with bench/alloc-sites.ts). Here the 36
 * characters go into a scratch buffer and are read out once.
 */
import { randomFillSync } from 'node:crypto';

/** Ids per refill (randomUUID's 128 cost ~60 ns per id in randomFillSync's fixed ~6.5 µs per call; 1024: ~15). */
const BATCH = 1024;
// Buffer.alloc never hands out the shared pool: the random bytes are in a buffer of their own.
const random = Buffer.alloc(16 * BATCH);
let used = BATCH;
const text = Buffer.alloc(36);
const HEX = Buffer.from('0123456789abcdef', 'latin1');

export function newRequestId(): string {
  if (used === BATCH) {
    randomFillSync(random);
    used = 0;
  }
  const at = 16 * used++;
  let o = 0;
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) text[o++] = 0x2d; // '-'
    let byte = random[at + i];
    if (i === 6) byte = (byte & 0x0f) | 0x40; // version 4
    else if (i === 8) byte = (byte & 0x3f) | 0x80; // variant 10xx (RFC 9562)
    text[o++] = HEX[byte >> 4];
    text[o++] = HEX[byte & 0x0f];
  }
  return text.toString('latin1', 0, 36);
}
