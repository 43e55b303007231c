import { expect } from 'chai';
import { WorkQueue, type Scheduler } from './work-queue.js';

/** A scheduler whose clock only moves when the test says so. */
class FakeScheduler implements Scheduler {
  private clock = 0;

  now(): number {
    return this.clock;
  }

  private timers: { at: number; fn: () => void; id: number }[] = [];
  private nextId = 1;

  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.timers.push({ at: this.clock + ms, fn, id });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.timers = this.timers.filter((t) => t.id !== handle);
  }

  advance(ms: number): void {
    this.clock += ms;
    const due = this.timers.filter((t) => t.at <= this.clock).sort((a, b) => a.at - b.at);
    this.timers = this.timers.filter((t) => t.at > this.clock);
    due.forEach((t) => t.fn());
  }

  get pending(): number[] {
    return this.timers.map((t) => t.at - this.clock);
  }
}

function queue(scheduler = new FakeScheduler()) {
  return { q: new WorkQueue({ baseDelayMs: 100, maxDelayMs: 1000, scheduler }), scheduler };
}

describe('operator: work queue', () => {
  it('collapses repeated adds of a key into one item', async () => {
    const { q } = queue();
    q.add('a');
    q.add('b');
    q.add('a');
    q.add('a');
    expect(q.depth).to.equal(2);
    expect(await q.get()).to.equal('a');
    expect(await q.get()).to.equal('b');
    expect(q.depth).to.equal(0);
  });

  it('never hands a key to two workers: an add while in process queues it again after done', async () => {
    const { q } = queue();
    q.add('a');
    const key = await q.get();
    q.add('a'); // an event arrives while a worker reconciles 'a'
    expect(q.depth).to.equal(0);
    q.done(key!);
    expect(q.depth).to.equal(1);
    expect(await q.get()).to.equal('a');
  });

  it('hands a key straight to a waiting worker', async () => {
    const { q } = queue();
    const waiting = q.get();
    q.add('x');
    expect(await waiting).to.equal('x');
  });

  it('backs off exponentially per key on failure, capped, until forgotten', () => {
    const { q } = queue();
    expect([q.addRateLimited('a'), q.addRateLimited('a'), q.addRateLimited('a'), q.addRateLimited('a'), q.addRateLimited('a')]).to.deep.equal([
      100, 200, 400, 800, 1000,
    ]);
    expect(q.addRateLimited('b')).to.equal(100); // per key
    q.forget('a');
    expect(q.addRateLimited('a')).to.equal(100);
  });

  it('adds a rate-limited key only when its delay has passed', async () => {
    const { q, scheduler } = queue();
    q.addRateLimited('a');
    q.addRateLimited('a'); // second failure: 200ms, but the earlier 100ms add stays (earliest wins)
    expect(q.depth).to.equal(0);
    scheduler.advance(99);
    expect(q.depth).to.equal(0);
    scheduler.advance(1);
    expect(q.depth).to.equal(1);
    expect(await q.get()).to.equal('a');
  });

  it('keeps the earliest of several delayed adds', () => {
    const { q, scheduler } = queue();
    q.addAfter('a', 500);
    q.addAfter('a', 200);
    q.addAfter('a', 900);
    expect(scheduler.pending).to.deep.equal([200]);
  });

  it('reports the depth as it changes', async () => {
    const depths: number[] = [];
    const q = new WorkQueue({ onDepthChange: (d) => depths.push(d) });
    q.add('a');
    q.add('b');
    await q.get();
    expect(depths).to.deep.equal([1, 2, 1]);
  });

  it('whenIdle resolves once nothing is queued or in process', async () => {
    const { q } = queue();
    q.add('a');
    let idle = false;
    const idlePromise = q.whenIdle().then(() => (idle = true));
    const key = await q.get();
    await Promise.resolve();
    expect(idle).to.equal(false);
    q.done(key!);
    await idlePromise;
    expect(idle).to.equal(true);
  });

  it('shutDown releases waiting workers and drops pending retries', async () => {
    const { q, scheduler } = queue();
    const waiting = q.get();
    q.addRateLimited('later');
    q.shutDown();
    expect(await waiting).to.equal(undefined);
    expect(scheduler.pending).to.deep.equal([]);
    q.add('after-shutdown');
    expect(await q.get()).to.equal(undefined);
  });
});
