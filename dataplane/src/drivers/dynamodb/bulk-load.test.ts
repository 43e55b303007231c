/**
 * Bulk loads on DynamoDB, the store side (bulk-load.ts) on DynamoDB Local: the transactions table
 * and its leases, and chunks written exactly once — offered twice, or re-run after a crash at any
 * point of the first run (simulated by a client that fails a chosen call), no version is written
 * twice or skipped.
 */
import { expect } from 'chai';
import pino from 'pino';
import { QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DatasetConfig } from '../../../../model/types.js';
import { schemaDefOf } from '../../engine/layout.js';
import { StoreError, type LoadChunk, type LoadOperation, type OpResult, type WriteOp } from '../../engine/contract.js';
import { suiteDataset } from '../../../test-support/driver-suite.js';
import { dynamoDbLocation, dynamoDbSecrets } from '../../../test-support/dynamodb.js';
import { DynamoDbBulkLoad, emptyProgress, transactionsTable } from './bulk-load.js';
import { createClient } from './client.js';
import { DynamoDbDriver, storeFailure } from './driver.js';
import { schemaTables } from './tables.js';
import { dataPlaneSettings } from '../../../../model/settings/dataplane.js';

/** The error a promise rejects with (a test failure when it resolves). */
async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

const ok = (r: OpResult) => {
  if (!r.ok) throw new Error(`expected success, got ${JSON.stringify(r.failure)}`);
  return r.record;
};

describe('DynamoDB bulk loads: transactions, leases and chunks on DynamoDB Local', function () {
  this.timeout(60_000);
  let env: NodeJS.ProcessEnv;
  let driver: DynamoDbDriver;
  let dataset: DatasetConfig;
  let doc: DynamoDBDocumentClient;
  let n = 0;
  const Company = 'suite.Company';

  const spec = (operation: LoadOperation = 'UPSERT') => ({ actions: [{ locationUri: 'file:///x.ndjson', operation, format: 'NDJSON', schema: Company }], context: { by: 'test', big: 1e300 } });
  /** A created and claimed transaction. */
  const claimed = async (operation: LoadOperation = 'UPSERT', owner = 'me') => {
    const id = `tx-${++n}`;
    await driver.bulkLoad.create(dataset, { id, spec: spec(operation) });
    // Claims take the oldest open transaction: finish whatever an earlier test left open.
    for (;;) {
      const tx = await driver.bulkLoad.claim(dataset, owner, 60_000);
      expect(tx, 'a transaction to claim').to.not.equal(undefined);
      if (tx!.id === id) return id;
      await driver.bulkLoad.finish(dataset, tx!.id, owner, { status: 'FAILED', error: 'left over', progress: tx!.progress });
    }
  };
  const chunkOf = (transaction: string, operation: LoadOperation, ids: string[], name = 'n', at = 0): LoadChunk => ({
    transaction,
    owner: 'me',
    leaseMs: 60_000,
    schema: Company,
    operation,
    records: ids.map((id, i) => ({ id, data: { name: `${name} ${id}` }, row: at + i + 1 })),
    from: { action: 0, file: 0, row: at },
    to: { action: 0, file: 0, row: at + ids.length },
    progress: { ...emptyProgress(), rowsRead: ids.length },
    maxErrors: 10,
  });
  /** Every version in the history of an id, ascending. */
  const versions = async (id: string) => {
    const { Items } = await doc.send(new QueryCommand({ TableName: schemaTables(dataset, Company).history, KeyConditionExpression: 'id = :id', ExpressionAttributeValues: { ':id': id }, ConsistentRead: true }));
    return (Items ?? []).map((i) => Number(i.version));
  };
  /** A bulk-load store whose client fails (a simulated crash) at the first call `crashAt` picks. */
  const crashing = (crashAt: (command: { constructor: { name: string }; input: Record<string, unknown> }) => boolean) => {
    const real = createClient(dataset, dataPlaneSettings(env));
    let crashed = false;
    const send = async (command: never) => {
      if (!crashed && crashAt(command)) {
        crashed = true;
        throw new Error('simulated crash');
      }
      return real.doc.send(command);
    };
    return new DynamoDbBulkLoad(() => ({ raw: real.raw, doc: { send } as never }), (d, s) => schemaDefOf(d, s)!, storeFailure);
  };
  /** The n-th call `pick` picks (a fresh count for each store made with it). */
  function nth(n: number, pick: (c: { constructor: { name: string }; input: Record<string, unknown> }) => boolean) {
    let seen = 0;
    return (c: { constructor: { name: string }; input: Record<string, unknown> }) => pick(c) && ++seen === n;
  }
  const writes = (table: string) => (c: { constructor: { name: string }; input: Record<string, unknown> }) =>
    c.constructor.name === 'BatchWriteCommand' && Object.keys(c.input.RequestItems as object)[0] === table;

  before(async () => {
    const secrets = await dynamoDbSecrets();
    env = { DAS_SECRETS_DIR: secrets.dir };
    driver = new DynamoDbDriver({ logger: pino({ level: 'silent' }), settings: dataPlaneSettings(env) });
    dataset = suiteDataset('dynamodb', await dynamoDbLocation(secrets.name));
    await driver.prepare(dataset);
    doc = createClient(dataset, dataPlaneSettings(env)).doc;
  });
  after(() => driver?.close());

  it('before any transaction there is no table: get, list and claim find nothing and create none', async () => {
    expect(await driver.bulkLoad.get(dataset, 'nope')).to.equal(undefined);
    expect(await driver.bulkLoad.list(dataset, { descending: false, limit: 10 })).to.deep.equal([]);
    expect(await driver.bulkLoad.claim(dataset, 'me', 1000)).to.equal(undefined);
    expect((await failure(doc.send(new QueryCommand({ TableName: transactionsTable(dataset), KeyConditionExpression: 'id = :id', ExpressionAttributeValues: { ':id': 'x' } })))).message).to.match(/non-existent table|not found/i);
  });

  it('creates (a taken id is exists), reads, lists by status and creation, finishes; the context keeps any JSON', async () => {
    const a = await driver.bulkLoad.create(dataset, { id: 'list-a', spec: spec() });
    expect(a).to.include({ id: 'list-a', status: 'PENDING' });
    expect(a.cursor).to.deep.equal({ action: 0, file: 0, row: 0 });
    expect((await failure(driver.bulkLoad.create(dataset, { id: 'list-a', spec: spec() }))).message).to.match(/already exists/);
    await new Promise((r) => setTimeout(r, 5));
    await driver.bulkLoad.create(dataset, { id: 'list-b', spec: spec() });
    const got = await driver.bulkLoad.get(dataset, 'list-a');
    expect(got?.spec.context).to.deep.equal({ by: 'test', big: 1e300 });
    const ascending = await driver.bulkLoad.list(dataset, { descending: false, limit: 10 });
    expect(ascending.map((t) => t.id)).to.deep.equal(['list-a', 'list-b']);
    const page = await driver.bulkLoad.list(dataset, { descending: true, limit: 1 });
    expect(page.map((t) => t.id)).to.deep.equal(['list-b']);
    const next = await driver.bulkLoad.list(dataset, { descending: true, limit: 5, after: [page[0].createdAt, page[0].id] });
    expect(next.map((t) => t.id)).to.deep.equal(['list-a']);
    const tx = await driver.bulkLoad.claim(dataset, 'me', 60_000);
    expect(tx).to.include({ id: 'list-a', status: 'RUNNING', leaseOwner: 'me' });
    await driver.bulkLoad.finish(dataset, 'list-a', 'someone-else', { status: 'FAILED', progress: tx!.progress });
    expect((await driver.bulkLoad.get(dataset, 'list-a'))?.status, 'only the owner finishes').to.equal('RUNNING');
    await driver.bulkLoad.finish(dataset, 'list-a', 'me', { status: 'FAILED', error: 'why', progress: tx!.progress });
    const failed = await driver.bulkLoad.get(dataset, 'list-a');
    expect(failed).to.include({ status: 'FAILED', error: 'why' });
    expect(failed?.finishedAt).to.be.a('string');
    expect(failed?.leaseOwner).to.equal(undefined);
    expect((await driver.bulkLoad.list(dataset, { status: 'FAILED', descending: false, limit: 10 })).map((t) => t.id)).to.deep.equal(['list-a']);
    expect((await driver.bulkLoad.list(dataset, { status: 'PENDING', descending: false, limit: 10 })).map((t) => t.id)).to.deep.equal(['list-b']);
    const b = await driver.bulkLoad.claim(dataset, 'me', 60_000);
    await driver.bulkLoad.finish(dataset, b!.id, 'me', { status: 'SUCCEEDED', progress: b!.progress });
  });

  it('a transaction over DynamoDB\'s 400 KB item limit is refused (too-large), nothing stored', async () => {
    const big = { ...spec(), context: { notes: 'x'.repeat(420 * 1024) } };
    const err = await failure(driver.bulkLoad.create(dataset, { id: 'huge', spec: big }));
    expect(err).to.be.instanceOf(StoreError);
    expect((err as StoreError).failure).to.include({ kind: 'too-large', schema: 'Transaction', id: 'huge' });
    expect(await driver.bulkLoad.get(dataset, 'huge')).to.equal(undefined);
  });

  it('a lease is taken over only once it has expired; the old owner can then neither renew, advance nor write', async () => {
    await driver.bulkLoad.create(dataset, { id: 'lease', spec: spec() });
    const first = await driver.bulkLoad.claim(dataset, 'A', 1000);
    expect(first).to.include({ id: 'lease', leaseOwner: 'A' });
    expect(await driver.bulkLoad.claim(dataset, 'B', 60_000), 'held by A').to.equal(undefined);
    expect(await driver.bulkLoad.renew(dataset, 'lease', 'A', 1000)).to.equal(true);
    await new Promise((r) => setTimeout(r, 1100));
    const taken = await driver.bulkLoad.claim(dataset, 'B', 60_000);
    // The takeover is counted (the runner's crash-loop guard); the first claim was none.
    expect(first?.lostLeases).to.equal(undefined);
    expect(taken).to.include({ id: 'lease', leaseOwner: 'B', status: 'RUNNING', startedAt: first!.startedAt, lostLeases: 1 });
    expect(await driver.bulkLoad.renew(dataset, 'lease', 'A', 60_000)).to.equal(false);
    expect(await driver.bulkLoad.advance(dataset, 'lease', 'A', { action: 0, file: 1, row: 0 }, taken!.progress)).to.equal(false);
    expect((await driver.bulkLoad.loadChunk(dataset, { ...chunkOf('lease', 'UPSERT', ['never']), owner: 'A' })).kind).to.equal('lease-lost');
    expect(await versions('never')).to.deep.equal([]);
    // Given back (shutdown): PENDING again, claimable at once, from its cursor.
    expect(await driver.bulkLoad.advance(dataset, 'lease', 'B', { action: 0, file: 1, row: 0 }, taken!.progress)).to.equal(true);
    await driver.bulkLoad.finish(dataset, 'lease', 'B', undefined);
    const again = await driver.bulkLoad.claim(dataset, 'C', 60_000);
    expect(again, 'a give-back is no lost lease').to.include({ id: 'lease', leaseOwner: 'C', lostLeases: 1 });
    expect(again?.cursor).to.deep.equal({ action: 0, file: 1, row: 0 });
    await driver.bulkLoad.finish(dataset, 'lease', 'C', { status: 'SUCCEEDED', progress: again!.progress });
  });

  it('a chunk offered twice is written once; UPSERT continues versions, INSERT refuses existing ids, DELETE writes tombstones', async () => {
    ok((await driver.write(dataset, [{ op: 'create', schema: Company, id: 'old', data: { name: 'old' } }], 'QUORUM'))[0]);
    const tx = await claimed('UPSERT');
    const chunk = chunkOf(tx, 'UPSERT', ['u1', 'u2', 'old', 'u1']);
    const done = await driver.bulkLoad.loadChunk(dataset, chunk);
    expect(done.kind).to.equal('committed');
    expect(done.kind === 'committed' && done.progress).to.include({ rowsRead: 4, rowsWritten: 3, rowsRejected: 0 });
    expect((await driver.bulkLoad.loadChunk(dataset, chunk)).kind).to.equal('already-committed');
    expect(await versions('u1')).to.deep.equal([1]);
    expect(await versions('old')).to.deep.equal([1, 2]);
    expect((await driver.read(dataset, { schema: Company, id: 'old' }))).to.include({ version: 2 });
    expect((await driver.read(dataset, { schema: Company, id: 'u2' }))?.data).to.deep.equal({ name: 'n u2' });
    const stored = await driver.bulkLoad.get(dataset, tx);
    expect(stored?.cursor).to.deep.equal(chunk.to);
    expect(stored?.progress[0]).to.include({ rowsWritten: 3 });

    const ins = await claimed('INSERT');
    const inserted = await driver.bulkLoad.loadChunk(dataset, chunkOf(ins, 'INSERT', ['u1', 'i1', 'i1']));
    expect(inserted.kind === 'committed' && inserted.progress).to.include({ rowsWritten: 1, rowsRejected: 2 });
    expect(inserted.kind === 'committed' && inserted.progress.errors.map((e) => [e.row, e.message])).to.deep.equal([
      [3, 'id "i1" appears earlier in the same chunk; INSERT keeps the first'],
      [1, 'a record with id "u1" exists'],
    ]);

    const del = await claimed('DELETE');
    const deleted = await driver.bulkLoad.loadChunk(dataset, chunkOf(del, 'DELETE', ['u1', 'nobody']));
    expect(deleted.kind === 'committed' && deleted.progress).to.include({ rowsWritten: 1, rowsRejected: 1 });
    expect(await driver.read(dataset, { schema: Company, id: 'u1' })).to.equal(undefined);
    expect(await driver.read(dataset, { schema: Company, id: 'u1', version: 2 })).to.include({ deleted: true });
    // A deleted id loaded again continues after its tombstone.
    const back = await claimed('UPSERT');
    expect((await driver.bulkLoad.loadChunk(dataset, chunkOf(back, 'UPSERT', ['u1']))).kind).to.equal('committed');
    expect(await versions('u1')).to.deep.equal([1, 2, 3]);
  });

  for (const [point, crashAt] of [
    ['after every item, before the cursor moved', (c: { constructor: { name: string }; input: Record<string, unknown> }) => c.constructor.name === 'UpdateCommand' && String(c.input.ConditionExpression).includes(':from')],
    ['after the history items, before the live ones', (c: { constructor: { name: string }; input: Record<string, unknown> }) => writes(schemaTables(dataset, Company).records)(c)],
    ['half way through the history items', nth(2, (c: { constructor: { name: string }; input: Record<string, unknown> }) => writes(schemaTables(dataset, Company).history)(c))],
  ] as const) {
    it(`a chunk re-run after a crash ${point} writes every version once`, async () => {
      const p = `c${++n}-`;
      // 60 rows (three BatchWriteItem calls a table): 20 existing records, 10 deleted ones, 30 new.
      const existing = Array.from({ length: 20 }, (_, i) => `${p}e${i}`);
      const deleted = Array.from({ length: 10 }, (_, i) => `${p}d${i}`);
      const fresh = Array.from({ length: 30 }, (_, i) => `${p}f${i}`);
      const seed: WriteOp[] = [...existing, ...deleted].map((id) => ({ op: 'create', schema: Company, id, data: { name: 'before' } }));
      for (const r of await driver.write(dataset, seed, 'EVENTUAL')) ok(r);
      for (const r of await driver.write(dataset, deleted.map((id) => ({ op: 'delete' as const, schema: Company, id })), 'EVENTUAL')) expect(r.ok).to.equal(true);

      const tx = await claimed('UPSERT');
      const chunk = chunkOf(tx, 'UPSERT', [...existing, ...deleted, ...fresh], 'loaded');
      expect((await failure(crashing(crashAt).loadChunk(dataset, chunk))).message).to.match(/simulated crash/);
      expect((await driver.bulkLoad.get(dataset, tx))?.cursor, 'the cursor did not move').to.deep.equal(chunk.from);

      const rerun = await driver.bulkLoad.loadChunk(dataset, chunk);
      expect(rerun.kind).to.equal('committed');
      expect(rerun.kind === 'committed' && rerun.progress).to.include({ rowsWritten: 60, rowsRejected: 0 });
      for (const id of existing) expect(await versions(id), id).to.deep.equal([1, 2]);
      for (const id of deleted) expect(await versions(id), id).to.deep.equal([1, 2, 3]);
      for (const id of fresh) expect(await versions(id), id).to.deep.equal([1]);
      const live = await driver.readMany(dataset, Company, chunk.records.map((r) => r.id));
      expect(live).to.have.length(60);
      for (const r of live) {
        expect(r.data.name).to.equal(`loaded ${r.id}`);
        expect(r.version).to.equal(r.id.includes('e') ? 2 : r.id.includes('d') ? 3 : 1);
      }
      expect((await driver.bulkLoad.loadChunk(dataset, chunk)).kind).to.equal('already-committed');
    });
  }

  it('a chunk that crashed between its history and live items never wedges a record: API writes step over the orphan version', async () => {
    ok((await driver.write(dataset, [{ op: 'create', schema: Company, id: 'wedge', data: { name: 'v1' } }], 'QUORUM'))[0]);
    const tx = await claimed('UPSERT');
    const chunk = chunkOf(tx, 'UPSERT', ['wedge'], 'loaded');
    expect((await failure(crashing(writes(schemaTables(dataset, Company).records)).loadChunk(dataset, chunk))).message).to.match(/simulated crash/);
    expect(await versions('wedge'), 'the history item of version 2 is there, the live item still at 1').to.deep.equal([1, 2]);
    expect((await driver.read(dataset, { schema: Company, id: 'wedge' }))?.version).to.equal(1);
    // The load is never re-run (its transaction failed): the record still takes writes.
    await driver.bulkLoad.finish(dataset, tx, 'me', { status: 'FAILED', error: 'gave up', progress: [emptyProgress()] });
    const updated = ok((await driver.write(dataset, [{ op: 'update', schema: Company, id: 'wedge', data: { name: 'v3' }, merge: true }], 'QUORUM'))[0]);
    expect(updated.version).to.equal(3);
    expect(await versions('wedge')).to.deep.equal([1, 2, 3]);
    expect((await driver.read(dataset, { schema: Company, id: 'wedge' }))?.data).to.deep.equal({ name: 'v3' });
  });

  it('a DELETE chunk re-run after a crash before its cursor moved: one tombstone each, every row counted once', async () => {
    const ids = Array.from({ length: 30 }, (_, i) => `del-crash-${i}`);
    for (const r of await driver.write(dataset, ids.map((id) => ({ op: 'create' as const, schema: Company, id, data: { name: 'x' } })), 'EVENTUAL')) ok(r);
    const tx = await claimed('DELETE');
    const chunk = chunkOf(tx, 'DELETE', [...ids, 'not-there']);
    expect((await failure(crashing((c) => c.constructor.name === 'UpdateCommand' && String(c.input.ConditionExpression).includes(':from')).loadChunk(dataset, chunk))).message).to.match(/simulated crash/);
    expect(await driver.read(dataset, { schema: Company, id: ids[0] }), 'deleted by the first run').to.equal(undefined);
    const rerun = await driver.bulkLoad.loadChunk(dataset, chunk);
    expect(rerun.kind === 'committed' && rerun.progress).to.include({ rowsWritten: 30, rowsRejected: 1 });
    for (const id of ids) expect(await versions(id)).to.deep.equal([1, 2]);
  });
});
