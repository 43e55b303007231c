/**
 * Bulk loads on DynamoDB (docs/dynamodb.md, "Bulk loads"): the transactions table and the chunk
 * writer.
 *
 * Transactions live in `<tablePrefix><dataset>_das-transactions` (created by the first create), so
 * any replica can claim one: claim, renew, advance and finish are conditional writes on the lease
 * owner and its expiry (a RUNNING transaction is taken over only once its lease ran out).
 *
 * A chunk is written with BatchWriteItem (25 items a call, unprocessed items retried with backoff),
 * which is neither transactional nor conditional. Exactly once per chunk all the same:
 *   1. the current versions of the chunk's ids are read first, as a set (BatchGetItem);
 *   2. every item the chunk writes carries the chunk's mark (transaction and start cursor), and a
 *      row's version is derived from what was read: the latest version + 1, or the latest version
 *      itself when that carries this chunk's mark (bulk-load-plan.ts) — so a re-run writes the same
 *      versions under the same keys, overwriting its first run's items instead of adding to them;
 *   3. history items are written before live items: a crash in between leaves history items the
 *      re-run rewrites (the live item still shows the old version, so the same version follows);
 *   4. the transaction's cursor moves last, a conditional write `cursor = from AND leaseOwner =
 *      owner`. A crash before it leaves the cursor at `from`: the chunk runs again (from the same
 *      rows) and rewrites the same items; after it, the chunk is never offered again.
 * No row is written twice as two versions, and no version is skipped or duplicated.
 */
import { CreateTableCommand, DeleteTableCommand, DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, BatchWriteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DatasetConfig, RecordSchemaDef } from '../../../../model/types.js';
import { StoreError, type ActionProgress, type BulkLoadStore, type ChunkOutcome, type LoadChunk, type LoadCursor, type StoredTransaction } from '../../engine/contract.js';
import { chunkMark, cursorText, dedupe, MARK, parseCursor, planRow, type Known } from './bulk-load-plan.js';
import { sortableFields, sortKeys } from './sort-index.js';
import { A, schemaTables } from './tables.js';
import { itemSize, MAX_ITEM_BYTES, storedData, unstorable } from './values.js';
import { reportOutcomes } from '../bulk-load-outcomes.js';

type Clients = { raw: DynamoDBClient; doc: DynamoDBDocumentClient };
type Item = Record<string, unknown>;

/** Items a BatchWriteItem takes; keys a BatchGetItem takes. */
const BATCH_WRITE = 25;
const BATCH_GET = 100;
/** BatchWriteItem calls (and history Queries) in flight at once for one chunk. */
const IN_FLIGHT = 8;
/** Rounds of retrying unprocessed items before the store counts as unavailable. */
const MAX_ROUNDS = 12;

/** Attributes of a transaction item. */
const T = {
  status: 'status',
  spec: 'spec',
  progress: 'progress',
  cursor: 'cursor',
  error: 'error',
  createdAt: 'createdAt',
  updatedAt: 'updatedAt',
  startedAt: 'startedAt',
  finishedAt: 'finishedAt',
  owner: 'leaseOwner',
  expires: 'leaseExpiresAt',
  /** Takeovers of a lease that ran out (its replica stopped mid-load): the runner's crash-loop guard. */
  lost: 'lostLeases',
  /** Constant 0: the partition of the index of all transactions by creation. */
  all: 'ga',
  /** Constant 0 while PENDING or RUNNING, removed when finished: the sparse index a claim reads. */
  open: 'go',
  /** `<createdAt> <id>`: both indexes' sort key (createdAt has a fixed width, so text order is (createdAt, id) order). */
  order: 'ck',
} as const;
const BY_CREATED = 'by-created';
const OPEN = 'open';

/** The transactions table of a dataset: under `<tablePrefix><dataset>_` like its schemas' tables, with a `-` no schema name has. */
export function transactionsTable(dataset: DatasetConfig): string {
  return `${dataset.location.tablePrefix ?? ''}${dataset.id}_das-transactions`;
}

export class DynamoDbBulkLoad implements BulkLoadStore {
  /** Transactions tables known to exist, by client and name. */
  private readonly ready = new WeakMap<DynamoDBClient, Set<string>>();

  constructor(
    private readonly clientOf: (dataset: DatasetConfig) => Clients,
    private readonly defOf: (dataset: DatasetConfig, schema: string) => RecordSchemaDef,
    /** The driver's mapping of SDK errors to store outcomes. */
    private readonly failureOf: (err: unknown, schema?: string) => unknown,
  ) {
    // Every method reports what the store answered as a store outcome (never a bare SDK error).
    reportOutcomes(this, (err, name, args) => {
      if (name === 'create' && (err as Error).name === 'ConditionalCheckFailedException') {
        return new StoreError({ kind: 'exists', schema: 'Transaction', id: (args[1] as { id: string }).id });
      }
      return this.failureOf(err, name === 'loadChunk' ? (args[1] as LoadChunk).schema : 'Transaction');
    });
  }

  // ---------------------------------------------------------------------------------------------
  // The transactions table

  /** Creates the table on the first create (reads and claims on a dataset without one find nothing, creating nothing). */
  private async ensureTable(dataset: DatasetConfig): Promise<void> {
    const { raw } = this.clientOf(dataset);
    const name = transactionsTable(dataset);
    const known = this.ready.get(raw) ?? new Set<string>();
    this.ready.set(raw, known);
    if (known.has(name)) return;
    const index = (indexName: string, partition: string) => ({
      IndexName: indexName,
      KeySchema: [
        { AttributeName: partition, KeyType: 'HASH' as const },
        { AttributeName: T.order, KeyType: 'RANGE' as const },
      ],
      Projection: { ProjectionType: 'ALL' as const },
    });
    if (!(await describe(raw, name))) {
      try {
        await raw.send(
          new CreateTableCommand({
            TableName: name,
            KeySchema: [{ AttributeName: A.id, KeyType: 'HASH' }],
            AttributeDefinitions: [
              { AttributeName: A.id, AttributeType: 'S' },
              { AttributeName: T.all, AttributeType: 'N' },
              { AttributeName: T.open, AttributeType: 'N' },
              { AttributeName: T.order, AttributeType: 'S' },
            ],
            GlobalSecondaryIndexes: [index(BY_CREATED, T.all), index(OPEN, T.open)],
            BillingMode: 'PAY_PER_REQUEST',
          }),
        );
      } catch (err) {
        // Another replica created it first: wait for it like for our own.
        if ((err as Error).name !== 'ResourceInUseException') throw err;
      }
    }
    for (let i = 0; ; i++) {
      const table = await describe(raw, name);
      if (table?.TableStatus === 'ACTIVE' && (table.GlobalSecondaryIndexes ?? []).every((g) => g.IndexStatus === 'ACTIVE')) break;
      if (i >= 3000) throw new StoreError({ kind: 'unavailable', detail: `table ${name} did not become ACTIVE within 5 minutes` });
      await sleep(100);
    }
    known.add(name);
  }

  /** Drops the transactions table (purge); idempotent. Returns its name when it was there. */
  async drop(dataset: DatasetConfig): Promise<string | undefined> {
    const { raw } = this.clientOf(dataset);
    const name = transactionsTable(dataset);
    this.ready.get(raw)?.delete(name);
    try {
      await raw.send(new DeleteTableCommand({ TableName: name }));
      return name;
    } catch (err) {
      if ((err as Error).name === 'ResourceNotFoundException') return undefined;
      throw err;
    }
  }

  async create(dataset: DatasetConfig, tx: Pick<StoredTransaction, 'id' | 'spec'>): Promise<StoredTransaction> {
    await this.ensureTable(dataset);
    const now = new Date().toISOString();
    const item: Item = {
      [A.id]: tx.id,
      [T.status]: 'PENDING',
      // JSON text: the context is any JSON, which DynamoDB's types could not all hold (numbers past its range).
      [T.spec]: JSON.stringify(tx.spec),
      [T.progress]: JSON.stringify(tx.spec.actions.map(emptyProgress)),
      [T.cursor]: cursorText({ action: 0, file: 0, row: 0 }),
      [T.createdAt]: now,
      [T.updatedAt]: now,
      [T.all]: 0,
      [T.open]: 0,
      [T.order]: `${now} ${tx.id}`,
    };
    // Refused before anything is stored (a context of megabytes), as an API write of such a record would be.
    const size = itemSize(item);
    if (size > MAX_ITEM_BYTES) {
      throw new StoreError({ kind: 'too-large', schema: 'Transaction', id: tx.id, detail: `it takes ${size} bytes, over DynamoDB's item limit of ${MAX_ITEM_BYTES} bytes (400 KB)` });
    }
    await this.clientOf(dataset).doc.send(
      new PutCommand({ TableName: transactionsTable(dataset), Item: item, ConditionExpression: 'attribute_not_exists(#id)', ExpressionAttributeNames: { '#id': A.id } }),
    );
    return fromItem(item);
  }

  async get(dataset: DatasetConfig, id: string): Promise<StoredTransaction | undefined> {
    const item = await absentTable(this.read(dataset, id));
    return item ? fromItem(item) : undefined;
  }

  private async read(dataset: DatasetConfig, id: string): Promise<Item | undefined> {
    const { Item } = await this.clientOf(dataset).doc.send(new GetCommand({ TableName: transactionsTable(dataset), Key: { [A.id]: id }, ConsistentRead: true }));
    return Item;
  }

  async list(dataset: DatasetConfig, query: { status?: string; descending: boolean; limit: number; after?: [string, string] }): Promise<StoredTransaction[]> {
    const { doc } = this.clientOf(dataset);
    const out: StoredTransaction[] = [];
    let start: Item | undefined;
    const names: Record<string, string> = { '#ga': T.all };
    const values: Record<string, unknown> = { ':zero': 0 };
    let condition = '#ga = :zero';
    if (query.after) {
      names['#ck'] = T.order;
      values[':after'] = `${query.after[0]} ${query.after[1]}`;
      condition += query.descending ? ' AND #ck < :after' : ' AND #ck > :after';
    }
    if (query.status !== undefined) {
      names['#s'] = T.status;
      values[':s'] = query.status;
    }
    try {
      do {
        const page = await doc.send(
          new QueryCommand({
            TableName: transactionsTable(dataset),
            IndexName: BY_CREATED,
            KeyConditionExpression: condition,
            ...(query.status !== undefined ? { FilterExpression: '#s = :s' } : {}),
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: values,
            ScanIndexForward: !query.descending,
            ExclusiveStartKey: start,
            Limit: Math.min(1000, Math.max(query.limit, 50)),
          }),
        );
        for (const item of page.Items ?? []) out.push(fromItem(item));
        start = page.LastEvaluatedKey;
      } while (start && out.length < query.limit);
    } catch (err) {
      if ((err as Error).name === 'ResourceNotFoundException') return [];
      throw err;
    }
    return out.slice(0, query.limit);
  }

  async claim(dataset: DatasetConfig, owner: string, leaseMs: number): Promise<StoredTransaction | undefined> {
    const { doc } = this.clientOf(dataset);
    const table = transactionsTable(dataset);
    let start: Item | undefined;
    try {
      do {
        // The open index holds PENDING and RUNNING transactions only, oldest first. Index reads lag
        // a little; the conditional update below decides.
        const page = await doc.send(
          new QueryCommand({
            TableName: table,
            IndexName: OPEN,
            KeyConditionExpression: '#go = :zero',
            ExpressionAttributeNames: { '#go': T.open },
            ExpressionAttributeValues: { ':zero': 0 },
            ExclusiveStartKey: start,
            Limit: 50,
          }),
        );
        for (const item of page.Items ?? []) {
          const nowMs = Date.now();
          const claimable = item[T.status] === 'PENDING' || (item[T.status] === 'RUNNING' && Number(item[T.expires] ?? 0) < nowMs);
          if (!claimable) continue;
          const now = new Date(nowMs).toISOString();
          // A takeover is counted: the condition is the state read, so a transaction given back meanwhile is not.
          const takeover = item[T.status] === 'RUNNING';
          try {
            const { Attributes } = await doc.send(
              new UpdateCommand({
                TableName: table,
                Key: { [A.id]: item[A.id] },
                UpdateExpression: `SET #s = :running, #o = :owner, #x = :until, #st = if_not_exists(#st, :now), #u = :now${takeover ? ' ADD #lost :one' : ''}`,
                // Taken over only when PENDING, or RUNNING with its lease run out (this replica's clock).
                ConditionExpression: takeover ? '#s = :running AND #x < :nowMs' : '#s = :pending',
                ExpressionAttributeNames: { '#s': T.status, '#o': T.owner, '#x': T.expires, '#st': T.startedAt, '#u': T.updatedAt, ...(takeover ? { '#lost': T.lost } : {}) },
                ExpressionAttributeValues: {
                  ':running': 'RUNNING',
                  ':owner': owner,
                  ':until': nowMs + leaseMs,
                  ':now': now,
                  ...(takeover ? { ':nowMs': nowMs, ':one': 1 } : { ':pending': 'PENDING' }),
                },
                ReturnValues: 'ALL_NEW',
              }),
            );
            return fromItem(Attributes!);
          } catch (err) {
            if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
          }
        }
        start = page.LastEvaluatedKey;
      } while (start);
    } catch (err) {
      if ((err as Error).name === 'ResourceNotFoundException') return undefined;
      throw err;
    }
    return undefined;
  }

  /** An update under the lease: false when another owner has the transaction now (or it finished). */
  private async underLease(dataset: DatasetConfig, id: string, owner: string, set: string, names: Record<string, string>, values: Record<string, unknown>): Promise<boolean> {
    try {
      await this.clientOf(dataset).doc.send(
        new UpdateCommand({
          TableName: transactionsTable(dataset),
          Key: { [A.id]: id },
          UpdateExpression: set,
          ConditionExpression: '#o = :owner AND #s = :running',
          ExpressionAttributeNames: { ...names, '#o': T.owner, '#s': T.status },
          ExpressionAttributeValues: { ...values, ':owner': owner, ':running': 'RUNNING' },
        }),
      );
      return true;
    } catch (err) {
      if ((err as Error).name === 'ConditionalCheckFailedException') return false;
      throw err;
    }
  }

  async renew(dataset: DatasetConfig, id: string, owner: string, leaseMs: number): Promise<boolean> {
    return this.underLease(dataset, id, owner, 'SET #x = :until', { '#x': T.expires }, { ':until': Date.now() + leaseMs });
  }

  async advance(dataset: DatasetConfig, id: string, owner: string, cursor: LoadCursor, progress: ActionProgress[]): Promise<boolean> {
    return this.underLease(
      dataset,
      id,
      owner,
      'SET #c = :c, #p = :p, #u = :now',
      { '#c': T.cursor, '#p': T.progress, '#u': T.updatedAt },
      { ':c': cursorText(cursor), ':p': JSON.stringify(progress), ':now': new Date().toISOString() },
    );
  }

  async finish(
    dataset: DatasetConfig,
    id: string,
    owner: string,
    outcome: { status: 'SUCCEEDED' | 'FAILED'; error?: string; progress: ActionProgress[] } | undefined,
  ): Promise<void> {
    const now = new Date().toISOString();
    const names: Record<string, string> = { '#s': T.status, '#o': T.owner, '#x': T.expires, '#u': T.updatedAt };
    const values: Record<string, unknown> = { ':owner': owner, ':now': now };
    let update: string;
    if (!outcome) {
      // Given back (shutdown, pause): another replica, or this one later, continues from the cursor.
      update = 'SET #s = :pending, #u = :now REMOVE #o, #x';
      values[':pending'] = 'PENDING';
    } else {
      update = `SET #s = :status, #p = :p, #f = :now, #u = :now${outcome.error !== undefined ? ', #e = :e' : ''} REMOVE #o, #x, #go`;
      Object.assign(names, { '#p': T.progress, '#f': T.finishedAt, '#go': T.open, ...(outcome.error !== undefined ? { '#e': T.error } : {}) });
      Object.assign(values, { ':status': outcome.status, ':p': JSON.stringify(outcome.progress), ...(outcome.error !== undefined ? { ':e': outcome.error } : {}) });
    }
    try {
      await this.clientOf(dataset).doc.send(
        new UpdateCommand({
          TableName: transactionsTable(dataset),
          Key: { [A.id]: id },
          UpdateExpression: update,
          ConditionExpression: '#o = :owner',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        }),
      );
    } catch (err) {
      // Another owner has it now: nothing of ours to finish.
      if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Chunks

  async loadChunk(dataset: DatasetConfig, chunk: LoadChunk): Promise<ChunkOutcome> {
    const { doc } = this.clientOf(dataset);
    const table = transactionsTable(dataset);
    const tx = await this.read(dataset, chunk.transaction);
    if (!tx || tx[T.owner] !== chunk.owner || tx[T.status] !== 'RUNNING') return { kind: 'lease-lost' };
    if (tx[T.cursor] !== cursorText(chunk.from)) return { kind: 'already-committed' };

    const def = this.defOf(dataset, chunk.schema);
    const tables = schemaTables(dataset, chunk.schema);
    const mark = chunkMark(chunk.transaction, chunk.from);
    const progress = structuredClone(chunk.progress);
    const refuse = (row: number, message: string) => {
      progress.rowsRejected += 1;
      if (progress.errors.length < chunk.maxErrors) progress.errors.push({ row, message });
    };
    const { records, duplicates } = dedupe(chunk.records, chunk.operation);
    for (const d of duplicates) refuse(d.row, `id "${d.id}" appears earlier in the same chunk; INSERT keeps the first`);

    const known = await this.known(doc, tables, records.map((r) => r.id));
    const now = new Date().toISOString();
    const history: Item[] = [];
    const live: ({ PutRequest: { Item: Item } } | { DeleteRequest: { Key: Item } })[] = [];
    const fields = sortableFields(def);
    for (const r of records) {
      const plan = planRow(chunk.operation, r.id, known.get(r.id) ?? {}, mark);
      if (!plan.write) {
        refuse(r.row, plan.message);
        continue;
      }
      const createdAt = plan.createdAt ?? now;
      if (chunk.operation === 'DELETE') {
        history.push({ [A.id]: r.id, [A.version]: plan.version, [A.createdAt]: createdAt, [A.updatedAt]: now, [A.deletedAt]: now, [MARK]: mark });
        live.push({ DeleteRequest: { Key: { [A.id]: r.id } } });
      } else {
        const d = storedData(def, r.data);
        const problem = unstorable(d);
        if (problem) {
          refuse(r.row, problem.detail);
          continue;
        }
        const head = { [A.id]: r.id, [A.version]: plan.version, [A.createdAt]: createdAt, [A.updatedAt]: now, ...(Object.keys(d).length ? { [A.data]: d } : {}), [MARK]: mark };
        const item = { ...head, ...sortKeys(fields, r.id, d) };
        const size = itemSize(item);
        if (size > MAX_ITEM_BYTES) {
          refuse(r.row, `the record takes ${size} bytes, over DynamoDB's item limit of ${MAX_ITEM_BYTES} bytes (400 KB)`);
          continue;
        }
        history.push(head);
        live.push({ PutRequest: { Item: item } });
      }
      progress.rowsWritten += 1;
    }
    // History first, then the live items: a crash in between is repaired by the re-run (see the top).
    await this.batchWrite(doc, tables.history, history.map((Item) => ({ PutRequest: { Item } })));
    await this.batchWrite(doc, tables.records, live);

    const stored = JSON.parse(String(tx[T.progress])) as ActionProgress[];
    stored[chunk.from.action] = progress;
    try {
      await doc.send(
        new UpdateCommand({
          TableName: table,
          Key: { [A.id]: chunk.transaction },
          UpdateExpression: 'SET #c = :to, #p = :p, #u = :now, #x = :until',
          ConditionExpression: '#c = :from AND #o = :owner AND #s = :running',
          ExpressionAttributeNames: { '#c': T.cursor, '#p': T.progress, '#u': T.updatedAt, '#x': T.expires, '#o': T.owner, '#s': T.status },
          ExpressionAttributeValues: {
            ':to': cursorText(chunk.to),
            ':from': cursorText(chunk.from),
            ':p': JSON.stringify(stored),
            ':now': now,
            ':until': Date.now() + chunk.leaseMs,
            ':owner': chunk.owner,
            ':running': 'RUNNING',
          },
        }),
      );
    } catch (err) {
      if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
      // Another owner took it meanwhile (and runs this chunk itself, writing the same items).
      const after = await this.read(dataset, chunk.transaction);
      return after && after[T.owner] === chunk.owner && after[T.cursor] !== cursorText(chunk.from) ? { kind: 'already-committed' } : { kind: 'lease-lost' };
    }
    return { kind: 'committed', progress };
  }

  /**
   * What each id's record is before the chunk: its live item (BatchGetItem, 100 ids a call); for
   * ids without one, whether it ever had a version (history version 1, BatchGetItem again), and for
   * those that had, their latest history item (a Query each: deleted records continue their versions).
   */
  private async known(doc: DynamoDBDocumentClient, tables: { records: string; history: string }, ids: string[]): Promise<Map<string, Known>> {
    const out = new Map<string, Known>();
    const projection = { ProjectionExpression: '#id, #v, #c, #m, #d', ExpressionAttributeNames: { '#id': A.id, '#v': A.version, '#c': A.createdAt, '#m': MARK, '#d': A.deletedAt } };
    const liveItems = await this.batchGet(doc, tables.records, ids.map((id) => ({ [A.id]: id })), projection);
    for (const item of liveItems) {
      out.set(item[A.id] as string, { live: { version: Number(item[A.version]), createdAt: item[A.createdAt] as string, mark: item[MARK] as string | undefined } });
    }
    const missing = ids.filter((id) => !out.has(id));
    const firsts = await this.batchGet(doc, tables.history, missing.map((id) => ({ [A.id]: id, [A.version]: 1 })), projection);
    await inParallel(firsts, IN_FLIGHT, async (first) => {
      const id = first[A.id] as string;
      const { Items } = await doc.send(
        new QueryCommand({
          TableName: tables.history,
          KeyConditionExpression: '#id = :id',
          ExpressionAttributeValues: { ':id': id },
          ScanIndexForward: false,
          Limit: 1,
          ConsistentRead: true,
          ...projection,
        }),
      );
      const latest = Items?.[0] ?? first;
      out.set(id, { latest: { version: Number(latest[A.version]), createdAt: latest[A.createdAt] as string, mark: latest[MARK] as string | undefined, deleted: latest[A.deletedAt] !== undefined } });
    });
    return out;
  }

  private async batchGet(doc: DynamoDBDocumentClient, table: string, keys: Item[], projection: { ProjectionExpression: string; ExpressionAttributeNames: Record<string, string> }): Promise<Item[]> {
    const found: Item[] = [];
    const calls: Item[][] = [];
    for (let i = 0; i < keys.length; i += BATCH_GET) calls.push(keys.slice(i, i + BATCH_GET));
    await inParallel(calls, IN_FLIGHT, async (batch) => {
      let pending: Item[] | undefined = batch;
      for (let round = 0; pending?.length; round++) {
        if (round >= MAX_ROUNDS) throw new StoreError({ kind: 'unavailable', detail: `DynamoDB left keys of ${table} unprocessed ${MAX_ROUNDS} times` });
        if (round > 0) await backoff(round);
        const answer = await doc.send(new BatchGetCommand({ RequestItems: { [table]: { Keys: pending, ConsistentRead: true, ...projection } } }));
        found.push(...(answer.Responses?.[table] ?? []));
        pending = answer.UnprocessedKeys?.[table]?.Keys as Item[] | undefined;
      }
    });
    return found;
  }

  /** BatchWriteItem in 25s, several calls in flight; unprocessed items are retried with a growing, jittered pause. */
  private async batchWrite(doc: DynamoDBDocumentClient, table: string, requests: Item[]): Promise<void> {
    const calls: Item[][] = [];
    for (let i = 0; i < requests.length; i += BATCH_WRITE) calls.push(requests.slice(i, i + BATCH_WRITE));
    await inParallel(calls, IN_FLIGHT, async (batch) => {
      let pending: Item[] | undefined = batch;
      for (let round = 0; pending?.length; round++) {
        if (round >= MAX_ROUNDS) throw new StoreError({ kind: 'unavailable', detail: `DynamoDB left items of ${table} unprocessed ${MAX_ROUNDS} times` });
        if (round > 0) await backoff(round);
        const answer = await doc.send(new BatchWriteCommand({ RequestItems: { [table]: pending as never } }));
        pending = answer.UnprocessedItems?.[table] as Item[] | undefined;
      }
    });
  }
}

export function emptyProgress(): ActionProgress {
  return { rowsRead: 0, rowsWritten: 0, rowsRejected: 0, bytesRead: 0, errors: [] };
}

function fromItem(item: Item): StoredTransaction {
  const expires = item[T.expires];
  return {
    id: item[A.id] as string,
    status: item[T.status] as StoredTransaction['status'],
    spec: JSON.parse(String(item[T.spec])),
    progress: JSON.parse(String(item[T.progress])),
    cursor: parseCursor(String(item[T.cursor])),
    ...(item[T.error] !== undefined ? { error: item[T.error] as string } : {}),
    createdAt: item[T.createdAt] as string,
    updatedAt: item[T.updatedAt] as string,
    ...(item[T.startedAt] !== undefined ? { startedAt: item[T.startedAt] as string } : {}),
    ...(item[T.finishedAt] !== undefined ? { finishedAt: item[T.finishedAt] as string } : {}),
    ...(item[T.owner] !== undefined ? { leaseOwner: item[T.owner] as string, ...(typeof expires === 'number' ? { leaseExpiresAt: new Date(expires).toISOString() } : {}) } : {}),
    ...(Number(item[T.lost] ?? 0) > 0 ? { lostLeases: Number(item[T.lost]) } : {}),
  };
}

async function describe(raw: DynamoDBClient, name: string) {
  try {
    return (await raw.send(new DescribeTableCommand({ TableName: name }))).Table;
  } catch (err) {
    if ((err as Error).name === 'ResourceNotFoundException') return undefined;
    throw err;
  }
}

/** A read of a table that does not exist yet (no transaction was ever created): nothing. */
async function absentTable<T>(read: Promise<T>): Promise<T | undefined> {
  try {
    return await read;
  } catch (err) {
    if ((err as Error).name === 'ResourceNotFoundException') return undefined;
    throw err;
  }
}

/** Runs `work` on every item, at most `limit` at once; the first failure is thrown once all have settled. */
async function inParallel<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: unknown;
  const worker = async () => {
    while (next < items.length && failure === undefined) {
      const item = items[next++];
      try {
        await work(item);
      } catch (err) {
        failure ??= err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure !== undefined) throw failure;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Exponential with full jitter: 25 ms, 50 ms, … up to 2 s. */
const backoff = (round: number) => sleep(Math.random() * Math.min(2000, 25 * 2 ** round));
