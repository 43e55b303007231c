/**
 * Reading the PostgreSQL change log (change-log.ts): pages of changes in sequence (= commit)
 * order with each change's record image joined from the history table, the LISTEN wake-ups, and
 * pruning past the retention.
 */
import pg from 'pg';
import type { Logger } from 'pino';
import type { DatasetConfig } from '../../../../model/types.js';
import { StoreError, type ChangeBatch, type ChangeFeed, type ChangeOp, type RecordChange, type StoredRecord } from '../../engine/contract.js';
import { changeChannel, headSql, historyRowsSql, parseCursor, pruneSql, numberAndReadSql, numberSql } from './change-log.js';
import { databaseSchemaOf, type TableLayout } from './sql.js';
import { recordTypes } from './types.js';

export interface ChangeFeedHost {
  pool(dataset: DatasetConfig): pg.Pool;
  /** The layout of a schema of the dataset's current config; undefined when the config has no such schema. */
  layoutOf(dataset: DatasetConfig, schema: string): TableLayout | undefined;
  connectionUrl(dataset: DatasetConfig): string | undefined;
  toRecord(layout: TableLayout, row: readonly unknown[]): StoredRecord;
  failure(err: unknown): unknown;
  logger: Logger;
}

/** How long a LISTEN connection that failed waits before connecting again. */
const RELISTEN_MS = 1000;

/** What a read needs of a connection: the LISTEN connection or one checked out of the pool. */
type Queryable = Pick<pg.ClientBase, 'query'>;

interface ChangeRowOut {
  cursor: string;
  schema_name: string;
  record_id: string;
  version: number;
  op: ChangeOp;
  committed_at: Date | string;
}

export class PostgresChangeFeed implements ChangeFeed {
  /**
   * Per dataset, the connections LISTENing for its wake-ups. The reader of a dataset reads on one
   * of them, not on the dataset's pool: under a burst of writes every pool connection can be busy
   * (or queued behind the commits), and a read waiting for one would hold delivery back by the
   * whole write backlog.
   */
  private readonly listeners = new Map<string, Set<pg.Client>>();

  constructor(private readonly host: ChangeFeedHost) {}

  /**
   * Runs `fn` on a LISTEN connection of the dataset when there is one (the dispatcher's), else on
   * a pool connection. The statements sequence pending changes in a transaction of their own: after
   * an error the connection may be inside it, so it is rolled back.
   */
  private async withConnection<T>(dataset: DatasetConfig, fn: (c: Queryable) => Promise<T>): Promise<T> {
    const own = this.listeners.get(dataset.id);
    if (own)
      for (const client of own) {
        try {
          return await fn(client);
        } catch (err) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw err;
        }
      }
    const client = await this.host.pool(dataset).connect();
    let failure: unknown;
    try {
      return await fn(client);
    } catch (err) {
      failure = err;
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release(failure instanceof Error ? failure : undefined);
    }
  }

  async readChanges(dataset: DatasetConfig, after: string, limit: number): Promise<ChangeBatch> {
    const from = parseCursor(after);
    if (from === undefined) throw new StoreError({ kind: 'invalid-query', detail: `"${after.slice(0, 40)}" is not a cursor of this dataset's changes` });
    const dbSchema = databaseSchemaOf(dataset);
    try {
      return await this.withConnection(dataset, async (conn) => {
        const results = (await conn.query(numberAndReadSql(dbSchema, from, limit))) as unknown as pg.QueryResult[];
        const pruned = results.at(-2)!.rows[0] as { through: string } | undefined;
        if (from < BigInt(pruned?.through ?? '0')) return { changes: [], expired: true };
        const changes: RecordChange[] = (results.at(-1)!.rows as ChangeRowOut[]).map((r) => ({
          cursor: r.cursor,
          schema: r.schema_name,
          id: r.record_id,
          version: r.version,
          op: r.op,
          committedAt: r.committed_at instanceof Date ? r.committed_at.toISOString() : String(r.committed_at),
        }));
        await this.attachImages(dataset, conn, changes);
        return { changes, expired: false };
      });
    } catch (err) {
      throw this.host.failure(err);
    }
  }

  /** Joins each change's version (and a delete's previous version) from its schema's history. */
  private async attachImages(dataset: DatasetConfig, pool: Queryable, changes: RecordChange[]): Promise<void> {
    const bySchema = new Map<string, RecordChange[]>();
    for (const change of changes) {
      const list = bySchema.get(change.schema) ?? [];
      list.push(change);
      bySchema.set(change.schema, list);
    }
    for (const [schema, list] of bySchema) {
      const layout = this.host.layoutOf(dataset, schema);
      if (!layout) continue;
      const wanted: Array<[string, number]> = [];
      for (const c of list) {
        if (c.op === 'DELETE') {
          if (c.version > 1) wanted.push([c.id, c.version - 1]);
        } else wanted.push([c.id, c.version]);
      }
      const images = new Map<string, StoredRecord>();
      if (wanted.length) {
        const rows = await pool.query({ text: historyRowsSql(layout), values: [wanted.map((w) => w[0]), wanted.map((w) => w[1])], rowMode: 'array' });
        for (const row of rows.rows) {
          const record = this.host.toRecord(layout, row);
          images.set(`${record.version}:${record.id}`, record);
        }
      }
      for (const c of list) {
        if (c.op === 'DELETE') {
          c.previous = images.get(`${c.version - 1}:${c.id}`);
          c.record = { id: c.id, version: c.version, data: {}, updatedAt: c.committedAt, deleted: true };
        } else c.record = images.get(`${c.version}:${c.id}`);
      }
    }
  }

  async head(dataset: DatasetConfig): Promise<string> {
    try {
      const results = (await this.withConnection(dataset, (conn) => conn.query(headSql(databaseSchemaOf(dataset))))) as unknown as pg.QueryResult<{ head: string }>[];
      return results.at(-1)!.rows[0].head;
    } catch (err) {
      throw this.host.failure(err);
    }
  }

  /** Sequences what is pending (so that it does not pile up while nobody reads), then prunes. */
  async prune(dataset: DatasetConfig, retentionMs: number): Promise<number> {
    const dbSchema = databaseSchemaOf(dataset);
    const { text, values } = pruneSql(dbSchema, retentionMs);
    try {
      const client = await this.host.pool(dataset).connect();
      let failure: unknown;
      try {
        await client.query(numberSql(dbSchema));
        const result = await client.query<{ pruned: number }>(text, values);
        return result.rows[0]?.pruned ?? 0;
      } catch (err) {
        failure = err;
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      } finally {
        client.release(failure instanceof Error ? failure : undefined);
      }
    } catch (err) {
      throw this.host.failure(err);
    }
  }

  /**
   * A dedicated connection LISTENing on the dataset's channel; on a failure it connects again
   * (and wakes the reader, which may have missed notifications meanwhile).
   */
  async subscribeWakeups(dataset: DatasetConfig, onWake: () => void): Promise<() => Promise<void>> {
    const channel = changeChannel(databaseSchemaOf(dataset));
    let client: pg.Client | undefined;
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    // The connection serves the dataset's reads while it is up (connectionFor).
    const usable = (c: pg.Client) => {
      const set = this.listeners.get(dataset.id) ?? new Set<pg.Client>();
      set.add(c);
      this.listeners.set(dataset.id, set);
    };
    const unusable = (c: pg.Client | undefined) => {
      const set = c && this.listeners.get(dataset.id);
      if (!set) return;
      set.delete(c);
      if (!set.size) this.listeners.delete(dataset.id);
    };
    const connect = async (): Promise<void> => {
      const next = new pg.Client({ connectionString: this.host.connectionUrl(dataset), types: recordTypes, application_name: 'data-access-listen' });
      next.on('notification', (msg) => {
        if (msg.channel === channel) onWake();
      });
      next.on('error', (err) => {
        if (stopped || client !== next) return;
        this.host.logger.warn({ dataset: dataset.id, err: err.message }, 'change feed LISTEN connection failed; connecting again');
        retry();
      });
      client = next;
      await next.connect();
      await next.query(`LISTEN "${channel}"`);
      if (stopped) await next.end().catch(() => undefined);
      else if (client === next) usable(next);
    };
    const retry = () => {
      const failed = client;
      client = undefined;
      unusable(failed);
      void failed?.end().catch(() => undefined);
      if (stopped) return;
      timer = setTimeout(() => {
        connect().then(onWake, () => retry());
      }, RELISTEN_MS);
      timer.unref();
    };
    try {
      await connect();
    } catch (err) {
      const held = client;
      client = undefined;
      unusable(held);
      await held?.end().catch(() => undefined);
      throw this.host.failure(err);
    }
    return async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      const held = client;
      client = undefined;
      unusable(held);
      await held?.end().catch(() => undefined);
    };
  }
}
