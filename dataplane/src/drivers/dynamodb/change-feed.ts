/**
 * The DynamoDB change feed (docs/dynamodb.md, "Change feed"): DynamoDB Streams (NEW_AND_OLD_IMAGES)
 * of each schema's records table, read with @aws-sdk/client-dynamodb-streams. Shards are listed
 * with DescribeStream (paged), a closed shard is read to its end before its children, and the
 * cursor holds a position per shard (stream-cursor.ts). Streams trim themselves after 24 hours: a
 * cursor older than the retention, or whose shard was trimmed, is expired.
 *
 * The records table's stream is the change: INSERT a create, MODIFY an update (a MODIFY that keeps
 * the version, such as a sort index backfill or a bulk load re-run, is none), REMOVE a delete (its
 * old image is the version before it; the tombstone is the next version). Nothing is read unless
 * the dispatcher asks (a replica with subscribers); each shard is read at most once every
 * `shardReadMs` by this replica, and throttling (LimitExceededException) backs off.
 */
import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type _Record as StreamRecord,
  type Shard,
  type ShardIteratorType,
} from '@aws-sdk/client-dynamodb-streams';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Logger } from 'pino';
import type { DatasetConfig, RecordSchemaDef } from '../../../../model/types.js';
import { StoreError, type ChangeBatch, type ChangeFeed, type RecordChange, type StoredRecord } from '../../engine/contract.js';
import { compareSeq, decodePosition, DONE, encodePosition, markOrigin, shardKey, streamCursorOrder, type StreamPosition } from './stream-cursor.js';
import { schemaTables } from './tables.js';

/** What the feed needs of the driver. */
export interface StreamFeedHost {
  tables(dataset: DatasetConfig): Pick<DynamoDBClient, 'send'>;
  streams(dataset: DatasetConfig): { send(command: unknown): Promise<unknown> };
  def(dataset: DatasetConfig, schema: string): RecordSchemaDef | undefined;
  toRecord(def: RecordSchemaDef, item: Record<string, unknown>): StoredRecord;
  failure(err: unknown): unknown;
  logger: Logger;
}

export interface StreamFeedOptions {
  /** Least time between two GetRecords of one shard by this replica (Streams allow ~5 a second per shard, shared by every reader). */
  shardReadMs: number;
  /** Cursors older than this are expired (Streams keep records 24 hours). */
  retentionMs: number;
  /** How often a replica with subscribers is woken to read. */
  wakeMs: number;
  /** How long a stream's shard listing is reused (a closed shard refreshes it at once). */
  listingMs: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

export const STREAM_RETENTION_MS = 24 * 3600_000;
/** Streams' time stamps are whole seconds (DynamoDB Local: whole minutes). */
const TIME_GRAIN_MS = 60_000;
/** Shard iterators live 15 minutes; cached ones are used for 10. */
const ITERATOR_TTL_MS = 10 * 60_000;
const MAX_ITERATORS = 10_000;
const THROTTLED = new Set(['LimitExceededException', 'ThrottlingException', 'ProvisionedThroughputExceededException', 'RequestLimitExceeded']);
const THROTTLE_TRIES = 6;

/** A record read from a shard, and whether it is a change. */
interface Read {
  key: string;
  seq: string;
  change?: RecordChange;
  /** The last record of a closed shard read to its end. */
  last: boolean;
}

export class DynamoDbChangeFeed implements ChangeFeed {
  readonly cursorOrder = streamCursorOrder;
  /** The wake-up timer reads; the dispatcher's own fallback only every few minutes. */
  readonly fallbackPollMs = 300_000;
  private readonly arns = new Map<string, { arn?: string; at: number }>();
  private readonly listings = new Map<string, { shards: Shard[]; at: number }>();
  private readonly iterators = new Map<string, { iterator: string; at: number }>();
  private readonly nextRead = new Map<string, number>();
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  /** Throttled calls since start (LimitExceededException and its kin), each followed by a back-off. */
  throttled = 0;

  constructor(
    private readonly host: StreamFeedHost,
    private readonly options: StreamFeedOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  async head(dataset: DatasetConfig): Promise<string> {
    const since = this.now();
    const shards: Record<string, string> = {};
    try {
      for (const schema of this.schemas(dataset)) {
        const arn = await this.streamArn(dataset, schema);
        if (!arn) continue;
        for (const shard of await this.listing(dataset, arn)) {
          const key = shardKey(schema, shard.ShardId!);
          // Closed shards hold only the past; open ones are read from here on.
          if (shard.SequenceNumberRange?.EndingSequenceNumber) shards[key] = DONE;
          else {
            const iterator = await this.iterator(dataset, arn, shard.ShardId!, 'LATEST');
            this.remember(arn, shard.ShardId!, `s${since}`, iterator);
          }
        }
      }
    } catch (err) {
      throw this.failure(err);
    }
    return encodePosition({ since, time: since, shards });
  }

  async readChanges(dataset: DatasetConfig, after: string, limit: number): Promise<ChangeBatch> {
    const from = decodePosition(after);
    if (!from) throw new StoreError({ kind: 'invalid-query', detail: `"${after.slice(0, 40)}" is not a cursor of this dataset's changes` });
    if (this.now() - from.time > this.options.retentionMs) return { changes: [], expired: true };
    const start: StreamPosition = { ...from, shards: { ...from.shards } };
    const reads: Read[] = [];
    const began = this.now();
    try {
      for (const schema of this.schemas(dataset)) {
        if (reads.length >= limit) break;
        const arn = await this.streamArn(dataset, schema);
        if (!arn) continue;
        const shards = await this.listing(dataset, arn);
        const listed = new Set(shards.map((s) => shardKey(schema, s.ShardId!)));
        for (const [key, value] of Object.entries(start.shards)) {
          if (!key.startsWith(`${schema} `) || listed.has(key)) continue;
          // A shard the stream no longer lists was trimmed: fine when it had been read to its end.
          if (value !== DONE) return { changes: [], expired: true };
          delete start.shards[key];
        }
        const outcome = await this.readStream(dataset, schema, arn, shards, start, limit, reads);
        if (outcome === 'expired') return { changes: [], expired: true };
      }
    } catch (err) {
      throw this.failure(err);
    }
    // A read that got to the end of every shard has seen everything up to when it began: the
    // reader's position is that fresh (a quiet dataset's reader does not age past the retention).
    return this.batch(start, reads, reads.length < limit ? began : undefined);
  }

  /** Reads the stream's shards, parents before children, appending to `reads`; DONE marks go into `position`. */
  private async readStream(dataset: DatasetConfig, schema: string, arn: string, shards: Shard[], position: StreamPosition, limit: number, reads: Read[]): Promise<'ok' | 'expired'> {
    const def = this.host.def(dataset, schema)!;
    const byId = new Map(shards.map((s) => [s.ShardId!, s]));
    for (const shard of parentsFirst(shards)) {
      if (reads.length >= limit) break;
      const key = shardKey(schema, shard.ShardId!);
      const at = position.shards[key];
      if (at === DONE) continue;
      const parent = shard.ParentShardId && byId.has(shard.ParentShardId) ? shardKey(schema, shard.ParentShardId) : undefined;
      if (parent && position.shards[parent] !== DONE) continue;
      const got = await this.readShard(dataset, arn, shard.ShardId!, at, position.since, limit - reads.length);
      if (got === 'expired') return 'expired';
      const floor = Math.floor(position.since / TIME_GRAIN_MS) * TIME_GRAIN_MS;
      got.records.forEach((record, i) => {
        const seq = record.dynamodb!.SequenceNumber!;
        const old = at === undefined && (record.dynamodb?.ApproximateCreationDateTime?.getTime() ?? floor) < floor;
        const change = old ? undefined : toChange(schema, def, record, this.host.toRecord);
        if (change) markOrigin(change, key, seq);
        reads.push({ key, seq, change, last: got.closed && i === got.records.length - 1 });
      });
      if (got.closed) {
        if (!got.records.length) position.shards[key] = DONE;
        // Its children may now be listed.
        this.listings.delete(arn);
      }
    }
    return 'ok';
  }

  /** Changes in sequence order, each with the cursor after it; the position after the last record read. */
  private batch(start: StreamPosition, reads: Read[], complete?: number): ChangeBatch {
    reads.sort((a, b) => compareSeq(a.seq, b.seq));
    const p: StreamPosition = { ...start, shards: { ...start.shards } };
    const changes: RecordChange[] = [];
    for (const read of reads) {
      p.shards[read.key] = read.last ? DONE : read.seq;
      if (!read.change) continue;
      p.time = Math.max(p.time, Date.parse(read.change.committedAt) || 0);
      read.change.cursor = encodePosition(p);
      changes.push(read.change);
    }
    if (complete !== undefined) p.time = Math.max(p.time, complete);
    const position = encodePosition(p);
    return { changes, expired: false, ...(position !== changes.at(-1)?.cursor ? { position } : {}) };
  }

  /** Records of a shard after `at` (a sequence number), or from `since` when the shard has no position yet. */
  private async readShard(dataset: DatasetConfig, arn: string, shardId: string, at: string | undefined, since: number, limit: number): Promise<{ records: StreamRecord[]; closed: boolean } | 'expired'> {
    const from = at === undefined ? `s${since}` : `a${at}`;
    const cacheKey = `${arn}|${shardId}|${from}`;
    for (let attempt = 0; ; attempt++) {
      const cached = this.iterators.get(cacheKey);
      let iterator = cached && this.now() - cached.at < ITERATOR_TTL_MS ? cached.iterator : undefined;
      try {
        if (!iterator) iterator = at === undefined ? await this.iterator(dataset, arn, shardId, 'TRIM_HORIZON') : await this.iterator(dataset, arn, shardId, 'AFTER_SEQUENCE_NUMBER', at);
        await this.pace(`${arn}|${shardId}`);
        const answer = (await this.call(dataset, new GetRecordsCommand({ ShardIterator: iterator, Limit: Math.max(1, Math.min(1000, limit)) }))) as { Records?: StreamRecord[]; NextShardIterator?: string };
        this.iterators.delete(cacheKey);
        const records = answer.Records ?? [];
        if (answer.NextShardIterator) {
          const lastSeq = records.at(-1)?.dynamodb?.SequenceNumber;
          this.remember(arn, shardId, lastSeq ? `a${lastSeq}` : from, answer.NextShardIterator);
        }
        return { records, closed: !answer.NextShardIterator };
      } catch (err) {
        const name = (err as Error).name;
        // A LATEST iterator taken on a shard without records can land before its first record
        // (DynamoDB Local does this): a shard read from `since` starts from its oldest record instead.
        if (name === 'TrimmedDataAccessException' && at === undefined && cached) {
          this.iterators.delete(cacheKey);
          continue;
        }
        if (name === 'TrimmedDataAccessException') return 'expired';
        // A shard the stream no longer has: trimmed.
        if (name === 'ResourceNotFoundException') return 'expired';
        if (name === 'ExpiredIteratorException' && cached && attempt < 2) {
          this.iterators.delete(cacheKey);
          continue;
        }
        throw err;
      }
    }
  }

  private async iterator(dataset: DatasetConfig, arn: string, shardId: string, type: ShardIteratorType, seq?: string): Promise<string> {
    const answer = (await this.call(dataset, new GetShardIteratorCommand({ StreamArn: arn, ShardId: shardId, ShardIteratorType: type, ...(seq ? { SequenceNumber: seq } : {}) }))) as { ShardIterator?: string };
    return answer.ShardIterator!;
  }

  private remember(arn: string, shardId: string, from: string, iterator: string): void {
    if (this.iterators.size >= MAX_ITERATORS) this.iterators.delete(this.iterators.keys().next().value!);
    this.iterators.set(`${arn}|${shardId}|${from}`, { iterator, at: this.now() });
  }

  /** Waits until this replica may read the shard again (its share of the shard's read budget). */
  private async pace(shard: string): Promise<void> {
    const wait = (this.nextRead.get(shard) ?? 0) - this.now();
    this.nextRead.set(shard, Math.max(this.now(), this.nextRead.get(shard) ?? 0) + this.options.shardReadMs);
    if (wait > 0) await this.sleep(wait);
  }

  /** A Streams call; throttling backs off (growing, jittered) and tries again, then gives up as unavailable. */
  private async call(dataset: DatasetConfig, command: unknown): Promise<unknown> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.host.streams(dataset).send(command);
      } catch (err) {
        if (!THROTTLED.has((err as Error).name)) throw err;
        this.throttled++;
        if (attempt >= THROTTLE_TRIES) throw new StoreError({ kind: 'unavailable', detail: `DynamoDB Streams kept throttling (${(err as Error).name}); the feed tries again on its next read` });
        await this.sleep(Math.min(3200, 100 * 2 ** attempt) * (0.5 + Math.random() / 2));
      }
    }
  }

  /** The records table's latest stream, remembered for a minute. */
  private async streamArn(dataset: DatasetConfig, schema: string): Promise<string | undefined> {
    const table = schemaTables(dataset, schema).records;
    const known = this.arns.get(table);
    if (known && this.now() - known.at < 60_000) return known.arn;
    const answer = await this.host.tables(dataset).send(new DescribeTableCommand({ TableName: table }));
    const arn = answer.Table?.StreamSpecification?.StreamEnabled ? answer.Table.LatestStreamArn : undefined;
    this.arns.set(table, { arn, at: this.now() });
    return arn;
  }

  /** Every shard of the stream (DescribeStream, page after page). */
  private async listing(dataset: DatasetConfig, arn: string): Promise<Shard[]> {
    const known = this.listings.get(arn);
    if (known && this.now() - known.at < this.options.listingMs) return known.shards;
    const shards: Shard[] = [];
    let start: string | undefined;
    do {
      const answer = (await this.call(dataset, new DescribeStreamCommand({ StreamArn: arn, ...(start ? { ExclusiveStartShardId: start } : {}) }))) as {
        StreamDescription?: { Shards?: Shard[]; LastEvaluatedShardId?: string };
      };
      shards.push(...(answer.StreamDescription?.Shards ?? []));
      start = answer.StreamDescription?.LastEvaluatedShardId;
    } while (start);
    this.listings.set(arn, { shards, at: this.now() });
    return shards;
  }

  private schemas(dataset: DatasetConfig): string[] {
    return Object.keys(dataset.schemas).filter((schema) => this.host.def(dataset, schema));
  }

  private failure(err: unknown): unknown {
    return err instanceof StoreError ? err : this.host.failure(err);
  }

  async subscribeWakeups(_dataset: DatasetConfig, onWake: () => void): Promise<() => Promise<void>> {
    // Streams notify no one: a replica with subscribers reads on a timer (paced per shard above).
    const timer = setInterval(onWake, this.options.wakeMs);
    timer.unref();
    return async () => clearInterval(timer);
  }

  /** Streams trim themselves after 24 hours: nothing to prune. */
  async prune(): Promise<number> {
    return 0;
  }
}

/** Shards ordered so that a parent comes before its children. */
export function parentsFirst(shards: Shard[]): Shard[] {
  const ids = new Set(shards.map((s) => s.ShardId));
  const out: Shard[] = [];
  const placed = new Set<string>();
  const place = (shard: Shard, depth: number) => {
    if (placed.has(shard.ShardId!) || depth > shards.length) return;
    const parent = shard.ParentShardId && ids.has(shard.ParentShardId) ? shards.find((s) => s.ShardId === shard.ParentShardId) : undefined;
    if (parent) place(parent, depth + 1);
    placed.add(shard.ShardId!);
    out.push(shard);
  };
  for (const shard of shards) place(shard, 0);
  return out;
}

/** A stream record of a records table as a change; undefined when it is no new version. */
export function toChange(schema: string, def: RecordSchemaDef, record: StreamRecord, toRecord: StreamFeedHost['toRecord']): RecordChange | undefined {
  const d = record.dynamodb;
  if (!d) return undefined;
  const image = (i: unknown) => (i ? (unmarshall(i as never, { wrapNumbers: (text: string) => Number(text) }) as Record<string, unknown>) : undefined);
  const [next, prev] = [image(d.NewImage), image(d.OldImage)];
  const at = (d.ApproximateCreationDateTime ?? new Date()).toISOString();
  if (record.eventName === 'REMOVE') {
    if (!prev) return undefined;
    const previous = toRecord(def, prev);
    const version = previous.version + 1;
    return { cursor: '', schema, id: previous.id, version, op: 'DELETE', committedAt: at, record: { id: previous.id, version, data: {}, updatedAt: at, deleted: true }, previous };
  }
  if (!next) return undefined;
  const current = toRecord(def, next);
  if (prev && Number(prev.version) >= current.version) return undefined;
  return { cursor: '', schema, id: current.id, version: current.version, op: record.eventName === 'INSERT' ? 'CREATE' : 'UPDATE', committedAt: current.updatedAt ?? at, record: current };
}
