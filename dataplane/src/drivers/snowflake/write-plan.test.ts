import { expect } from 'chai';
import type { OpResult, WriteOp } from '../../engine/contract.js';
import { fieldsOf } from '../../engine/layout.js';
import { planWrite, type CurrentRows, type PlannedRow } from './write-plan.js';
import { warehouseDataset } from '../../../test-support/snowflake-fixtures.js';

const dataset = warehouseDataset();
const fields = fieldsOf(dataset.schemas['shop.Customer']);
const NOW = '2024-05-01T10:00:00.000Z';
const row = (id: string, version: number, name: string | null): PlannedRow => ({ id, version, createdAt: '2024-01-01T00:00:00.000Z', updatedAt: '2024-01-02T00:00:00.000Z', values: [name] });
const state = (live: PlannedRow[], maxVersion: [string, number][] = []): CurrentRows => ({ live: new Map(live.map((r) => [r.id, r])), maxVersion: new Map(maxVersion) });
const plan = (ops: WriteOp[], current: CurrentRows, atomic = true) => planWrite({ ops, current: () => current, fields: () => fields, atomic, now: NOW });
const outcome = (r: OpResult) => (r.ok ? `${r.deleted ? 'deleted' : 'ok'} v${r.record.version}` : r.failure.kind);
const C = 'shop.Customer';

describe('warehouse write plan (pure): outcomes, net changes and history from the current rows', () => {
  it('creates at version 1, or after the tombstone of a deleted id', () => {
    const p = plan(
      [
        { op: 'create', schema: C, id: 'a', data: { name: 'A' } },
        { op: 'create', schema: C, id: 'b', data: { name: 'B' } },
      ],
      state([], [['b', 4]]),
    );
    expect(p.results.map(outcome)).to.deep.equal(['ok v1', 'ok v5']);
    expect(p.results[0].ok && p.results[0].record).to.deep.include({ data: { name: 'A' }, createdAt: NOW, updatedAt: NOW });
    const table = p.tables.get(C)!;
    expect(table.live.map((c) => `${c.kind} ${c.kind === 'delete' ? c.id : c.row.id}`)).to.deep.equal(['insert a', 'insert b']);
    expect(table.history.map((h) => `${h.row.id} v${h.row.version}`)).to.deep.equal(['a v1', 'b v5']);
  });

  it('merges or replaces on update, keeping the created time; expects the version it read', () => {
    const p = plan([{ op: 'update', schema: C, id: 'a', data: {}, merge: true }, { op: 'update', schema: C, id: 'a', data: {}, merge: false }], state([row('a', 2, 'Old')], [['a', 2]]));
    expect(p.results.map(outcome)).to.deep.equal(['ok v3', 'ok v4']);
    expect(p.results[0].ok && p.results[0].record.data).to.deep.equal({ name: 'Old' });
    expect(p.results[1].ok && p.results[1].record.data).to.deep.equal({});
    const [change] = p.tables.get(C)!.live;
    expect(change).to.deep.include({ kind: 'update', previousVersion: 2 });
    expect(change.kind === 'update' && change.row).to.deep.include({ version: 4, createdAt: '2024-01-01T00:00:00.000Z', updatedAt: NOW, values: [null] });
    expect(p.tables.get(C)!.history.map((h) => h.row.version)).to.deep.equal([3, 4]);
  });

  it('a delete writes a tombstone; a delete then a create of one id: one update of the live row, both versions in the history', () => {
    const p = plan(
      [
        { op: 'delete', schema: C, id: 'a' },
        { op: 'create', schema: C, id: 'a', data: { name: 'New' } },
        { op: 'delete', schema: C, id: 'b' },
      ],
      state([row('a', 1, 'Old'), row('b', 7, 'B')], [['a', 1], ['b', 7]]),
    );
    expect(p.results.map(outcome)).to.deep.equal(['deleted v2', 'ok v3', 'deleted v8']);
    const table = p.tables.get(C)!;
    expect(table.live.map((c) => `${c.kind} ${c.kind === 'delete' ? c.id : c.row.id}@${c.kind === 'insert' ? '-' : c.previousVersion}`)).to.deep.equal(['update a@1', 'delete b@7']);
    expect(table.history.map((h) => `${h.row.id} v${h.row.version}${h.deletedAt ? ' tombstone' : ''}`)).to.deep.equal(['a v2 tombstone', 'a v3', 'b v8 tombstone']);
  });

  it('a fresh id created and deleted in one write leaves no live change, only history', () => {
    const p = plan([{ op: 'create', schema: C, id: 'n', data: { name: 'N' } }, { op: 'delete', schema: C, id: 'n' }], state([]));
    expect(p.results.map(outcome)).to.deep.equal(['ok v1', 'deleted v2']);
    expect(p.tables.get(C)!.live).to.deep.equal([]);
    expect(p.tables.get(C)!.history).to.have.length(2);
  });

  it('atomic: the first failure fails, every other op is aborted, nothing is written', () => {
    const p = plan(
      [
        { op: 'create', schema: C, id: 'fresh', data: {} },
        { op: 'create', schema: C, id: 'taken', data: {} },
        { op: 'update', schema: C, id: 'missing', data: {}, merge: true },
      ],
      state([row('taken', 1, 'T')]),
    );
    expect(p.results.map(outcome)).to.deep.equal(['aborted', 'exists', 'aborted']);
    expect(p.tables.size).to.equal(0);
  });

  it('not atomic: failing ops are left out, the others written, each with its own outcome', () => {
    const p = plan(
      [
        { op: 'create', schema: C, id: 'fresh', data: {} },
        { op: 'create', schema: C, id: 'taken', data: {} },
        { op: 'delete', schema: C, id: 'missing' },
      ],
      state([row('taken', 1, 'T')]),
      false,
    );
    expect(p.results.map(outcome)).to.deep.equal(['ok v1', 'exists', 'not-found']);
    expect(p.tables.get(C)!.live.map((c) => c.kind)).to.deep.equal(['insert']);
    expect(p.tables.get(C)!.ops).to.deep.equal([0]);
  });

  it('an update or delete of a deleted record is not-found (the tombstone is no live row)', () => {
    const p = plan([{ op: 'update', schema: C, id: 'gone', data: {}, merge: true }], state([], [['gone', 2]]), false);
    expect(p.results.map(outcome)).to.deep.equal(['not-found']);
    expect(p.tables.size).to.equal(0);
  });
});
