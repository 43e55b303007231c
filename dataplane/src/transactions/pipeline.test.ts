/** The bulk-load pipeline: one chunk prepared ahead while the previous one is written, in order, one write at a time. */
import { expect } from 'chai';
import { pipelined } from './pipeline.js';

const tick = (ms = 2) => new Promise((r) => setTimeout(r, ms));

/** A source of 0..n-1 that records what was asked of it and whether it was closed. */
function source(n: number, failAt?: number) {
  const log: string[] = [];
  let i = 0;
  let closed = false;
  const iterator: AsyncIterator<number> = {
    async next() {
      await tick();
      if (i === failAt) throw new Error(`unreadable item ${i}`);
      if (i >= n) return { done: true, value: undefined };
      log.push(`read ${i}`);
      return { done: false, value: i++ };
    },
    async return() {
      closed = true;
      return { done: true, value: undefined };
    },
  };
  return { iterator, log, closed: () => closed };
}

describe('bulk-load pipeline (one chunk ahead)', () => {
  it('writes every item in order, never two at once, preparing the next one while the current one is written', async () => {
    const src = source(6);
    const written: number[] = [];
    let writing = 0;
    let maxWriting = 0;
    let preparedDuringWrite = 0;
    await pipelined(
      src.iterator,
      (n) => {
        if (writing) preparedDuringWrite++;
        src.log.push(`prepare ${n}`);
        return n * 10;
      },
      async (value) => {
        writing++;
        maxWriting = Math.max(maxWriting, writing);
        src.log.push(`write ${value / 10}`);
        await tick(15);
        written.push(value);
        writing--;
        return true;
      },
    );
    expect(written).to.deep.equal([0, 10, 20, 30, 40, 50]);
    expect(maxWriting).to.equal(1);
    // Items 1..5 were read and prepared while the previous one was being written.
    expect(preparedDuringWrite).to.equal(5);
    // Never more than one item ahead: item n+2 is read only after item n's write settled.
    for (let n = 0; n + 2 < 6; n++) expect(src.log.indexOf(`read ${n + 2}`)).to.be.greaterThan(src.log.indexOf(`write ${n}`));
    expect(src.log.indexOf('read 2')).to.be.greaterThan(src.log.indexOf('write 1'));
  });

  it('stops when a write says so: nothing further is written and the source is closed', async () => {
    const src = source(10);
    const written: number[] = [];
    await pipelined(
      src.iterator,
      (n) => n,
      async (n) => {
        written.push(n);
        return n < 2;
      },
    );
    expect(written).to.deep.equal([0, 1, 2]);
    await tick(20);
    expect(src.closed()).to.equal(true);
    expect(src.log.filter((l) => l.startsWith('read'))).to.have.length.at.most(4);
  });

  it('a source that fails fails the pipeline after the items before it were written; a failed write fails it too', async () => {
    const src = source(10, 3);
    const written: number[] = [];
    const failure = await pipelined(src.iterator, (n) => n, async (n) => {
      written.push(n);
      return true;
    }).catch((err: Error) => err);
    expect((failure as Error).message).to.equal('unreadable item 3');
    expect(written).to.deep.equal([0, 1, 2]);

    const other = source(10);
    const refused = await pipelined(other.iterator, (n) => n, async (n) => {
      if (n === 1) throw new Error('store refused');
      return true;
    }).catch((err: Error) => err);
    expect((refused as Error).message).to.equal('store refused');
    await tick(20);
    expect(other.closed()).to.equal(true);
  });
});
