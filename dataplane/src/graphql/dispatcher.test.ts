/**
 * The dispatcher against an in-memory change feed, where the interleavings are chosen: changes
 * committed while a replay is reading arrive once and in order; wake-ups during a read cause one
 * more read, not a lost change; the per-replica limit; a queue over its bound ends the
 * subscription as a slow consumer without holding up the others; the feed stops with the last
 * subscription. (The real feed and both protocols are tested in change-log.test.ts and
 * subscriptions.test.ts.)
 */
import { expect } from 'chai';
import pino from 'pino';
import { renderDatasetConfig } from '../../../model/render.js';
import type { ChangeBatch, ChangeFeed, DriverCapabilities, LocationDriver, RecordChange } from '../engine/contract.js';
import { ApiError } from '../engine/errors.js';
import { ChangeDispatcher } from './dispatcher.js';
import type { ChangeEvent } from './schema.js';

const dataset = renderDatasetConfig({
  apiVersion: 'dataaccess.dev/v1alpha1',
  kind: 'Dataset',
  metadata: { name: 'mem', generation: 1 },
  spec: { environment: 'local', location: { kind: 'postgres' }, schemas: { 'mem.Item': { properties: { n: { type: 'integer' } } } } },
});

class MemoryFeed implements ChangeFeed {
  changes: RecordChange[] = [];
  wake: (() => void) | undefined;
  listening = false;
  /** Runs before each read answers (to commit more changes "meanwhile"). */
  beforeRead: (() => void) | undefined;
  prunedThrough = 0n;

  commit(n: number): void {
    const seq = this.changes.length + 1;
    this.changes.push({ cursor: String(seq), schema: 'mem.Item', id: `i${n}`, version: 1, op: 'CREATE', committedAt: new Date().toISOString(), record: { id: `i${n}`, version: 1, data: { n } } });
  }
  async readChanges(_d: unknown, after: string, limit: number): Promise<ChangeBatch> {
    await Promise.resolve();
    this.beforeRead?.();
    if (BigInt(after) < this.prunedThrough) return { changes: [], expired: true };
    return { changes: this.changes.filter((c) => BigInt(c.cursor) > BigInt(after)).slice(0, limit), expired: false };
  }
  async head(): Promise<string> {
    return String(this.changes.length);
  }
  async subscribeWakeups(_d: unknown, onWake: () => void): Promise<() => Promise<void>> {
    this.wake = onWake;
    this.listening = true;
    return async () => {
      this.listening = false;
    };
  }
  async prune(): Promise<number> {
    return 0;
  }
}

const capabilities = { changeFeed: true } as DriverCapabilities;

function setup(options: ConstructorParameters<typeof ChangeDispatcher>[2] = {}) {
  const feed = new MemoryFeed();
  const driver = { capabilities, changes: feed } as unknown as LocationDriver;
  const dispatcher = new ChangeDispatcher(() => driver, pino({ level: 'silent' }), { pollMs: 60_000, pageSize: 3, ...options });
  return { feed, dispatcher };
}

async function drain(iterable: AsyncIterable<ChangeEvent>, n: number): Promise<number[]> {
  const out: number[] = [];
  const it = iterable[Symbol.asyncIterator]();
  while (out.length < n) {
    const next = await Promise.race([it.next(), new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 1000))]);
    if (next === 'timeout' || next.done) break;
    out.push(next.value.record!.n as number);
  }
  return out;
}

const settle = () => new Promise((r) => setTimeout(r, 20));

describe('change dispatcher (in-memory feed)', () => {
  it('replays after a cursor while changes keep committing: each once, in order, then live', async () => {
    // Reads back to back, so that the reader's reads interleave with the replay's.
    const { feed, dispatcher } = setup({ minReadIntervalMs: 0 });
    for (let n = 1; n <= 4; n++) feed.commit(n);
    // A live subscription makes the dataset's reader start at the head (4).
    const live = await dispatcher.subscribe(dataset, { schema: 'mem.Item' }, () => undefined);
    let extra = 5;
    // Every read of the replay sees one more commit, and wakes the reader as NOTIFY would.
    feed.beforeRead = () => {
      if (extra <= 9) {
        feed.commit(extra++);
        feed.wake?.();
      }
    };
    const resumed = await dispatcher.subscribe(dataset, { schema: 'mem.Item', after: '1' }, () => undefined);
    feed.beforeRead = undefined;
    feed.commit(10);
    feed.wake?.();
    await settle();
    expect(await drain(resumed, 9)).to.deep.equal([2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(await drain(live, 6)).to.deep.equal([5, 6, 7, 8, 9, 10]);
    await dispatcher.close();
  });

  it('serves the wake-ups that come within the read interval with one read, losing none', async () => {
    const { feed, dispatcher } = setup({ minReadIntervalMs: 300, pageSize: 100 });
    const sub = await dispatcher.subscribe(dataset, { schema: 'mem.Item' }, () => undefined);
    let reads = 0;
    feed.beforeRead = () => void reads++;
    // The first wake-up reads at once; the next four, inside the interval, share one later read.
    for (let n = 1; n <= 5; n++) {
      feed.commit(n);
      feed.wake?.();
      await settle();
    }
    expect(reads).to.equal(1);
    expect(await drain(sub, 5)).to.deep.equal([1, 2, 3, 4, 5]);
    expect(reads).to.equal(2);
    await dispatcher.close();
  });

  it('filters and ids on the record; an expired cursor is CURSOR_EXPIRED; a bad filter or cursor is a 400', async () => {
    const { feed, dispatcher } = setup();
    const even = await dispatcher.subscribe(dataset, { schema: 'mem.Item', filter: 'n >= 2 and n <= 4' }, () => undefined);
    const byId = await dispatcher.subscribe(dataset, { schema: 'mem.Item', ids: ['i5'] }, () => undefined);
    for (let n = 1; n <= 6; n++) feed.commit(n);
    feed.wake?.();
    await settle();
    expect(await drain(even, 3)).to.deep.equal([2, 3, 4]);
    expect(await drain(byId, 1)).to.deep.equal([5]);
    feed.prunedThrough = 3n;
    const expired = await dispatcher.subscribe(dataset, { schema: 'mem.Item', after: '1' }, () => undefined).catch((e: unknown) => e);
    expect((expired as ApiError).code).to.equal('CURSOR_EXPIRED');
    const filter = await dispatcher.subscribe(dataset, { schema: 'mem.Item', filter: 'n >' }, () => undefined).catch((e: unknown) => e);
    expect((filter as ApiError).code).to.equal('INVALID_FILTER');
    const cursor = await dispatcher.subscribe(dataset, { schema: 'mem.Item', after: 'x' }, () => undefined).catch((e: unknown) => e);
    expect((cursor as ApiError).code).to.equal('INVALID_CURSOR');
    const schema = await dispatcher.subscribe(dataset, { schema: 'mem.Nope' }, () => undefined).catch((e: unknown) => e);
    expect((schema as ApiError).code).to.equal('SCHEMA_NOT_FOUND');
    await dispatcher.close();
  });

  it('ends a subscription whose queue is full as a slow consumer; the others get everything', async () => {
    const { feed, dispatcher } = setup({ queueBound: 5 });
    let slow = 0;
    const lagging = await dispatcher.subscribe(dataset, { schema: 'mem.Item' }, () => slow++);
    const keeping = await dispatcher.subscribe(dataset, { schema: 'mem.Item' }, () => expect.fail('not slow'));
    const got = drain(keeping, 20);
    // Four at a time: a reader keeping up never has more than the bound waiting.
    for (let n = 1; n <= 20; n++) {
      feed.commit(n);
      if (n % 4 === 0) {
        feed.wake?.();
        await settle();
      }
    }
    expect(await got).to.have.length(20);
    expect(slow).to.equal(1);
    expect(dispatcher.slowConsumers).to.equal(1);
    expect(await drain(lagging, 20)).to.deep.equal([1, 2, 3, 4, 5]); // what was queued, then the end
    await dispatcher.close();
  });

  it('counts a subscription once its start position is taken: a change committed after it is counted reaches it, however late the store gives the position', async () => {
    const { feed, dispatcher } = setup();
    // The store answers late (DynamoDB under load: seconds for DescribeStream and GetShardIterator),
    // with the position the stream has when it answers.
    let answer!: () => void;
    const late = new Promise<void>((resolve) => (answer = resolve));
    feed.head = async () => {
      await late;
      return String(feed.changes.length);
    };
    const subscribing = dispatcher.subscribe(dataset, { schema: 'mem.Item' }, () => undefined);
    // A client writes once das_subscriptions counts its subscription (as the benchmark does).
    const writer = (async () => {
      while (dispatcher.subscriptions < 1) await new Promise((resolve) => setTimeout(resolve, 5));
      feed.commit(1);
    })();
    await settle();
    answer();
    await writer;
    const events = await subscribing;
    feed.wake!();
    expect(await drain(events, 1)).to.deep.equal([1]);
    await dispatcher.close();
  });

  it('refuses subscriptions past the per-replica limit; the reader stops with the last subscription', async () => {
    const { feed, dispatcher } = setup({ maxSubscriptions: 2 });
    const one = await dispatcher.subscribe(dataset, { schema: 'mem.Item' }, () => undefined);
    const two = await dispatcher.subscribe(dataset, { schema: 'mem.Item' }, () => undefined);
    const three = await dispatcher.subscribe(dataset, { schema: 'mem.Item' }, () => undefined).catch((e: unknown) => e);
    expect((three as ApiError).status).to.equal(429);
    expect(dispatcher.subscriptions).to.equal(2);
    expect(feed.listening).to.equal(true);
    await one[Symbol.asyncIterator]().return!();
    await two[Symbol.asyncIterator]().return!();
    await settle();
    expect(dispatcher.subscriptions).to.equal(0);
    expect(feed.listening).to.equal(false);
    await dispatcher.close();
  });
});
