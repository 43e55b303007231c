import { expect } from 'chai';
import { dataPlaneSettings } from '../../../../model/settings/dataplane.js';
import { emptyProgress } from './bulk-load.js';
import { addToPending, compareCursors, foldPending, nothingPending, partOf, splitIntoParts, unwritten } from './bulk-load-parts.js';

describe('postgres bulk-load parts (pure)', () => {
  it('puts an id in the same part every time, and spreads ids over every part', () => {
    const ids = Array.from({ length: 4000 }, (_, i) => `p${i}`);
    for (const parts of [2, 3, 8]) {
      const counts = new Array(parts).fill(0);
      for (const id of ids) {
        const k = partOf(id, parts);
        expect(k).to.equal(partOf(id, parts));
        counts[k] += 1;
      }
      for (const n of counts) expect(n, `${parts} parts: ${counts}`).to.be.within((ids.length / parts) * 0.8, (ids.length / parts) * 1.2);
    }
    expect(partOf('anything', 1)).to.equal(0);
  });

  it('keeps the hash fixed (a transaction in flight across an upgrade must split its ids the same way)', () => {
    // FNV-1a 32's published test vectors (ASCII: code units are the bytes).
    const hash = (id: string) => partOf(id, 0xffffffff);
    expect(['', 'a', 'foobar'].map(hash)).to.deep.equal([0x811c9dc5, 0xe40c292c, 0xbf9cf968]);
  });

  it('splits records into parts, each in row order', () => {
    const records = Array.from({ length: 50 }, (_, i) => ({ id: `r${i % 20}`, row: i }));
    const parts = splitIntoParts(records, 3);
    expect(parts.flat()).to.have.length(50);
    for (const [k, part] of parts.entries()) {
      expect(part.every((r) => partOf(r.id, 3) === k)).to.equal(true);
      expect(part.map((r) => r.row)).to.deep.equal([...part.map((r) => r.row)].sort((a, b) => a - b));
    }
  });

  it('orders cursors by action, file, row; a part writes only its records after its cursor', () => {
    expect(compareCursors({ action: 0, file: 3, row: 9 }, { action: 1, file: 0, row: 0 })).to.be.lessThan(0);
    expect(compareCursors({ action: 1, file: 1, row: 0 }, { action: 1, file: 0, row: 99 })).to.be.greaterThan(0);
    expect(compareCursors({ action: 1, file: 1, row: 5 }, { action: 1, file: 1, row: 5 })).to.equal(0);
    // Rows are numbered from 1; a chunk from cursor row 10 holds rows 11 to 14.
    const records = [11, 12, 13, 14].map((row) => ({ id: `r${row}`, row }));
    const chunk = { from: { action: 0, file: 2, row: 10 } };
    expect(unwritten(records, chunk, { action: 0, file: 2, row: 10 }).map((r) => r.row)).to.deep.equal([11, 12, 13, 14]);
    // An earlier attempt with a smaller chunk wrote rows 11 and 12 of this part.
    expect(unwritten(records, chunk, { action: 0, file: 2, row: 12 }).map((r) => r.row)).to.deep.equal([13, 14]);
    // An earlier attempt of this very chunk, or with a larger one, wrote all of them.
    expect(unwritten(records, chunk, { action: 0, file: 2, row: 14 })).to.deep.equal([]);
    expect(unwritten(records, chunk, { action: 0, file: 2, row: 20 })).to.deep.equal([]);
    // A part cursor left in an earlier file (the transaction's cursor moved on to this one).
    expect(unwritten(records, chunk, { action: 0, file: 1, row: 900 })).to.have.length(4);
  });

  it('adds what the parts wrote and refused to the progress, the refused rows as errors in row order up to maxErrors', () => {
    let a = nothingPending(0);
    a = addToPending(a, { written: 5, rejected: 2, samples: [{ row: 9, id: 'x9' }, { row: 3, id: 'x3' }] }, 3);
    a = addToPending(a, { written: 1, rejected: 1, samples: [{ row: 1, id: 'x1' }] }, 3);
    expect(a).to.deep.equal({ action: 0, written: 6, rejected: 3, samples: [{ row: 1, id: 'x1' }, { row: 3, id: 'x3' }, { row: 9, id: 'x9' }] });
    const b = addToPending(nothingPending(0), { written: 4, rejected: 1, samples: [{ row: 2, id: 'x2' }] }, 3);
    const before = { ...emptyProgress(), rowsRead: 20, rowsRejected: 1, errors: [{ row: 0, message: 'mapping refused it' }] };
    const after = foldPending(before, [a, b], (id) => `no record with id "${id}"`, 3);
    expect(after).to.deep.include({ rowsRead: 20, rowsWritten: 10, rowsRejected: 5 });
    expect(after.errors).to.deep.equal([
      { row: 0, message: 'mapping refused it' },
      { row: 1, message: 'no record with id "x1"' },
      { row: 2, message: 'no record with id "x2"' },
    ]);
    expect(before.rowsWritten, 'the progress given is not changed').to.equal(0);
  });

  it('DAS_BULK_WRITERS: 1 to 8 connections (default 2); anything else stops the start naming the range', () => {
    expect([undefined, '1', '4', '8'].map((v) => dataPlaneSettings(v === undefined ? {} : { DAS_BULK_WRITERS: v }).DAS_BULK_WRITERS)).to.deep.equal([2, 1, 4, 8]);
    for (const bad of ['0', '9', '20', '2.5', 'many']) expect(() => dataPlaneSettings({ DAS_BULK_WRITERS: bad }), bad).to.throw(`DAS_BULK_WRITERS="${bad}" is not allowed: a whole number from 1 to 8`);
  });
});
