/** The version a bulk-loaded row gets on DynamoDB: continued after what was read, or reused when this chunk's first run wrote it. */
import { expect } from 'chai';
import { chunkMark, cursorText, dedupe, parseCursor, planRow } from './bulk-load-plan.js';

describe('DynamoDB bulk load: row plans', () => {
  const mark = chunkMark('tx1', { action: 0, file: 1, row: 500 });
  const other = chunkMark('tx1', { action: 0, file: 1, row: 0 });

  it('a chunk mark names the transaction and start cursor; cursors round-trip as text', () => {
    expect(mark).to.equal('tx1@0:1:500');
    expect(parseCursor(cursorText({ action: 2, file: 3, row: 4 }))).to.deep.equal({ action: 2, file: 3, row: 4 });
  });

  it('UPSERT: version 1 for a new id, the next version after a live one or a tombstone, the same version on a re-run', () => {
    expect(planRow('UPSERT', 'a', {}, mark)).to.deep.equal({ write: true, version: 1 });
    expect(planRow('UPSERT', 'a', { live: { version: 3, createdAt: 'c', mark: other } }, mark)).to.deep.equal({ write: true, version: 4, createdAt: 'c' });
    expect(planRow('UPSERT', 'a', { live: { version: 4, createdAt: 'c', mark } }, mark)).to.deep.equal({ write: true, version: 4, createdAt: 'c' });
    expect(planRow('UPSERT', 'a', { latest: { version: 5, createdAt: 'c', deleted: true } }, mark)).to.deep.equal({ write: true, version: 6 });
    // The first run wrote the history item and crashed before the live one.
    expect(planRow('UPSERT', 'a', { latest: { version: 1, createdAt: 'c', mark, deleted: false } }, mark)).to.deep.equal({ write: true, version: 1, createdAt: 'c' });
  });

  it('INSERT: an existing id is refused unless this chunk wrote it; a deleted id continues its versions', () => {
    expect(planRow('INSERT', 'a', { live: { version: 1, createdAt: 'c' } }, mark)).to.deep.equal({ write: false, message: 'a record with id "a" exists' });
    expect(planRow('INSERT', 'a', { live: { version: 1, createdAt: 'c', mark } }, mark)).to.deep.equal({ write: true, version: 1, createdAt: 'c' });
    expect(planRow('INSERT', 'a', { latest: { version: 2, createdAt: 'c', deleted: true, mark: other } }, mark)).to.deep.equal({ write: true, version: 3 });
  });

  it('DELETE: a tombstone after the live version; no record is refused unless this chunk deleted it', () => {
    expect(planRow('DELETE', 'a', { live: { version: 2, createdAt: 'c' } }, mark)).to.deep.equal({ write: true, version: 3, createdAt: 'c' });
    expect(planRow('DELETE', 'a', {}, mark)).to.deep.equal({ write: false, message: 'no record with id "a"' });
    expect(planRow('DELETE', 'a', { latest: { version: 3, createdAt: 'c', deleted: true, mark: other } }, mark)).to.deep.equal({ write: false, message: 'no record with id "a"' });
    expect(planRow('DELETE', 'a', { latest: { version: 3, createdAt: 'c', deleted: true, mark } }, mark)).to.deep.equal({ write: true, version: 3, createdAt: 'c' });
  });

  it('one row per id: the last for UPSERT, the first for INSERT (the others refused)', () => {
    const rows = [
      { id: 'a', data: { n: 1 }, row: 1 },
      { id: 'b', data: {}, row: 2 },
      { id: 'a', data: { n: 3 }, row: 3 },
    ];
    expect(dedupe(rows, 'UPSERT').records.map((r) => r.row)).to.deep.equal([2, 3]);
    const insert = dedupe(rows, 'INSERT');
    expect(insert.records.map((r) => r.row)).to.deep.equal([1, 2]);
    expect(insert.duplicates.map((r) => r.row)).to.deep.equal([3]);
  });
});
