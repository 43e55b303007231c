import { strict as assert } from 'node:assert';
import { newRequestId } from './request-id.js';

const V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('newRequestId', () => {
  it('makes version 4 UUIDs in the canonical lowercase form', () => {
    for (let i = 0; i < 1000; i++) assert.match(newRequestId(), V4);
  });

  it('never repeats across many refills of its random bytes', () => {
    const ids = new Set<string>();
    for (let i = 0; i < 20_000; i++) ids.add(newRequestId());
    assert.equal(ids.size, 20_000);
  });

  it('uses every hex digit in every random position (nothing stuck or skipped)', () => {
    const seen = Array.from({ length: 36 }, () => new Set<string>());
    for (let i = 0; i < 5000; i++) [...newRequestId()].forEach((c, at) => seen[at].add(c));
    const fixed = new Map([[8, 1], [13, 1], [14, 1], [18, 1], [19, 4], [23, 1]]); // dashes, the version, the variant (8, 9, a, b)
    seen.forEach((chars, at) => assert.equal(chars.size, fixed.get(at) ?? 16, `position ${at}: ${[...chars].sort().join('')}`));
  });
});
