/**
 * The DynamoDB location driver (docs/dynamodb.md). Two tables per schema (tables.ts): the live
 * records and every version (history, deletes as tombstones). Every write of a record puts its new
 * live item and its history item in one TransactWriteItems, conditional on the version it read, so
 * two concurrent writers can never both win one version: the loser re-reads and tries again.
 *
 *   ATOMIC_ALL, ATOMIC  one TransactWriteItems for the whole request (≤ 100 items: 50 actions)
 *   QUORUM              each action its own conditional transaction, one after the other
 *   EVENTUAL            each action its own conditional transaction, all at once
 *
 * Reads by id honour the read's consistency: QUORUM (the default) and stronger use ConsistentRead,
 * EVENTUAL and ASYNC do not. Lists Scan the
 * records table with the filter pushed down and sort in memory, up to a bound (sortBound); past it
 * a sort is a 400, never a partial page.
 */
import {
  DeleteTableCommand,
  CreateTableCommand,
  DescribeTableCommand,
  ListTablesCommand,
  UpdateTableCommand,
  type DynamoDBClient,
  type GlobalSecondaryIndex,
  type TableDescription,
  type TransactWriteItem,
} from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, GetCommand, QueryCommand, ScanCommand, TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { Logger } from 'pino';
import { compareTyped, fieldValue, matchesFilter } from '../../../../model/filter.js';
import { compareRecords, compareUnder } from '../../../../model/sort.js';
import type { Field } from '../../engine/layout.js';
import type { DatasetConfig, RecordSchemaDef } from '../../../../model/types.js';
import { schemaDefOf } from '../../engine/layout.js';
import {
  StoreError,
  type DriverCapabilities,
  type ListQuery,
  type LocationDriver,
  type OpResult,
  type PrepareReport,
  type RecordKey,
  type StoreFailure,
  type StoredRecord,
  type WriteLevel,
  type WriteOp,
} from '../../engine/contract.js';
import { SecretNotMountedError } from '../postgres/connection.js';
import { DynamoDbBulkLoad } from './bulk-load.js';
import { DynamoDbOwnership } from './ownership.js';
import { DATAPLANE_DEFAULTS, type DataPlaneSettings } from '../../../../model/settings/dataplane.js';
import { DynamoDbChangeFeed, STREAM_RETENTION_MS } from './change-feed.js';
import { clientKey, createClient, createStreamsClient } from './client.js';
import { filterExpression, type FilterExpression } from './filter-expression.js';
import { encodeSortValue, INDEX_PARTITION, indexName, SEPARATOR, sortableFields, sortKeyAttribute, sortKeys } from './sort-index.js';
import { A, schemaTables, type SchemaTables } from './tables.js';
import { itemSize, MAX_ITEM_BYTES, shownData, storedData, unstorable } from './values.js';

/** TransactWriteItems takes 100 items; an action writes two (the live item and its history item). */
export const MAX_TRANSACTION_ITEMS = 100;
export const MAX_ATOMIC_ACTIONS = MAX_TRANSACTION_ITEMS / 2;
/** The records tables' stream: the change feed (change-feed.ts). */
const STREAM = { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' } as const;
/** Most matching records a list sorts in memory. */
export const DEFAULT_SORT_BOUND = 10_000;
/** Actions of an EVENTUAL write in flight at once. */
const EVENTUAL_CONCURRENCY = 16;
/** Tries of a write that lost a race for a version (each re-reads first). */
const WRITE_TRIES = 30;

export const dynamodbCapabilities: DriverCapabilities = {
  consistency: ['ATOMIC_ALL', 'ATOMIC', 'QUORUM', 'EVENTUAL'],
  maxAtomicActions: MAX_ATOMIC_ACTIONS,
  list: true,
  sortable: 'declared',
  orderedWithoutSort: false,
  rawSql: false,
  changeFeed: true, // change-feed.ts: DynamoDB Streams of the records tables
  bulkLoad: true, // bulk-load.ts
  // A sortable value is an index sort key with its id (sort-index.ts): DynamoDB's limit is 1024 bytes, one for the separator.
  indexedKeyBytes: 1023,
};

export interface DynamoDbDriverOptions {
  logger: Logger;
  /** The process settings (default: every default). */
  settings?: DataPlaneSettings;
  /** Most matching records a list sorts in memory (default DEFAULT_SORT_BOUND). */
  sortBound?: number;
}

/** A live item as stored. */
interface Head {
  id: string;
  version: number;
  createdAt: string;
  updatedAt: string;
  d?: Record<string, unknown>;
}

interface HistoryItem extends Head {
  deletedAt?: string;
}

/** One record's state while a write is planned: what was read, and what the ops make of it. */
interface KeyState {
  schema: string;
  def: RecordSchemaDef;
  tables: SchemaTables;
  id: string;
  initial?: Head;
  current?: Head;
  /** The highest version written so far, tombstones included. */
  last: number;
  history: HistoryItem[];
}

/** A race for a version was lost: re-read and plan again. */
class LostRace extends Error {}

export class DynamoDbDriver implements LocationDriver {
  readonly kind = 'dynamodb' as const;
  readonly capabilities = dynamodbCapabilities;
  private readonly settings: DataPlaneSettings;
  private readonly clients = new Map<string, { raw: DynamoDBClient; doc: DynamoDBDocumentClient }>();
  private readonly streamClients = new Map<string, DynamoDBStreamsClient>();
  readonly bulkLoad: DynamoDbBulkLoad;
  readonly changes: DynamoDbChangeFeed;
  readonly ownership: DynamoDbOwnership;

  constructor(private readonly options: DynamoDbDriverOptions) {
    this.settings = options.settings ?? DATAPLANE_DEFAULTS;
    this.bulkLoad = new DynamoDbBulkLoad(
      (dataset) => this.client(dataset),
      (dataset, schema) => this.def(dataset, schema),
      storeFailure,
    );
    this.ownership = new DynamoDbOwnership({ client: (dataset) => this.client(dataset), untilActive: (raw, table) => this.untilActive(raw, table), failure: storeFailure });
    const shardReadMs = this.settings.DAS_DYNAMODB_STREAM_READ_MS;
    this.changes = new DynamoDbChangeFeed(
      {
        tables: (dataset) => this.client(dataset).raw,
        streams: (dataset) => this.streams(dataset),
        def: (dataset, schema) => schemaDefOf(dataset, schema),
        toRecord: (def, item) => toRecord(def, item as unknown as Head),
        failure: (err) => storeFailure(err),
        logger: options.logger,
      },
      {
        shardReadMs,
        wakeMs: shardReadMs,
        listingMs: 10_000,
        // Streams keep 24 hours, however long the change retention is set.
        retentionMs: Math.min(STREAM_RETENTION_MS, this.settings.DAS_CHANGE_RETENTION_HOURS * 3600_000),
      },
    );
  }

  private streams(dataset: DatasetConfig): DynamoDBStreamsClient {
    const key = clientKey(dataset, this.settings);
    let client = this.streamClients.get(key);
    if (!client) this.streamClients.set(key, (client = createStreamsClient(dataset, this.settings)));
    return client;
  }

  private client(dataset: DatasetConfig): { raw: DynamoDBClient; doc: DynamoDBDocumentClient } {
    const key = clientKey(dataset, this.settings);
    let client = this.clients.get(key);
    if (!client) {
      client = createClient(dataset, this.settings);
      this.clients.set(key, client);
    }
    return client;
  }

  private def(dataset: DatasetConfig, schema: string): RecordSchemaDef {
    const def = schemaDefOf(dataset, schema);
    // The engine checks schema names before it calls a driver: this is a broken invariant.
    if (!def) throw new Error(`dataset "${dataset.id}" has no schema "${schema}"`);
    return def;
  }

  // ---------------------------------------------------------------------------------------------
  // Tables

  async prepare(dataset: DatasetConfig): Promise<PrepareReport> {
    const applied: string[] = [];
    const refused: string[] = [];
    try {
      const { raw } = this.client(dataset);
      for (const schema of Object.keys(dataset.schemas)) {
        const tables = schemaTables(dataset, schema);
        // A new records table gets its sortable properties' indexes at once; later ones are added by prepareSortIndexes.
        const indexes = sortableFields(this.def(dataset, schema));
        const specs = [
          {
            name: tables.records,
            keys: [{ AttributeName: A.id, KeyType: 'HASH' as const }],
            attributes: [
              { AttributeName: A.id, AttributeType: 'S' as const },
              ...(indexes.length ? [{ AttributeName: INDEX_PARTITION, AttributeType: 'N' as const }] : []),
              ...indexes.map((f) => ({ AttributeName: sortKeyAttribute(f), AttributeType: 'S' as const })),
            ],
            indexes: indexes.map(sortIndex),
          },
          {
            name: tables.history,
            keys: [
              { AttributeName: A.id, KeyType: 'HASH' as const },
              { AttributeName: A.version, KeyType: 'RANGE' as const },
            ],
            attributes: [
              { AttributeName: A.id, AttributeType: 'S' as const },
              { AttributeName: A.version, AttributeType: 'N' as const },
            ],
          },
        ];
        for (const spec of specs) {
          if (await this.tableStatus(raw, spec.name)) continue;
          try {
            const gsis = 'indexes' in spec && spec.indexes?.length ? { GlobalSecondaryIndexes: spec.indexes } : {};
            const stream = spec.name === tables.records ? { StreamSpecification: STREAM } : {};
            await raw.send(new CreateTableCommand({ TableName: spec.name, KeySchema: spec.keys, AttributeDefinitions: spec.attributes, BillingMode: 'PAY_PER_REQUEST', ...gsis, ...stream }));
            applied.push(`CreateTable ${spec.name}`);
          } catch (err) {
            // Another replica created it first: wait for it like for our own.
            if ((err as Error).name !== 'ResourceInUseException') throw err;
          }
          await this.untilActive(raw, spec.name);
        }
        applied.push(...(await this.prepareSortIndexes(dataset, schema, tables.records)));
        const stream = await this.prepareStream(raw, tables.records);
        if (stream.applied) applied.push(stream.applied);
        if (stream.refused) refused.push(stream.refused);
      }
    } catch (err) {
      throw storeFailure(err);
    }
    // Properties live in a map: a new property needs no change; nothing is ever dropped.
    return { applied, refused };
  }

  /**
   * The records table's stream (the change feed), added to a table from before it. A stream of
   * another view type is left alone and reported: changing it drops the records it holds.
   */
  private async prepareStream(raw: DynamoDBClient, table: string): Promise<{ applied?: string; refused?: string }> {
    const spec = (await this.describe(raw, table))?.StreamSpecification;
    if (spec?.StreamEnabled && spec.StreamViewType === STREAM.StreamViewType) return {};
    if (spec?.StreamEnabled) return { refused: `table ${table} has a ${spec.StreamViewType} stream; the change feed needs ${STREAM.StreamViewType} (disable the stream to let it be replaced)` };
    try {
      await raw.send(new UpdateTableCommand({ TableName: table, StreamSpecification: STREAM }));
    } catch (err) {
      // Another replica enabled it first.
      if ((err as Error).name !== 'ResourceInUseException' && !/already (has|enabled)/i.test((err as Error).message)) throw err;
    }
    await this.untilActive(raw, table);
    return { applied: `UpdateTable ${table}: stream ${STREAM.StreamViewType}` };
  }

  private async describe(raw: DynamoDBClient, name: string): Promise<TableDescription | undefined> {
    try {
      return (await raw.send(new DescribeTableCommand({ TableName: name }))).Table;
    } catch (err) {
      if ((err as Error).name === 'ResourceNotFoundException') return undefined;
      throw err;
    }
  }

  private async tableStatus(raw: DynamoDBClient, name: string): Promise<string | undefined> {
    return (await this.describe(raw, name))?.TableStatus;
  }

  /** Waits until the table and all its indexes are ACTIVE (a new index builds in the background on DynamoDB). */
  private async untilActive(raw: DynamoDBClient, name: string): Promise<void> {
    for (let i = 0; i < 3000; i++) {
      const table = await this.describe(raw, name);
      if (table?.TableStatus === 'ACTIVE' && (table.GlobalSecondaryIndexes ?? []).every((g) => g.IndexStatus === 'ACTIVE')) return;
      await sleep(100);
    }
    throw new StoreError({ kind: 'unavailable', detail: `table ${name} or its indexes did not become ACTIVE within 5 minutes` });
  }

  /**
   * One index per sortable property (sort-index.ts), added when missing (one UpdateTable each, as
   * DynamoDB takes them), then the records written before it get their index attributes (only
   * those whose version is still the one read: a newer write has set them itself).
   */
  private async prepareSortIndexes(dataset: DatasetConfig, schema: string, table: string): Promise<string[]> {
    const { raw, doc } = this.client(dataset);
    const applied: string[] = [];
    const fields = sortableFields(this.def(dataset, schema));
    for (const field of fields) {
      const existing = new Set(((await this.describe(raw, table))?.GlobalSecondaryIndexes ?? []).map((g) => g.IndexName));
      if (existing.has(indexName(field))) continue;
      const index = sortIndex(field);
      try {
        await raw.send(
          new UpdateTableCommand({
            TableName: table,
            AttributeDefinitions: [
              { AttributeName: INDEX_PARTITION, AttributeType: 'N' },
              { AttributeName: sortKeyAttribute(field), AttributeType: 'S' },
            ],
            GlobalSecondaryIndexUpdates: [{ Create: index }],
          }),
        );
        applied.push(`UpdateTable ${table}: create index ${indexName(field)}`);
      } catch (err) {
        // Another replica is adding it.
        if ((err as Error).name !== 'ResourceInUseException' && !/already exists/i.test((err as Error).message)) throw err;
      }
      await this.untilActive(raw, table);
      const filled = await this.backfill(doc, table, field);
      if (filled) applied.push(`backfill ${indexName(field)}: ${filled} records`);
    }
    return applied;
  }

  private async backfill(doc: DynamoDBDocumentClient, table: string, field: Field): Promise<number> {
    let start: Record<string, unknown> | undefined;
    let filled = 0;
    const path = [A.data, ...field.path, ...(field.type === 'link' ? ['id'] : [])];
    const names = Object.fromEntries(path.map((p, i) => [`#p${i}`, p]));
    do {
      const page = await doc.send(
        new ScanCommand({
          TableName: table,
          ConsistentRead: true,
          ExclusiveStartKey: start,
          FilterExpression: `attribute_exists(${Object.keys(names).join('.')}) AND attribute_not_exists(#sk)`,
          ExpressionAttributeNames: { ...names, '#sk': sortKeyAttribute(field) },
        }),
      );
      for (const item of page.Items ?? []) {
        const keys = sortKeys([field], item[A.id] as string, item[A.data] as Record<string, unknown>);
        try {
          await doc.send(
            new UpdateCommand({
              TableName: table,
              Key: { [A.id]: item[A.id] },
              UpdateExpression: 'SET #gp = :gp, #sk = :sk',
              ConditionExpression: '#v = :v',
              ExpressionAttributeNames: { '#gp': INDEX_PARTITION, '#sk': sortKeyAttribute(field), '#v': A.version },
              ExpressionAttributeValues: { ':gp': 0, ':sk': keys[sortKeyAttribute(field)], ':v': item[A.version] },
            }),
          );
          filled++;
        } catch (err) {
          if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
        }
      }
      start = page.LastEvaluatedKey;
    } while (start);
    return filled;
  }

  async ping(dataset: DatasetConfig): Promise<void> {
    try {
      await this.client(dataset).raw.send(new ListTablesCommand({ Limit: 1 }));
    } catch (err) {
      throw storeFailure(err);
    }
  }

  async purge(dataset: DatasetConfig): Promise<string[]> {
    const dropped: string[] = [];
    try {
      const { raw } = this.client(dataset);
      for (const schema of Object.keys(dataset.schemas)) {
        const tables = schemaTables(dataset, schema);
        for (const name of [tables.records, tables.history]) {
          try {
            await raw.send(new DeleteTableCommand({ TableName: name }));
            dropped.push(name);
          } catch (err) {
            if ((err as Error).name !== 'ResourceNotFoundException') throw err;
          }
        }
      }
      const transactions = await this.bulkLoad.drop(dataset);
      if (transactions) dropped.push(transactions);
      const marker = await this.ownership.drop(dataset);
      if (marker) dropped.push(marker);
    } catch (err) {
      throw storeFailure(err);
    }
    return dropped;
  }

  // ---------------------------------------------------------------------------------------------
  // Reads

  async read(dataset: DatasetConfig, { schema, id, version, consistency }: RecordKey): Promise<StoredRecord | undefined> {
    const def = this.def(dataset, schema);
    const tables = schemaTables(dataset, schema);
    // QUORUM and stronger read the latest commit; EVENTUAL (and ASYNC) may read a lagging copy, at half the read cost.
    const ConsistentRead = consistency !== 'EVENTUAL' && consistency !== 'ASYNC';
    try {
      const { doc } = this.client(dataset);
      if (version === undefined) {
        const { Item } = await doc.send(new GetCommand({ TableName: tables.records, Key: { [A.id]: id }, ConsistentRead }));
        return Item ? toRecord(def, Item as Head) : undefined;
      }
      const { Item } = await doc.send(new GetCommand({ TableName: tables.history, Key: { [A.id]: id, [A.version]: version }, ConsistentRead }));
      if (!Item) return undefined;
      const item = Item as HistoryItem;
      return item.deletedAt ? { ...toRecord(def, item), data: {}, deleted: true } : toRecord(def, item);
    } catch (err) {
      throw storeFailure(err, schema);
    }
  }

  async readMany(dataset: DatasetConfig, schema: string, ids: string[]): Promise<StoredRecord[]> {
    const def = this.def(dataset, schema);
    const table = schemaTables(dataset, schema).records;
    const unique = [...new Set(ids)];
    const found = new Map<string, StoredRecord>();
    try {
      const { doc } = this.client(dataset);
      for (let i = 0; i < unique.length; i += 100) {
        let keys: Record<string, unknown>[] | undefined = unique.slice(i, i + 100).map((id) => ({ [A.id]: id }));
        for (let round = 0; keys?.length; round++) {
          if (round > 0) await sleep(Math.min(1000, 20 * 2 ** round));
          const answer = await doc.send(new BatchGetCommand({ RequestItems: { [table]: { Keys: keys, ConsistentRead: true } } }));
          for (const item of answer.Responses?.[table] ?? []) found.set(item[A.id] as string, toRecord(def, item as Head));
          keys = answer.UnprocessedKeys?.[table]?.Keys as Record<string, unknown>[] | undefined;
        }
      }
    } catch (err) {
      throw storeFailure(err, schema);
    }
    return unique.flatMap((id) => found.get(id) ?? []);
  }

  /**
   * A list page: the records table scanned with the filter pushed down (filter-expression.ts),
   * the matches sorted in memory under the reference order and cut after the keyset position.
   * More matches than the bound is a 400 (sort-too-large), never a partial page.
   */
  async list(dataset: DatasetConfig, schema: string, query: ListQuery): Promise<StoredRecord[]> {
    const def = this.def(dataset, schema);
    const lead = query.sort[0];
    const indexed = lead && !lead.field.system ? sortableFields(def).find((f) => f.dotted === lead.field.dotted) : undefined;
    if (indexed) {
      try {
        return await this.listIndexed(dataset, schema, def, indexed, query);
      } catch (err) {
        throw storeFailure(err, schema);
      }
    }
    return this.listScanned(dataset, schema, def, query, query.filter ? filterExpression(query.filter) : undefined, query.limit);
  }

  /**
   * A page led by a sortable property: its index read in order from the keyset position, the
   * records without a value (not in the index) before or after it as the sort says. Index order
   * decides the first key only, so ties of the page's last value are all read and the page sorted
   * in memory by the remaining keys.
   */
  private async listIndexed(dataset: DatasetConfig, schema: string, def: RecordSchemaDef, field: Field, query: ListQuery): Promise<StoredRecord[]> {
    const lead = query.sort[0];
    const segments: ('nulls' | 'values')[] = lead.nulls === 'first' ? ['nulls', 'values'] : ['values', 'nulls'];
    const afterLead = query.after?.[0];
    const first = query.after ? segments.indexOf(afterLead === null || afterLead === undefined ? 'nulls' : 'values') : 0;
    const out: StoredRecord[] = [];
    for (let s = first; s < segments.length && out.length < query.limit; s++) {
      const part = { ...query, after: s === first ? query.after : undefined, limit: query.limit - out.length };
      if (segments[s] === 'values') out.push(...(await this.indexSegment(dataset, schema, def, field, part)));
      else {
        const nullFilter = { kind: 'null' as const, negated: false, field: lead.field };
        const filter = part.filter ? { kind: 'and' as const, items: [nullFilter, part.filter] } : nullFilter;
        out.push(...(await this.listScanned(dataset, schema, def, { ...part, filter }, filterExpression(filter), part.limit)));
      }
    }
    return out;
  }

  private async indexSegment(dataset: DatasetConfig, schema: string, def: RecordSchemaDef, field: Field, query: ListQuery): Promise<StoredRecord[]> {
    const { doc } = this.client(dataset);
    const table = schemaTables(dataset, schema).records;
    const lead = query.sort[0];
    const asc = lead.direction === 'asc';
    const pushed: FilterExpression | undefined = query.filter ? filterExpression(query.filter) : undefined;
    const names: Record<string, string> = { ...(pushed?.names ?? {}), '#gp': INDEX_PARTITION };
    const values: Record<string, unknown> = { ...(pushed?.values ?? {}), ':gp': 0 };
    let condition = '#gp = :gp';
    const afterLead = query.after?.[0];
    if (afterLead !== undefined && afterLead !== null) {
      const encoded = encodeSortValue(field.type, afterLead as string | number | boolean);
      // Ascending: every key from the position's value on (its ties included); descending: up to it.
      values[':pos'] = asc ? encoded : `${encoded}${String.fromCharCode(SEPARATOR.charCodeAt(0) + 1)}`;
      condition += asc ? ' AND #sk >= :pos' : ' AND #sk < :pos';
      names['#sk'] = sortKeyAttribute(field);
    }
    const bound = this.options.sortBound ?? DEFAULT_SORT_BOUND;
    const collected: StoredRecord[] = [];
    let boundary: string | number | boolean | null = null;
    let start: Record<string, unknown> | undefined;
    read: do {
      const page = await doc.send(
        new QueryCommand({
          TableName: table,
          IndexName: indexName(field),
          KeyConditionExpression: condition,
          ScanIndexForward: asc,
          ExclusiveStartKey: start,
          // Read about what the page needs (ties may take more rounds), not a whole 1 MB each time.
          Limit: Math.min(1000, Math.max(100, query.limit * 2 + 10)),
          ...(pushed ? { FilterExpression: pushed.expression } : {}),
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        }),
      );
      for (const item of page.Items ?? []) {
        const record = toRecord(def, item as Head);
        if (query.filter && !matchesFilter(query.filter, record)) continue;
        if (query.after && compareToPosition(query.sort, record, query.after) <= 0) continue;
        const value = fieldValue(record, lead.field);
        // Past the page's last value: everything needed has been read.
        if (boundary !== null && value !== null && compareTyped(lead.field.type, value, boundary) !== 0) break read;
        collected.push(record);
        if (collected.length === query.limit) boundary = value;
        if (collected.length > bound) throw new StoreError({ kind: 'sort-too-large', schema, bound, detail: `more than ${bound} records share one value of ${field.dotted}` });
      }
      start = page.LastEvaluatedKey;
    } while (start);
    return collected.sort((a, b) => compareRecords(query.sort, a, b)).slice(0, query.limit);
  }

  /** Matches by a Scan of the records table, sorted in memory (bounded) and cut after the keyset position. */
  private async listScanned(dataset: DatasetConfig, schema: string, def: RecordSchemaDef, query: ListQuery, pushed: FilterExpression | undefined, limit: number): Promise<StoredRecord[]> {
    const table = schemaTables(dataset, schema).records;
    const bound = this.options.sortBound ?? DEFAULT_SORT_BOUND;
    const matches: StoredRecord[] = [];
    try {
      const { doc } = this.client(dataset);
      let start: Record<string, unknown> | undefined;
      do {
        const page = await doc.send(
          new ScanCommand({
            TableName: table,
            ConsistentRead: true,
            ExclusiveStartKey: start,
            ...(pushed ? { FilterExpression: pushed.expression, ExpressionAttributeNames: pushed.names } : {}),
            // DynamoDB refuses an empty values map (a filter of `is null` tests alone).
            ...(pushed && Object.keys(pushed.values).length ? { ExpressionAttributeValues: pushed.values } : {}),
          }),
        );
        for (const item of page.Items ?? []) {
          const record = toRecord(def, item as Head);
          if (query.filter && !matchesFilter(query.filter, record)) continue;
          matches.push(record);
          if (matches.length > bound) {
            throw new StoreError({
              kind: 'sort-too-large',
              schema,
              bound,
              detail: 'narrow the filter (DynamoDB pages are sorted in memory; see docs/dynamodb.md)',
            });
          }
        }
        start = page.LastEvaluatedKey;
      } while (start);
    } catch (err) {
      throw storeFailure(err, schema);
    }
    const { sort, after } = query;
    const rest = after ? matches.filter((r) => compareToPosition(sort, r, after) > 0) : matches;
    return rest.sort((a, b) => compareRecords(sort, a, b)).slice(0, limit);
  }

  // ---------------------------------------------------------------------------------------------
  // Writes

  async write(dataset: DatasetConfig, ops: WriteOp[], consistency: WriteLevel): Promise<OpResult[]> {
    if (consistency === 'ATOMIC' || consistency === 'ATOMIC_ALL') {
      // The engine refuses bigger atomic writes (capabilities.maxAtomicActions) before they get here.
      if (ops.length > MAX_ATOMIC_ACTIONS) throw new Error(`an atomic DynamoDB write holds at most ${MAX_ATOMIC_ACTIONS} actions, got ${ops.length}`);
      try {
        return await this.writeWithRetry(dataset, ops);
      } catch (err) {
        throw storeFailure(err);
      }
    }
    const one = async (op: WriteOp): Promise<OpResult> => {
      try {
        return (await this.writeWithRetry(dataset, [op]))[0];
      } catch (err) {
        const failure = storeFailure(err, op.schema);
        if (failure instanceof StoreError) return { ok: false, failure: failure.failure };
        throw failure;
      }
    };
    if (consistency === 'EVENTUAL') {
      // All at once, but at most EVENTUAL_CONCURRENCY requests in flight.
      const results: OpResult[] = new Array(ops.length);
      let next = 0;
      const worker = async () => {
        while (next < ops.length) {
          const i = next++;
          results[i] = await one(ops[i]);
        }
      };
      await Promise.all(Array.from({ length: Math.min(EVENTUAL_CONCURRENCY, ops.length) }, worker));
      return results;
    }
    const results: OpResult[] = [];
    for (const op of ops) results.push(await one(op));
    return results;
  }

  /**
   * Plans and commits ops as one transaction; a lost race re-reads and plans again. The first try
   * of a create reads nothing: it assumes a brand-new id (version 1, no live item), and the
   * transaction's conditions refuse it when the id is taken or has history; the retry then reads.
   */
  private async writeWithRetry(dataset: DatasetConfig, ops: WriteOp[]): Promise<OpResult[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.writeOnce(dataset, ops, attempt);
      } catch (err) {
        if (!(err instanceof LostRace)) throw err;
        if (attempt >= WRITE_TRIES) throw new StoreError({ kind: 'unavailable', detail: `the records were written by others ${WRITE_TRIES} times while this write was tried` });
        // Jittered, growing: writers that collided spread out instead of colliding again.
        await sleep(Math.random() * Math.min(200, 10 * attempt));
      }
    }
  }

  private async writeOnce(dataset: DatasetConfig, ops: WriteOp[], attempt: number): Promise<OpResult[]> {
    const optimistic = attempt === 1;
    const { doc } = this.client(dataset);
    const states = new Map<string, KeyState>();
    const toLoad: KeyState[] = [];
    for (const op of ops) {
      const key = JSON.stringify([op.schema, op.id]);
      if (states.has(key)) continue;
      const state: KeyState = { schema: op.schema, def: this.def(dataset, op.schema), tables: schemaTables(dataset, op.schema), id: op.id, last: 0, history: [] };
      states.set(key, state);
      if (!(optimistic && op.op === 'create')) toLoad.push(state);
    }
    await Promise.all(toLoad.map((state) => this.load(doc, state, attempt > 1)));

    const now = new Date().toISOString();
    const results: OpResult[] = [];
    for (const [i, op] of ops.entries()) {
      const state = states.get(JSON.stringify([op.schema, op.id]))!;
      const outcome = apply(state, op, now);
      if ('failure' in outcome) {
        if (ops.length === 1) return [{ ok: false, failure: outcome.failure }];
        return ops.map((_, j) => ({ ok: false as const, failure: j === i ? outcome.failure : ({ kind: 'aborted' } as const) }));
      }
      results.push(outcome.result);
    }

    const items: TransactWriteItem[] = [];
    for (const state of states.values()) items.push(...transactionItems(state));
    try {
      await doc.send(new TransactWriteCommand({ TransactItems: items as never }));
    } catch (err) {
      const name = (err as Error).name;
      const reasons = ((err as { CancellationReasons?: { Code?: string; Message?: string }[] }).CancellationReasons ?? []).map((r) => r.Code ?? 'None');
      if (name === 'TransactionCanceledException' && reasons.some((c) => c === 'ConditionalCheckFailed' || c === 'TransactionConflict')) throw new LostRace();
      if (name === 'TransactionConflictException') throw new LostRace();
      throw err;
    }
    return results;
  }

  /**
   * The record's live item and, when it has none, its last history version (ids continue after a
   * delete). `thorough` (a retry) reads the last history version even past a live item: a bulk-load
   * chunk that crashed between its history and live items leaves a history version above the live
   * one (bulk-load.ts), which a write must step over instead of colliding with it every time.
   */
  private async load(doc: DynamoDBDocumentClient, state: KeyState, thorough = false): Promise<void> {
    const { Item } = await doc.send(new GetCommand({ TableName: state.tables.records, Key: { [A.id]: state.id }, ConsistentRead: true }));
    if (Item) {
      state.initial = state.current = Item as Head;
      state.last = state.initial.version;
      if (!thorough) return;
    }
    const { Items } = await doc.send(
      new QueryCommand({
        TableName: state.tables.history,
        KeyConditionExpression: '#id = :id',
        ExpressionAttributeNames: { '#id': A.id, '#v': A.version },
        ExpressionAttributeValues: { ':id': state.id },
        ScanIndexForward: false,
        Limit: 1,
        ConsistentRead: true,
        ProjectionExpression: '#v',
      }),
    );
    state.last = Math.max(state.last, (Items?.[0]?.[A.version] as number | undefined) ?? 0);
  }

  async close(): Promise<void> {
    for (const { raw } of this.clients.values()) raw.destroy();
    this.clients.clear();
    for (const client of this.streamClients.values()) client.destroy();
    this.streamClients.clear();
  }
}

/** The index of a sortable property: one partition (`gp`), ordered by the encoded value and id; every attribute projected. */
function sortIndex(field: Field): GlobalSecondaryIndex {
  return {
    IndexName: indexName(field),
    KeySchema: [
      { AttributeName: INDEX_PARTITION, KeyType: 'HASH' },
      { AttributeName: sortKeyAttribute(field), KeyType: 'RANGE' },
    ],
    Projection: { ProjectionType: 'ALL' },
  };
}

/** One op applied to a record's planned state: its result, or why it cannot be written. */
function apply(state: KeyState, op: WriteOp, now: string): { result: OpResult } | { failure: StoreFailure } {
  const { schema, id } = op;
  if (op.op === 'create') {
    if (state.current) return { failure: { kind: 'exists', schema, id } };
    const head: Head = { id, version: state.last + 1, createdAt: now, updatedAt: now, d: storedData(state.def, op.data) };
    return commit(state, head, head);
  }
  if (!state.current) return { failure: { kind: 'not-found', schema, id } };
  if (op.op === 'update') {
    const head: Head = { ...state.current, version: state.last + 1, updatedAt: now, d: storedData(state.def, op.data, op.merge ? state.current.d : undefined) };
    return commit(state, head, head);
  }
  const tombstone: HistoryItem = { id, version: state.last + 1, createdAt: state.current.createdAt, updatedAt: now, deletedAt: now };
  return commit(state, undefined, tombstone);
}

function commit(state: KeyState, head: Head | undefined, history: HistoryItem): { result: OpResult } | { failure: StoreFailure } {
  const problem = head && unstorable(head.d);
  if (problem) return { failure: { kind: 'invalid-value', reason: problem.reason, schema: state.schema, detail: problem.detail } };
  for (const item of [head && liveItem(state, head), history]) {
    const size = item ? itemSize(item as unknown as Record<string, unknown>) : 0;
    if (size > MAX_ITEM_BYTES) {
      return { failure: { kind: 'too-large', schema: state.schema, id: state.id, detail: `a stored version takes ${size} bytes, over DynamoDB's item limit of ${MAX_ITEM_BYTES} bytes (400 KB)` } };
    }
  }
  state.current = head;
  state.last = history.version;
  state.history.push(history);
  const record = toRecord(state.def, history);
  return { result: head ? { ok: true, record } : { ok: true, record: { ...record, data: {} }, deleted: true } };
}

/** The transaction's items for one record: its live item (conditional on what was read) and its new history items. */
function transactionItems(state: KeyState): TransactWriteItem[] {
  const items: Record<string, unknown>[] = [];
  const { records, history } = state.tables;
  const unchanged = state.initial
    ? { ConditionExpression: '#v = :v', ExpressionAttributeNames: { '#v': A.version }, ExpressionAttributeValues: { ':v': state.initial.version } }
    : { ConditionExpression: 'attribute_not_exists(#id)', ExpressionAttributeNames: { '#id': A.id } };
  if (state.current) items.push({ Put: { TableName: records, Item: liveItem(state, state.current), ...unchanged } });
  else if (state.initial) items.push({ Delete: { TableName: records, Key: { [A.id]: state.id }, ...unchanged } });
  else items.push({ ConditionCheck: { TableName: records, Key: { [A.id]: state.id }, ...unchanged } });
  for (const item of state.history) {
    items.push({ Put: { TableName: history, Item: item, ConditionExpression: 'attribute_not_exists(#id)', ExpressionAttributeNames: { '#id': A.id } } });
  }
  return items as TransactWriteItem[];
}

/** The live item as stored: the record's attributes and its sortable properties' index attributes (sort-index.ts). */
function liveItem(state: KeyState, head: Head): Record<string, unknown> {
  const { id, version, createdAt, updatedAt, d } = head;
  return { id, version, createdAt, updatedAt, ...(d ? { d } : {}), ...sortKeys(sortableFields(state.def), id, d) };
}

export function toRecord(def: RecordSchemaDef, item: Head): StoredRecord {
  return { id: item.id, version: Number(item.version), data: shownData(def, item.d), createdAt: item.createdAt, updatedAt: item.updatedAt };
}

/** Orders a record against a keyset position (the previous page's last sort values). */
function compareToPosition(sort: ListQuery['sort'], record: StoredRecord, after: readonly unknown[]): number {
  for (const [i, key] of sort.entries()) {
    const c = compareUnder(key, fieldValue(record, key.field), after[i]);
    if (c !== 0) return c;
  }
  return 0;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const UNAVAILABLE_NAMES = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
  'TimeoutError',
  'CredentialsProviderError',
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'ExpiredTokenException',
  'AccessDeniedException',
]);

/** What an SDK error means in the store's terms; anything unforeseen is rethrown (a 500). */
export function storeFailure(err: unknown, schema?: string): unknown {
  if (err instanceof StoreError) return err;
  if (err instanceof SecretNotMountedError) return new StoreError({ kind: 'unavailable', detail: err.message });
  const e = err as Error & { code?: string; $metadata?: unknown };
  if (e.name === 'ResourceNotFoundException') return new StoreError({ kind: 'not-prepared', schema: schema ?? 'this dataset' });
  if (UNAVAILABLE_NAMES.has(e.name)) return new StoreError({ kind: 'unavailable', detail: `DynamoDB: ${e.name}: ${e.message}` });
  // No answer at all: the endpoint is down or unreachable.
  if (e.code && /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|EPIPE)$/.test(e.code)) {
    return new StoreError({ kind: 'unavailable', detail: `DynamoDB endpoint: ${e.code}` });
  }
  if (!e.$metadata && /ECONNREFUSED|socket hang up|timed? ?out/i.test(e.message ?? '')) return new StoreError({ kind: 'unavailable', detail: `DynamoDB endpoint: ${e.message}` });
  return err;
}
