/**
 * Reading the PostgreSQL change log (change-log.ts): pages of changes in sequence (= commit)
 * order with each change's record image joined from the history table, the LISTEN wake-ups, and
 * pruning past the retention.
 */
import pg from 'pg';
import type { Logger } from 'pino';
import type { DatasetConfig } from '../../../../model/types.js';
import { StoreError, type ChangeBatch, type ChangeFeed, type ChangeOp, type RecordChange, type StoredRecord } from '../../engine/contract.js';
import { withConnection } from './checkout.js';
import { changeChannel, headSql, imagesAfterSql, numberAndReadSql, numberSql, parseCursor, pruneSql } from './change-log.js';
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
   * an error the connection may be inside it, so it is rolled back (on a pool connection: by
   * checkout.ts's withConnection).
   */
  private async withReader<T>(dataset: DatasetConfig, fn: (c: Queryable) => Promise<T>): Promise<T> {
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
    return withConnection(this.host.pool(dataset), fn);
  }

  async readChanges(dataset: DatasetConfig, after: string, limit: number): Promise<ChangeBatch> {
    const from = parseCursor(after);
    if (from === undefined) throw new StoreError({ kind: 'invalid-query', detail: `"${after.slice(0, 40)}" is not a cursor of this dataset's changes` });
    const dbSchema = databaseSchemaOf(dataset);
    // Numbering, the page, the pruned mark and every schema's record images: one round trip.
    const layouts = Object.keys(dataset.schemas).flatMap((name) => {
      const layout = this.host.layoutOf(dataset, name);
      return layout ? [layout] : [];
    });
    const text = [numberAndReadSql(dbSchema, from, limit), ...layouts.map((layout) => imagesAfterSql(layout, from, limit))].join('; ');
    try {
      return await this.withReader(dataset, async (conn) => {
        const results = (await conn.query({ text, rowMode: 'array' })) as unknown as pg.QueryResult<unknown[]>[];
        const first = results.length - layouts.length;
        const pruned = results[first - 2].rows[0] as [string] | undefined;
        if (from < BigInt(pruned?.[0] ?? '0')) return { changes: [], expired: true };
        const changes: RecordChange[] = (results[first - 1].rows as [string, string, string, number, ChangeOp, Date | string, string | null][]).map(([cursor, schema, id, version, op, committedAt, traceparent]) => ({
          cursor,
          schema,
          id,
          version,
          op,
          committedAt: committedAt instanceof Date ? committedAt.toISOString() : String(committedAt),
          ...(traceparent ? { writeTrace: { traceparent } } : {}),
        }));
        const images = new Map<string, StoredRecord>();
        layouts.forEach((layout, i) => {
          for (const row of results[first + i].rows) {
            const record = this.host.toRecord(layout, row);
            images.set(`${layout.schemaName}:${record.version}:${record.id}`, record);
          }
        });
        for (const c of changes) {
          if (c.op === 'DELETE') {
            c.previous = images.get(`${c.schema}:${c.version - 1}:${c.id}`);
            c.record = { id: c.id, version: c.version, data: {}, updatedAt: c.committedAt, deleted: true };
          } else c.record = images.get(`${c.schema}:${c.version}:${c.id}`);
        }
        return { changes, expired: false };
      });
    } catch (err) {
      throw this.host.failure(err);
    }
  }

  async head(dataset: DatasetConfig): Promise<string> {
    try {
      const results = (await this.withReader(dataset, (conn) => conn.query(headSql(databaseSchemaOf(dataset))))) as unknown as pg.QueryResult<{ head: string }>[];
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
      return await withConnection(this.host.pool(dataset), async (client) => {
        await client.query(numberSql(dbSchema));
        const result = await client.query<{ pruned: number }>(text, values);
        return result.rows[0]?.pruned ?? 0;
      });
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
