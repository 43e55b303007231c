/**
 * The DynamoDB change feed against Streams answers given at the client boundary: a fake
 * DynamoDBStreamsClient `send`. DynamoDB Local never splits a stream's shard (it keeps one shard per
 * table for its life, and throttles nothing), so a split (a closed parent with two children, listed
 * over two DescribeStream pages), a throttled read (LimitExceededException) and trimmed data can only
 * be met this way. The feed against DynamoDB Local itself is driver.test.ts (the driver suite) and
 * dataplane/test/subscriptions-dynamodb.test.ts.
 */
import { expect } from 'chai';
import { marshall } from '@aws-sdk/util-dynamodb';
import pino from 'pino';
import type { DatasetConfig, RecordSchemaDef } from '../../../../model/types.js';
import type { RecordChange } from '../../engine/contract.js';
import { DynamoDbChangeFeed, type StreamFeedHost } from './change-feed.js';
import { decodePosition, DONE, encodePosition, streamCursorOrder } from './stream-cursor.js';

const ARN = 'arn:aws:dynamodb:test:0:table/t_s.A/stream/1';
const dataset = { id: 'ds', location: { kind: 'dynamodb' }, schemas: { 's.A': {} } } as unknown as DatasetConfig;

interface FakeRecord {
  seq: string;
  event: 'INSERT' | 'MODIFY' | 'REMOVE';
  id: string;
  version: number;
}

/** Streams as a fake: shards with records, iterators as `<shard>|<index>`, failures queued per operation. */
function fakeStreams(shards: { id: string; parent?: string; closed: boolean; records: FakeRecord[] }[]) {
  const calls: string[] = [];
  /** Sequence numbers a GetRecords page that would start with them answers empty once (Streams may, before a shard's end). */
  const emptyBefore = new Set<string>();
  const failures: Record<string, string[]> = {};
  const image = (r: FakeRecord, version: number) => marshall({ id: r.id, version, updatedAt: '2026-01-01T00:00:00.000Z', d: { v: version } });
  const send = async (command: { constructor: { name: string }; input: Record<string, unknown> }): Promise<unknown> => {
    const op = command.constructor.name.replace(/Command$/, '');
    calls.push(op);
    const failure = failures[op]?.shift();
    if (failure) throw Object.assign(new Error(failure), { name: failure });
    const input = command.input;
    if (op === 'DescribeStream') {
      // One shard a page: the listing must be followed to its end.
      const startAt = input.ExclusiveStartShardId ? shards.findIndex((s) => s.id === input.ExclusiveStartShardId) + 1 : 0;
      const page = shards.slice(startAt, startAt + 1);
      const more = startAt + 1 < shards.length;
      return {
        StreamDescription: {
          Shards: page.map((s) => ({ ShardId: s.id, ParentShardId: s.parent, SequenceNumberRange: { StartingSequenceNumber: s.records[0]?.seq ?? '1', ...(s.closed ? { EndingSequenceNumber: s.records.at(-1)?.seq ?? '1' } : {}) } })),
          ...(more ? { LastEvaluatedShardId: page[0].id } : {}),
        },
      };
    }
    if (op === 'GetShardIterator') {
      const shard = shards.find((s) => s.id === input.ShardId)!;
      if (input.ShardIteratorType === 'TRIM_HORIZON') return { ShardIterator: `${shard.id}|0` };
      if (input.ShardIteratorType === 'LATEST') return { ShardIterator: `${shard.id}|${shard.records.length}` };
      const at = shard.records.findIndex((r) => r.seq === input.SequenceNumber);
      return { ShardIterator: `${shard.id}|${at + 1}` };
    }
    if (op === 'GetRecords') {
      const [id, index] = String(input.ShardIterator).split('|');
      const shard = shards.find((s) => s.id === id)!;
      const from = Number(index);
      const first = shard.records[from]?.seq;
      if (first && emptyBefore.delete(first)) return { Records: [], NextShardIterator: `${id}|${from}` };
      const records = shard.records.slice(from, from + Number(input.Limit ?? 1000));
      const next = from + records.length;
      return {
        Records: records.map((r) => ({
          eventName: r.event,
          dynamodb: {
            SequenceNumber: r.seq,
            ApproximateCreationDateTime: new Date('2026-01-01T00:00:00Z'),
            ...(r.event !== 'REMOVE' ? { NewImage: image(r, r.version) } : {}),
            ...(r.event !== 'INSERT' ? { OldImage: image(r, r.version - 1) } : {}),
          },
        })),
        ...(shard.closed && next >= shard.records.length ? {} : { NextShardIterator: `${id}|${next}` }),
      };
    }
    throw new Error(`unexpected ${op}`);
  };
  return { send, calls, failures, emptyBefore };
}

function feedOver(streams: ReturnType<typeof fakeStreams>, now = Date.parse('2026-01-01T00:10:00Z')) {
  const sleeps: number[] = [];
  const host: StreamFeedHost = {
    tables: () => ({ send: async () => ({ Table: { StreamSpecification: { StreamEnabled: true }, LatestStreamArn: ARN } }) }) as never,
    streams: () => ({ send: streams.send as never }),
    def: (_d, schema) => (schema === 's.A' ? ({} as RecordSchemaDef) : undefined),
    toRecord: (_def, item) => ({ id: item.id as string, version: Number(item.version), data: item.d as Record<string, unknown>, updatedAt: item.updatedAt as string }),
    failure: (err) => err,
    logger: pino({ level: 'silent' }),
  };
  const feed = new DynamoDbChangeFeed(host, { shardReadMs: 0, retentionMs: 24 * 3600_000, wakeMs: 1000, listingMs: 0, now: () => now, sleep: async (ms) => void sleeps.push(ms) });
  return { feed, sleeps };
}

/** Reads like the dispatcher: from the position each read reports, until a read finds nothing. */
async function readAll(feed: DynamoDbChangeFeed, from: string, page = 2): Promise<{ changes: RecordChange[]; position: string }> {
  const changes: RecordChange[] = [];
  let position = from;
  for (let i = 0; i < 20; i++) {
    const batch = await feed.readChanges(dataset, position, page);
    expect(batch.expired).to.equal(false);
    changes.push(...batch.changes);
    const next = batch.position ?? batch.changes.at(-1)?.cursor ?? position;
    if (!batch.changes.length && next === position) break;
    position = next;
  }
  return { changes, position };
}

const split = () =>
  fakeStreams([
    {
      id: 'shardId-parent',
      closed: true,
      records: [
        { seq: '000000000000000000100', event: 'INSERT', id: 'a', version: 1 },
        { seq: '000000000000000000110', event: 'MODIFY', id: 'a', version: 2 },
      ],
    },
    // Sequence numbers are ordered within a shard only: this child's first is below its parent's last.
    { id: 'shardId-left', parent: 'shardId-parent', closed: false, records: [{ seq: '000000000000000000105', event: 'MODIFY', id: 'a', version: 3 }] },
    {
      id: 'shardId-right',
      parent: 'shardId-parent',
      closed: false,
      records: [
        { seq: '000000000000000000115', event: 'INSERT', id: 'b', version: 1 },
        { seq: '000000000000000000130', event: 'REMOVE', id: 'b', version: 2 },
      ],
    },
  ]);

describe('DynamoDB change feed: shards, throttling and expiry at the Streams API boundary', () => {
  const start = encodePosition({ since: 0, time: Date.parse('2026-01-01T00:00:00Z'), shards: {} });

  it('follows a split: the listing over every page, the closed parent to its end before its children, each record once', async () => {
    const streams = split();
    const { feed } = feedOver(streams);
    const { changes, position } = await readAll(feed, start, 10);
    expect(changes.map((c) => [c.id, c.op, c.version])).to.deep.equal([
      ['a', 'CREATE', 1],
      ['a', 'UPDATE', 2],
      ['a', 'UPDATE', 3],
      ['b', 'CREATE', 1],
      ['b', 'DELETE', 2],
    ]);
    expect((await readAll(feedOver(split()).feed, start, 2)).changes.map((c) => [c.id, c.version]), 'the same in pages of 2').to.deep.equal(changes.map((c) => [c.id, c.version]));
    expect(streams.calls.filter((c) => c === 'DescribeStream').length, 'the listing was paged').to.be.greaterThan(2);
    const deleted = changes.at(-1)!;
    expect(deleted.previous?.version, 'a delete carries the version before it').to.equal(1);
    expect(decodePosition(position)!.shards['s.A shardId-parent']).to.equal(DONE);
    // Resuming after the parent's last record gives the children's records only.
    const resumed = await readAll(feedOver(split()).feed, changes[1].cursor);
    expect(resumed.changes.map((c) => [c.id, c.version])).to.deep.equal([
      ['a', 3],
      ['b', 1],
      ['b', 2],
    ]);
  });

  it('a replay meeting empty pages before the shard\'s end delivers the rest on the next reads: nothing skipped, nothing twice', async () => {
    const all = (await readAll(feedOver(split()).feed, start, 10)).changes;
    const streams = split();
    const { feed } = feedOver(streams);
    // Resuming after a's version 1: the page after it comes back empty twice (on the first read and the next).
    streams.emptyBefore.add('000000000000000000110');
    let position = all[0].cursor;
    const got: RecordChange[] = [];
    const empties: number[] = [];
    for (let read = 0; read < 10 && got.length < all.length - 1; read++) {
      const batch = await feed.readChanges(dataset, position, 10);
      if (!batch.changes.length) empties.push(read);
      got.push(...batch.changes);
      position = batch.position ?? batch.changes.at(-1)?.cursor ?? position;
      if (read === 0) streams.emptyBefore.add('000000000000000000110');
    }
    expect(empties, 'the reads that met an empty page').to.deep.equal([0, 1]);
    expect(got.map((c) => [c.id, c.version])).to.deep.equal(all.slice(1).map((c) => [c.id, c.version]));
  });

  it('gives each subscription a change once in the per-shard cursor order', async () => {
    const { changes } = await readAll(feedOver(split()).feed, start);
    let at = streamCursorOrder.parse(start)!;
    for (const change of changes) {
      expect(streamCursorOrder.has(at, change)).to.equal(false);
      at = streamCursorOrder.advance(at, change);
      expect(streamCursorOrder.has(at, change)).to.equal(true);
    }
    expect(streamCursorOrder.covers(streamCursorOrder.parse(changes.at(-1)!.cursor)!, streamCursorOrder.parse(changes[0].cursor)!)).to.equal(true);
    expect(streamCursorOrder.covers(streamCursorOrder.parse(changes[0].cursor)!, streamCursorOrder.parse(changes.at(-1)!.cursor)!)).to.equal(false);
  });

  it('backs off when Streams throttle (LimitExceededException) and reads on; gives up as unavailable when it persists', async () => {
    const streams = split();
    streams.failures.GetRecords = ['LimitExceededException', 'LimitExceededException'];
    const { feed, sleeps } = feedOver(streams);
    const { changes } = await readAll(feed, start);
    expect(changes).to.have.length(5);
    expect(feed.throttled).to.equal(2);
    expect(sleeps.length).to.equal(2);
    expect(sleeps[1], 'the back-off grows').to.be.greaterThan(sleeps[0] / 2);

    const stubborn = split();
    stubborn.failures.GetRecords = Array(10).fill('LimitExceededException');
    const err = await feedOver(stubborn)
      .feed.readChanges(dataset, start, 10)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect((err as { failure?: { kind: string } }).failure?.kind).to.equal('unavailable');
  });

  it('expires a cursor past the retention, one whose shard was trimmed, or one Streams refuse as trimmed', async () => {
    const { feed } = feedOver(split());
    expect((await feed.readChanges(dataset, encodePosition({ since: 0, time: Date.parse('2025-12-30T00:00:00Z'), shards: {} }), 10)).expired).to.equal(true);
    const gone = encodePosition({ since: 0, time: Date.parse('2026-01-01T00:00:00Z'), shards: { 's.A shardId-gone': '000000000000000000050' } });
    expect((await feed.readChanges(dataset, gone, 10)).expired).to.equal(true);
    const trimmed = split();
    trimmed.failures.GetShardIterator = ['TrimmedDataAccessException'];
    const at = encodePosition({ since: 0, time: Date.parse('2026-01-01T00:00:00Z'), shards: { 's.A shardId-parent': '000000000000000000100' } });
    expect((await feedOver(trimmed).feed.readChanges(dataset, at, 10)).expired).to.equal(true);
    // A shard read to its end that the stream no longer lists is simply done.
    const done = encodePosition({ since: 0, time: Date.parse('2026-01-01T00:00:00Z'), shards: { 's.A shardId-old': DONE, 's.A shardId-parent': DONE } });
    expect((await feed.readChanges(dataset, done, 10)).expired).to.equal(false);
  });

  it('refuses what is not one of its cursors', async () => {
    const { feed } = feedOver(split());
    for (const bad of ['12', 'not a cursor', Buffer.from('[1,0,0,[["x","y"]]]').toString('base64url')]) {
      const err = await feed.readChanges(dataset, bad, 10).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((err as { failure?: { kind: string } }).failure?.kind, bad).to.equal('invalid-query');
    }
  });
});
