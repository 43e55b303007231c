/**
 * The replica's change dispatcher: per dataset with subscribers, one reader of the store's change
 * feed (woken by the feed's wake-ups, polling as a fallback) that reads each change once and fans
 * it out to the matching subscriptions (schema, `ids`, filter evaluated in memory on the record
 * image with model/filter.ts), in commit order, each change at most once per subscription (a
 * subscription remembers the last cursor it got). `after` replays the changes since that cursor
 * first, then goes live without a gap or a repeat. Pushes never wait for a client: a subscription
 * whose queue is full is ended as a slow consumer.
 *
 * Cursors are the feed's decimal sequence numbers, increasing in commit order (contract.ts), unless
 * the feed declares its own order (DynamoDB Streams: a position per shard, `cursorOrder`).
 */
import type { Logger } from 'pino';
import { compileFilter, FilterError, matchesFilter, type TypedFilter } from '../../../model/filter.js';
import type { DatasetConfig } from '../../../model/types.js';
import type { ChangeFeed, CursorOrder, LocationDriver, RecordChange } from '../engine/contract.js';
import { ApiError, badRequest } from '../engine/errors.js';
import { schemaDefOf } from '../engine/layout.js';
import { fromStore } from '../engine/store-outcomes.js';
import type { ApiRecord } from '../engine/engine.js';
import { EventQueue } from './event-queue.js';
import { traceDelivery } from '../telemetry/delivery-spans.js';
import type { ByteBudget } from './send-budget.js';
import type { ChangeEvent, SubscriptionRequest } from './schema.js';

export interface DispatcherOptions {
  /** Reads the feed this often even without a wake-up (a lost NOTIFY, a broken LISTEN). */
  pollMs?: number;
  /** Changes read per feed call. */
  pageSize?: number;
  /**
   * At least this long between the starts of two reads of a dataset's feed (0: none): wake-ups in
   * between are served by one read. A read numbers the rows writers have just appended (an UPDATE
   * on the pages they insert into) and runs a few statements; one read per write took store CPU
   * and contended with the writers (docs/subscriptions.md, Benchmark).
   */
  minReadIntervalMs?: number;
  /** Events a subscription may have waiting for its client; one more and it is a slow consumer. */
  queueBound?: number;
  /** Subscriptions on this replica, all datasets together. */
  maxSubscriptions?: number;
  /** How long the store keeps changes (resume window). */
  retentionMs?: number;
  /** How often this replica prunes the change logs of the datasets it serves. */
  pruneEveryMs?: number;
}

export const DEFAULT_RETENTION_MS = 24 * 3600_000;

interface Subscription {
  dataset: string;
  schema: string;
  filter?: TypedFilter;
  ids?: ReadonlySet<string>;
  queue: EventQueue<ChangeEvent>;
  /** The position of the last change this subscription was given (or skipped): nothing it has is sent again. */
  last: unknown;
  order: CursorOrder;
  /** Replaying `after`: live changes wait in `held` until the replay has caught up. */
  held?: RecordChange[];
  onSlow: () => void;
}

interface DatasetFeed {
  dataset: DatasetConfig;
  feed: ChangeFeed;
  order: CursorOrder;
  cursor: string;
  subs: Set<Subscription>;
  ready: Promise<void>;
  stopWakeups?: () => Promise<void>;
  timer?: NodeJS.Timeout;
  reading: boolean;
  again: boolean;
  closed: boolean;
  /** When the last read started (minReadIntervalMs). */
  lastRead: number;
}

/**
 * One event object per change, shared by every subscription it goes to: its GraphQL result is then
 * computed once per query (shared-execution.ts), not once per subscriber.
 */
const events = new WeakMap<RecordChange, ChangeEvent>();
function eventOf(change: RecordChange): ChangeEvent {
  let event = events.get(change);
  if (!event) {
    const record: ApiRecord | null = change.record ? ({ id: change.record.id, version: change.record.version, ...(change.op === 'DELETE' ? {} : change.record.data) } as ApiRecord) : null;
    events.set(change, (event = { op: change.op, cursor: change.cursor, record }));
  }
  return event;
}

/** An event's size as its client receives it, roughly the record's JSON: measured once per change, for byte budgets. */
const sizes = new WeakMap<ChangeEvent, number>();
export function eventBytes(event: ChangeEvent): number {
  let size = sizes.get(event);
  if (size === undefined) sizes.set(event, (size = 64 + event.cursor.length + (event.record ? JSON.stringify(event.record).length : 0)));
  return size;
}

/** Decimal positions increasing in commit order (contract.ts): the default cursor order. */
const decimalPositions = new WeakMap<RecordChange, bigint>();
export const decimalCursorOrder: CursorOrder<bigint> = {
  parse: (cursor) => (/^(0|[1-9][0-9]{0,18})$/.test(cursor) ? BigInt(cursor) : undefined),
  has(at, change) {
    let position = decimalPositions.get(change);
    if (position === undefined) decimalPositions.set(change, (position = BigInt(change.cursor)));
    return position <= at;
  },
  advance: (at, change) => {
    const position = decimalPositions.get(change) ?? BigInt(change.cursor);
    return position > at ? position : at;
  },
  covers: (a, b) => a >= b,
};

export class ChangeDispatcher {
  private readonly feeds = new Map<string, DatasetFeed>();
  private readonly options: Required<DispatcherOptions>;
  /** Subscriptions opened, starting ones included: what the per-replica cap counts. */
  private active = 0;
  /** Subscriptions whose start position is taken (added to their dataset's reader). */
  private registered = 0;
  private pruneTimer: NodeJS.Timeout | undefined;
  /** Changes delivered to subscriptions since start (all datasets). */
  delivered = 0;
  /** Subscriptions ended as slow consumers since start. */
  slowConsumers = 0;
  /** Reads of each dataset's feed by this replica's live reader since start (a counter). */
  readonly reads = new Map<string, number>();
  /** Per dataset, how long before the last read its newest change committed (0 when it found none). */
  readonly lagMs = new Map<string, number>();

  constructor(
    private readonly driverFor: (dataset: DatasetConfig) => LocationDriver,
    private readonly logger: Logger,
    options: DispatcherOptions = {},
  ) {
    this.options = {
      pollMs: options.pollMs ?? 1000,
      pageSize: options.pageSize ?? 500,
      minReadIntervalMs: options.minReadIntervalMs ?? 25,
      queueBound: options.queueBound ?? 1000,
      maxSubscriptions: options.maxSubscriptions ?? 10_000,
      retentionMs: options.retentionMs ?? DEFAULT_RETENTION_MS,
      pruneEveryMs: options.pruneEveryMs ?? 60_000,
    };
  }

  /**
   * Subscriptions open on this replica and reading (das_subscriptions): each has its start position,
   * so every change committed from now on reaches it. One still starting is not counted: taking the
   * position is store calls (DynamoDB: DescribeTable, DescribeStream, GetShardIterator per stream),
   * seconds when the store is loaded, and a change committed before it is taken is not delivered.
   */
  get subscriptions(): number {
    return this.registered;
  }

  /** Subscriptions open on this replica, starting ones included: what the per-replica cap counts. */
  get open(): number {
    return this.active;
  }

  /** The per-replica cap (memory-caps.ts): WebSocket upgrades are refused once it is reached. */
  get maxSubscriptions(): number {
    return this.options.maxSubscriptions;
  }

  /**
   * Opens a subscription: checks the request (400s), replays from `after` (410 CURSOR_EXPIRED when
   * older than the retention), and gives the events as an async iterable. Queued events count
   * against `budget` (the connection's bytes, send-budget.ts) when given.
   */
  async subscribe(dataset: DatasetConfig, request: SubscriptionRequest, onSlow: () => void, budget?: ByteBudget): Promise<AsyncIterable<ChangeEvent>> {
    const driver = this.driverFor(dataset);
    if (!driver.capabilities.changeFeed || !driver.changes) throw new ApiError(501, 'NOT_AVAILABLE', `dataset "${dataset.id}" is on a location without a change feed`);
    const def = schemaDefOf(dataset, request.schema);
    if (!def) throw new ApiError(404, 'SCHEMA_NOT_FOUND', `dataset "${dataset.id}" has no schema "${request.schema}"`);
    let filter: TypedFilter | undefined;
    if (request.filter !== undefined && request.filter.trim() !== '') {
      try {
        filter = compileFilter(request.filter, def);
      } catch (err) {
        if (err instanceof FilterError) throw badRequest('INVALID_FILTER', err.message, [{ path: '$.filter', message: err.message }]);
        throw err;
      }
    }
    const order = driver.changes.cursorOrder ?? decimalCursorOrder;
    let after: unknown;
    if (request.after !== undefined) {
      after = order.parse(request.after);
      if (after === undefined) throw badRequest('INVALID_CURSOR', `"${request.after.slice(0, 40)}" is not a cursor of this dataset's changes`, [{ path: '$.after', message: 'not a cursor' }]);
    }
    if (this.active >= this.options.maxSubscriptions) throw new ApiError(429, 'TOO_MANY_SUBSCRIPTIONS', `this replica serves at most ${this.options.maxSubscriptions} subscriptions; retry on another or later`);

    const f = this.feedOf(dataset, driver.changes);
    this.active++;
    let sub: Subscription | undefined;
    const queue = new EventQueue<ChangeEvent>(
      this.options.queueBound,
      () => {
        this.active--;
        if (sub) this.leave(f, sub);
      },
      budget,
      eventBytes,
    );
    try {
      await f.ready;
    } catch (err) {
      queue.end();
      throw fromStore(err);
    }
    const live = f.order.parse(f.cursor);
    sub = { dataset: dataset.id, schema: request.schema, filter, ids: request.ids ? new Set(request.ids) : undefined, queue, last: after ?? live, order: f.order, onSlow };
    if (after === undefined || f.order.covers(after, live)) {
      this.register(f, sub);
      return queue;
    }
    // Replay: live changes are held while the feed is read from `after` up to where it ends.
    sub.held = [];
    let replayFrom = request.after!;
    this.register(f, sub);
    try {
      for (;;) {
        const batch = await f.feed.readChanges(f.dataset, replayFrom, this.options.pageSize);
        if (batch.expired) throw new ApiError(410, 'CURSOR_EXPIRED', `cursor ${request.after} is older than the change retention (${Math.round(this.options.retentionMs / 3600_000)} h); subscribe without after and read the current state with a query`);
        for (const change of batch.changes) this.deliver(sub, change);
        if (batch.changes.length < this.options.pageSize) break;
        replayFrom = batch.position ?? batch.changes[batch.changes.length - 1].cursor;
      }
    } catch (err) {
      queue.end();
      throw fromStore(err);
    }
    const held = sub.held;
    sub.held = undefined;
    for (const change of held) this.deliver(sub, change);
    return queue;
  }

  /** The served config changed: images are read with its layout from now on. */
  updateDataset(dataset: DatasetConfig | undefined, id: string): void {
    const f = this.feeds.get(id);
    if (!f) return;
    if (dataset) {
      f.dataset = dataset;
      return;
    }
    // The dataset is gone: its subscriptions end.
    for (const sub of [...f.subs]) sub.queue.end(new ApiError(404, 'DATASET_NOT_FOUND', `dataset "${id}" is no longer served`));
  }

  /** Prunes the change logs of the datasets `served` lists, every pruneEveryMs (every replica does; it is idempotent). */
  startPruning(served: () => DatasetConfig[]): void {
    const run = async () => {
      for (const dataset of served()) {
        const driver = this.driverFor(dataset);
        if (!driver.capabilities.changeFeed || !driver.changes) continue;
        try {
          const pruned = await driver.changes.prune(dataset, this.options.retentionMs);
          if (pruned) this.logger.info({ dataset: dataset.id, pruned }, 'change log pruned past the retention');
        } catch (err) {
          this.logger.warn({ dataset: dataset.id, err: (err as Error).message }, 'change log could not be pruned');
        }
      }
    };
    this.pruneTimer = setInterval(() => void run(), this.options.pruneEveryMs);
    this.pruneTimer.unref();
    void run();
  }

  private feedOf(dataset: DatasetConfig, feed: ChangeFeed): DatasetFeed {
    const existing = this.feeds.get(dataset.id);
    if (existing) return existing;
    const f: DatasetFeed = { dataset, feed, order: feed.cursorOrder ?? decimalCursorOrder, cursor: '0', subs: new Set(), ready: Promise.resolve(), reading: false, again: false, closed: false, lastRead: 0 };
    f.ready = (async () => {
      f.cursor = await feed.head(dataset);
      const stop = await feed.subscribeWakeups(dataset, () => void this.pump(f));
      if (f.closed) return void (await stop());
      f.stopWakeups = stop;
      f.timer = setInterval(() => void this.pump(f), feed.fallbackPollMs ?? this.options.pollMs);
      f.timer.unref();
    })();
    // A feed that could not start is forgotten, so the next subscription tries again.
    f.ready.catch(() => {
      if (this.feeds.get(dataset.id) === f) this.feeds.delete(dataset.id);
    });
    this.feeds.set(dataset.id, f);
    return f;
  }

  private register(f: DatasetFeed, sub: Subscription): void {
    f.subs.add(sub);
    this.registered++;
  }

  private leave(f: DatasetFeed, sub: Subscription): void {
    if (f.subs.delete(sub)) this.registered--;
    if (f.subs.size || f.closed) return;
    // The last subscription left: stop reading the feed.
    f.closed = true;
    if (this.feeds.get(f.dataset.id) === f) this.feeds.delete(f.dataset.id);
    if (f.timer) clearInterval(f.timer);
    void f.ready.then(() => f.stopWakeups?.()).catch(() => undefined);
  }

  /** Reads the feed from the dataset's cursor to its end, once however many wake-ups came. */
  private async pump(f: DatasetFeed): Promise<void> {
    if (f.reading) {
      f.again = true;
      return;
    }
    f.reading = true;
    try {
      do {
        const wait = f.lastRead + this.options.minReadIntervalMs - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        // Wake-ups until now are served by this read.
        f.again = false;
        f.lastRead = Date.now();
        for (;;) {
          if (f.closed) return;
          const batch = await f.feed.readChanges(f.dataset, f.cursor, this.options.pageSize);
          this.reads.set(f.dataset.id, (this.reads.get(f.dataset.id) ?? 0) + 1);
          if (batch.expired) {
            // This replica fell behind the retention (it could not read for a day): skip ahead, loudly.
            this.logger.error({ dataset: f.dataset.id, cursor: f.cursor }, 'change feed reader fell behind the retention; changes were lost to its subscribers');
            f.cursor = await f.feed.head(f.dataset);
            break;
          }
          for (const change of batch.changes) {
            for (const sub of f.subs) this.route(sub, change);
            f.cursor = change.cursor;
          }
          if (batch.position) f.cursor = batch.position;
          const newest = batch.changes.at(-1);
          this.lagMs.set(f.dataset.id, newest ? Math.max(0, Date.now() - Date.parse(newest.committedAt)) : 0);
          if (batch.changes.length < this.options.pageSize) break;
        }
      } while (f.again);
    } catch (err) {
      this.logger.warn({ dataset: f.dataset.id, err: (err as Error).message }, 'change feed could not be read; trying again');
    } finally {
      f.reading = false;
    }
  }

  /** A live change: held while the subscription replays, else delivered. */
  private route(sub: Subscription, change: RecordChange): void {
    if (!sub.held) return this.deliver(sub, change);
    sub.held.push(change);
    if (sub.held.length > this.options.queueBound * 4) this.slow(sub);
  }

  /** Gives a change to a subscription if it is new to it and matches. */
  private deliver(sub: Subscription, change: RecordChange): void {
    if (sub.order.has(sub.last, change)) return;
    sub.last = sub.order.advance(sub.last, change);
    if (change.schema !== sub.schema) return;
    if (sub.ids && !sub.ids.has(change.id)) return;
    const image = change.op === 'DELETE' ? change.previous : change.record;
    if (sub.filter && !(image && matchesFilter(sub.filter, image))) return;
    if (sub.queue.push(eventOf(change))) {
      this.delivered++;
      traceDelivery(sub.dataset, change);
    } else this.slow(sub);
  }

  /** A connection its server ended for the bytes it left unread (websocket.ts): counted with the subscriptions ended here. */
  countSlowConnection(): void {
    this.slowConsumers++;
  }

  private slow(sub: Subscription): void {
    this.slowConsumers++;
    sub.queue.end();
    sub.onSlow();
  }

  async close(): Promise<void> {
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    for (const f of [...this.feeds.values()]) for (const sub of [...f.subs]) sub.queue.end();
    await Promise.all([...this.feeds.values()].map((f) => f.ready.then(() => f.stopWakeups?.()).catch(() => undefined)));
    this.feeds.clear();
  }
}
