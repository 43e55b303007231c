/** The PostgreSQL location driver. */
import { DATAPLANE_DEFAULTS, type DataPlaneSettings } from '../../../../model/settings/dataplane.js';
import pg from 'pg';
import type { Logger } from 'pino';
import type { DatasetConfig } from '../../../../model/types.js';
import { ddlLockKey, inTransaction, withConnection } from './checkout.js';
import { outageOf } from './outage.js';
import { schemaDefOf } from '../../engine/layout.js';
import {
  StoreError,
  type DriverCapabilities,
  type ListQuery,
  type LocationDriver,
  type OpResult,
  type PrepareReport,
  type RawQuery,
  type RawQueryOptions,
  type RecordKey,
  type StatementContext,
  type StoreFailure,
  type StoredRecord,
  type WriteLevel,
  type WriteOp,
} from '../../engine/contract.js';
import { listSql } from './list-sql.js';
import { postgresSqlDialect } from './dialect.js';
import { quoteIdent as q } from '../../engine/sql/naming.js';
import { ConnectionUrls, POOL_RETIRE_CHECK_MS, SecretNotMountedError } from './connection.js';
import { planSchemaChanges } from './ddl.js';
import {
  DELETED_AT_INDEX,
  deleteSql,
  insertSql,
  selectByIdSql,
  selectManySql,
  tableLayout,
  updateSql,
  type Statement,
  type TableLayout,
  type WriteSqlOptions,
} from './sql.js';
import { PreparedRead } from './prepared-read.js';
import { appendChanges, CHANGES_TABLE, changeLogDdl, dropChangeLogSql, POSITION_COLUMN, POSITION_INDEX, TRACE_COLUMN, type ChangeRow } from './change-log.js';
import { PostgresChangeFeed } from './change-feed.js';
import { LayoutCache } from './layout-cache.js';
import { recordTypes } from './types.js';
import { applicationName, tagComment } from './tags.js';
import { PostgresBulkLoad } from './bulk-load.js';
import { ownershipSql, PostgresOwnership } from './ownership.js';

export interface PostgresDriverOptions {
  logger: Logger;
  poolSize?: number;
  /** The process settings (default: every default). */
  settings?: DataPlaneSettings;
  /** Read-only executor for the raw SQL endpoint (wired in when available). */
  readOnly?: {
    query(dataset: DatasetConfig, pool: pg.Pool, query: RawQuery, options: RawQueryOptions): Promise<Record<string, unknown>[]>;
    prepare?(dataset: DatasetConfig, pool: pg.Pool): Promise<void>;
    /** The dataset is gone: its read-only role must not log in any more. */
    retire?(dataset: DatasetConfig, pool: pg.Pool): Promise<void>;
    close(): Promise<void>;
  };
}

type Queryable = Pick<pg.PoolClient, 'query'>;

/** What the PostgreSQL driver offers; raw SQL needs its read-only executor. */
export function postgresCapabilities(options: { rawSql: boolean }): DriverCapabilities {
  return {
    consistency: ['ATOMIC_ALL', 'ATOMIC', 'QUORUM', 'EVENTUAL'],
    list: true,
    sortable: 'any', // a property marked sortable gets an index; others sort by a scan
    orderedWithoutSort: true,
    rawSql: options.rawSql,
    changeFeed: true, // change-log.ts: a changes table written with every record, NOTIFY as the wake-up
    bulkLoad: true, // bulk-load.ts
    // A btree row is at most 2704 bytes: the value and the id (sort indexes: indexes.ts) and the row's headers.
    indexedKeyBytes: 2600,
  };
}

export class PostgresDriver implements LocationDriver {
  readonly kind = 'postgres' as const;
  readonly capabilities: DriverCapabilities;
  readonly ownership = new PostgresOwnership((dataset) => this.pool(dataset));
  readonly rawSqlDialect = postgresSqlDialect;
  private readonly pools = new Map<string, pg.Pool>();
  /** Per dataset, the layouts of the config generation seen last (layout-cache.ts). */
  readonly layouts = new LayoutCache();
  private closing = false;
  /** Datasets' URLs, a Secret file re-read every few seconds (rotation without a restart). */
  private readonly urls: ConnectionUrls;
  /** The pool key each dataset used last: a key no dataset uses any more is retired. */
  private readonly keyOf = new Map<string, string>();
  private retiredCount = 0;
  /** Subscriptions' change feed (change-log.ts, change-feed.ts). */
  readonly changes: PostgresChangeFeed;
  /** Transactions (bulk loads): their table and the chunk writer (bulk-load.ts). */
  readonly bulkLoad: PostgresBulkLoad;

  constructor(private readonly options: PostgresDriverOptions) {
    const settings = options.settings ?? DATAPLANE_DEFAULTS;
    this.urls = new ConnectionUrls(settings);
    this.capabilities = postgresCapabilities({ rawSql: Boolean(options.readOnly) });
    this.changes = new PostgresChangeFeed({
      pool: (dataset) => this.pool(dataset),
      layoutOf: (dataset, schema) => (schemaDefOf(dataset, schema) ? this.layout(dataset, schema) : undefined),
      connectionUrl: (dataset) => this.urls.urlFor(dataset),
      toRecord,
      failure: requestFailure,
      logger: options.logger,
    });
    this.bulkLoad = new PostgresBulkLoad(
      (dataset) => this.pool(dataset),
      (dataset, schema) => this.layout(dataset, schema),
      settings.DAS_BULK_WRITERS,
    );
  }

  pool(dataset: DatasetConfig): pg.Pool {
    const url = this.urls.urlFor(dataset);
    const key = url ?? '';
    const previous = this.keyOf.get(dataset.id);
    if (previous !== key) {
      this.keyOf.set(dataset.id, key);
      if (previous !== undefined) this.retireUnused(previous);
    }
    let pool = this.pools.get(key);
    if (!pool) {
      pool = new pg.Pool({ connectionString: url, max: this.options.poolSize ?? 10, types: recordTypes, application_name: 'data-access' });
      // pool.end() resolves before the sockets have closed; a server stopping right after (the
      // embedded one at shutdown) then ends them, which is no failure worth a warning.
      pool.on('error', (err) => {
        if (!this.closing) this.options.logger.warn({ err: err.message }, 'idle PostgreSQL connection failed');
      });
      this.pools.set(key, pool);
    }
    return pool;
  }

  /**
   * A dataset's URL changed (its Secret was rotated): once no dataset uses the old URL, its pool
   * gets no new work and is ended as soon as none of its connections is out, so statements under
   * way finish on it. Until then it stays in `pools` under a key no URL has, so close() ends it too.
   */
  private retireUnused(key: string): void {
    if ([...this.keyOf.values()].includes(key)) return;
    const pool = this.pools.get(key);
    if (!pool) return;
    const parked = `\0retired\0${++this.retiredCount}`;
    this.pools.delete(key);
    this.pools.set(parked, pool);
    const timer = setInterval(() => {
      if (this.closing || this.pools.get(parked) !== pool) return clearInterval(timer);
      if (pool.totalCount > pool.idleCount || pool.waitingCount > 0) return;
      clearInterval(timer);
      this.pools.delete(parked);
      void pool.end().catch(() => undefined);
    }, POOL_RETIRE_CHECK_MS);
    timer.unref();
  }

  private layout(dataset: DatasetConfig, schemaName: string): TableLayout {
    return this.layouts.get(dataset, schemaName, () => {
      const schema = schemaDefOf(dataset, schemaName);
      // The engine checks schema names before it calls a driver: this is a broken invariant.
      if (!schema) throw new Error(`dataset "${dataset.id}" has no schema "${schemaName}"`);
      return tableLayout(dataset, schemaName, schema);
    });
  }

  async prepare(dataset: DatasetConfig): Promise<PrepareReport> {
    try {
      return await this.prepareStorage(dataset);
    } catch (err) {
      throw outageOf(err) ?? err;
    }
  }

  /** Cheap reachability check of the dataset's store (readiness). */
  async ping(dataset: DatasetConfig): Promise<void> {
    try {
      await this.pool(dataset).query('SELECT 1');
    } catch (err) {
      throw requestFailure(err);
    }
  }

  private async prepareStorage(dataset: DatasetConfig): Promise<PrepareReport> {
    // The lock serialises DDL between data-plane replicas starting at once; a refused plan rolls back.
    const report = await inTransaction(this.pool(dataset), { lockKey: ddlLockKey(dataset.id), commit: (r: PrepareReport) => !r.refused.length }, async (client) => {
      const layouts = Object.entries(dataset.schemas).map(([name, schema]) => tableLayout(dataset, name, schema));
      const existing = await client.query<{ table_name: string; column_name: string; data_type: string }>(
        'SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_schema = $1',
        [layouts[0]?.dbSchema],
      );
      const indexes = await client.query<{ indexname: string }>('SELECT indexname FROM pg_indexes WHERE schemaname = $1', [layouts[0]?.dbSchema]);
      const plan = planSchemaChanges(layouts, existing.rows, indexes.rows.map((r) => r.indexname));
      if (plan.refused.length) return { applied: [], refused: plan.refused };
      // The change log, once per database schema and again for a log that predates its current
      // indexes (its DDL is idempotent).
      const logColumn = (column: string) => existing.rows.some((r) => r.table_name === CHANGES_TABLE && r.column_name === column);
      const logCurrent = logColumn(POSITION_COLUMN) && logColumn(TRACE_COLUMN) && indexes.rows.some((r) => r.indexname === POSITION_INDEX);
      if (layouts[0] && !logCurrent) plan.statements.push(...changeLogDdl(layouts[0].dbSchema));
      for (const statement of plan.statements) await client.query(statement);
      return { applied: plan.statements, refused: [] };
    });
    if (!report.refused.length) await this.options.readOnly?.prepare?.(dataset, this.pool(dataset));
    return report;
  }

  async purge(dataset: DatasetConfig): Promise<string[]> {
    const pool = this.pool(dataset);
    const dropped: string[] = [];
    await inTransaction(pool, { lockKey: ddlLockKey(dataset.id) }, async (client) => {
      const layouts = Object.entries(dataset.schemas).map(([name, schema]) => tableLayout(dataset, name, schema));
      for (const layout of layouts) {
        for (const table of [layout.table, layout.history]) {
          await client.query(`DROP TABLE IF EXISTS ${table}`);
          dropped.push(table);
        }
      }
      await client.query(this.bulkLoad.dropSql(dataset));
      const dbSchema = layouts[0]?.dbSchema;
      if (dbSchema) await client.query(ownershipSql(dbSchema).drop);
      for (const statement of dbSchema ? dropChangeLogSql(dbSchema) : []) {
        await client.query(statement);
        dropped.push(statement.replace('DROP TABLE IF EXISTS ', ''));
      }
      // The schema goes too when nothing else lives in it (never `public`, never someone else's objects).
      if (dbSchema && dbSchema !== 'public') {
        const left = await client.query('SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 LIMIT 1', [dbSchema]);
        if (!left.rowCount) {
          await client.query(`DROP SCHEMA IF EXISTS ${q(dbSchema)}`);
          dropped.push(q(dbSchema));
        }
      }
    });
    this.layouts.forget(dataset.id);
    this.bulkLoad.forget(dataset);
    await this.options.readOnly?.retire?.(dataset, pool);
    return dropped;
  }

  /**
   * Never throws: every failure is the promise's. The read is one `then` on the statement's
   * promise, not an async frame of its own (a promise, a suspended frame and its closures per read).
   */
  read(dataset: DatasetConfig, { schema, id, version }: RecordKey, ctx?: StatementContext): Promise<StoredRecord | undefined> {
    let layout: TableLayout;
    let rows: Promise<unknown[][]>;
    try {
      layout = this.layout(dataset, schema);
      rows = this.selectById(dataset, layout, id, version, ctx);
    } catch (err) {
      return Promise.reject(err);
    }
    return rows.then(
      (found) => recordOf(layout, found[0], version),
      (err: unknown) => {
        throw requestFailure(err);
      },
    );
  }

  /** The row(s) of a read by id; what the store refuses at once is already a request failure. */
  private selectById(dataset: DatasetConfig, layout: TableLayout, id: string, version: number | undefined, ctx: StatementContext | undefined): Promise<unknown[][]> {
    const { statement, values } = selectByIdSql(layout, id, version);
    const comment = tagComment(ctx);
    try {
      // Untagged (the common read): the prepared statement, its columns known from the layout.
      return comment
        ? this.runWithComment(this.pool(dataset), { text: statement.text, values }, comment, ctx!).then((result) => result.rows)
        : PreparedRead.run(this.pool(dataset), statement, values);
    } catch (err) {
      throw requestFailure(err);
    }
  }

  async readMany(dataset: DatasetConfig, schema: string, ids: string[], ctx?: StatementContext): Promise<StoredRecord[]> {
    if (!ids.length) return [];
    const layout = this.layout(dataset, schema);
    try {
      const result = await this.run(this.pool(dataset), selectManySql(layout, ids), ctx);
      return result.rows.map((row) => toRecord(layout, row));
    } catch (err) {
      throw requestFailure(err);
    }
  }

  /** A list page: one SELECT with the filter, keyset and sort in SQL (list-sql.ts). */
  async list(dataset: DatasetConfig, schema: string, query: ListQuery, ctx?: StatementContext): Promise<StoredRecord[]> {
    const layout = this.layout(dataset, schema);
    try {
      const result = await this.run(this.pool(dataset), listSql(layout, query), ctx);
      return result.rows.map((row) => toRecord(layout, row));
    } catch (err) {
      // Class 22 (data exception): a filter value the column type cannot hold, e.g. year 0 or a version beyond 2^31.
      if (/^22/.test((err as { code?: string }).code ?? '')) {
        throw new StoreError({ kind: 'invalid-query', detail: `a value in the filter or nextToken is out of range for its property (${(err as Error).message})` });
      }
      throw requestFailure(err);
    }
  }

  async write(dataset: DatasetConfig, ops: WriteOp[], consistency: WriteLevel, ctx?: StatementContext): Promise<OpResult[]> {
    let pool: pg.Pool;
    try {
      pool = this.pool(dataset);
    } catch (err) {
      throw requestFailure(err);
    }
    const layouts = ops.map((op) => this.layout(dataset, op.schema));
    if (consistency === 'ATOMIC' || consistency === 'ATOMIC_ALL') {
      try {
        return await this.writeAtomically(pool, ops, layouts, ctx);
      } catch (err) {
        throw requestFailure(err);
      }
    }
    const results: OpResult[] = [];
    // Each action is one statement, its own transaction; EVENTUAL: committed without waiting for the WAL flush.
    const options = { changeLog: true, unflushed: consistency === 'EVENTUAL' };
    for (const [i, op] of ops.entries()) {
      try {
        results.push(await this.apply(pool, op, layouts[i], ctx, options));
      } catch (err) {
        results.push({ ok: false, failure: failureOf(err, op) });
      }
    }
    return results;
  }

  private async writeAtomically(pool: pg.Pool, ops: WriteOp[], layouts: TableLayout[], ctx?: StatementContext): Promise<OpResult[]> {
    if (ops.length === 1) return [await this.writeOneAtomically(pool, ops[0], layouts[0], ctx)];
    // An action refused rolls the whole transaction back: nothing is committed unless every action is.
    let refused = false;
    return inTransaction(pool, { commit: () => !refused }, async (client) => {
      const results: OpResult[] = [];
      for (const [i, op] of ops.entries()) {
        let outcome: OpResult;
        try {
          outcome = await this.apply(client, op, layouts[i], ctx, { changeLog: false });
        } catch (err) {
          // The store went away mid-transaction: nothing was committed; the whole request is a 503.
          if (outageOf(err)) throw err;
          outcome = { ok: false, failure: failureOf(err, op) };
        }
        if (!outcome.ok) {
          // A refused action (a statement error, or an update/delete that matched no row: apply() returns
          // not-found without throwing) undoes the whole transaction: inTransaction rolls back.
          refused = true;
          const failed = outcome.failure;
          return ops.map((_, j) => ({ ok: false as const, failure: j === i ? failed : ({ kind: 'aborted' } as const) }));
        }
        results.push(outcome);
      }
      // The changes go last, after every record write (change-log.ts: how they are ordered).
      const changed: ChangeRow[] = results.flatMap((r, i) => (r.ok ? [{ schema: ops[i].schema, id: r.record.id, version: r.record.version, op: CHANGE_OP[ops[i].op] }] : []));
      if (layouts[0]) await appendChanges(client, layouts[0].dbSchema, changed);
      return results;
    });
  }

  /**
   * One action, atomically: its statement writes the record, its history row and its change (the
   * change log's append rides in the same statement), and a single statement is its own
   * transaction, all or nothing. So no BEGIN and COMMIT: one round trip instead of four, at the
   * server's synchronous_commit as an explicit transaction commits. A refusal (a statement error,
   * nothing matched) wrote nothing; an outage is the whole request's 503, as in a transaction.
   */
  private async writeOneAtomically(pool: pg.Pool, op: WriteOp, layout: TableLayout, ctx?: StatementContext): Promise<OpResult> {
    try {
      return await this.apply(pool, op, layout, ctx);
    } catch (err) {
      if (outageOf(err)) throw err;
      return { ok: false, failure: failureOf(err, op) };
    }
  }

  /** One action's statement; `changeLog` false inside an atomic transaction, which appends the changes at the end. */
  private async apply(client: Queryable | pg.Pool, op: WriteOp, layout: TableLayout, ctx?: StatementContext, options: WriteSqlOptions = { changeLog: true }): Promise<OpResult> {
    const statement =
      op.op === 'create' ? insertSql(layout, op.id, op.data, options) : op.op === 'update' ? updateSql(layout, op.id, op.data, op.merge, options) : deleteSql(layout, op.id, options);
    const result = await this.run(client, statement, ctx);
    const row = result.rows[0];
    if (!row) return { ok: false, failure: { kind: 'not-found', schema: op.schema, id: op.id } };
    return { ok: true, record: toRecord(layout, row), ...(op.op === 'delete' ? { deleted: true } : {}) };
  }

  async rawQuery(dataset: DatasetConfig, query: RawQuery, options: RawQueryOptions): Promise<Record<string, unknown>[]> {
    // capabilities.rawSql is false without it, so the engine never asks.
    if (!this.options.readOnly) throw new Error('this PostgreSQL driver has no read-only executor');
    let pool: pg.Pool;
    try {
      pool = this.pool(dataset);
    } catch (err) {
      throw requestFailure(err);
    }
    return this.options.readOnly.query(dataset, pool, query, options);
  }

  /**
   * Runs a statement, its rows as arrays in column order. With tags, the statement carries them as
   * a SQL comment and the session's application_name names them. Not async itself: the untagged
   * statement (the common case) hands back pg's own promise.
   */
  private run(client: Queryable | pg.Pool, statement: Statement, ctx?: StatementContext): Promise<pg.QueryArrayResult> {
    const comment = tagComment(ctx);
    if (!comment) return client.query({ text: statement.text, values: statement.values, rowMode: 'array' });
    return this.runWithComment(client, statement, comment, ctx!);
  }

  private async runWithComment(client: Queryable | pg.Pool, statement: Statement, comment: string, ctx: StatementContext): Promise<pg.QueryArrayResult> {
    // Tagging sets the session's application_name around the statement: both on one connection.
    if (client instanceof pg.Pool) return withConnection(client, (held) => this.runTagged(held, statement, comment, ctx));
    return this.runTagged(client, statement, comment, ctx);
  }

  private async runTagged(client: Queryable, statement: Statement, comment: string, ctx: StatementContext): Promise<pg.QueryArrayResult> {
    await client.query("SELECT set_config('application_name', $1, false)", [applicationName(ctx)]);
    try {
      return await client.query({ text: `${comment}${statement.text}`, values: statement.values, rowMode: 'array' });
    } finally {
      // In a failed transaction this fails too, and the rollback restores the setting.
      await client.query("SELECT set_config('application_name', 'data-access', false)").catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.options.readOnly?.close();
    await Promise.all([...this.pools.values()].map((pool) => pool.end()));
    this.pools.clear();
  }
}

const CHANGE_OP = { create: 'CREATE', update: 'UPDATE', delete: 'DELETE' } as const;

/**
 * What a request meets when the store cannot serve it: an outage, or a connection Secret that is
 * not (or no longer) mounted — both 503s that a retry can get past (the kubelet mounts the file).
 */
function requestFailure(err: unknown): unknown {
  if (err instanceof SecretNotMountedError) return new StoreError({ kind: 'unavailable', detail: err.message });
  return outageOf(err) ?? err;
}

/** A read's row as a record: none, a version's tombstone (sql.ts deleteSql: reported, never shown as data), or the record. */
function recordOf(layout: TableLayout, row: unknown[] | undefined, version: number | undefined): StoredRecord | undefined {
  if (!row) return undefined;
  if (version !== undefined && row[DELETED_AT_INDEX(layout)] != null) return { ...toRecord(layout, row), deleted: true };
  return toRecord(layout, row);
}

/** A row (every statement returns the layout's columns, in order) as a stored record. */
export function toRecord(layout: TableLayout, row: readonly unknown[]): StoredRecord {
  return layout.shapeRow(row);
}

/** What a failed write statement means, in the store's terms; anything unforeseen is rethrown (a 500). */
export function failureOf(err: unknown, op: WriteOp): StoreFailure {
  if (err instanceof StoreError) return err.failure;
  const outage = outageOf(err);
  if (outage) return outage.failure;
  const code = (err as { code?: string }).code;
  const invalid = (reason: 'range' | 'datetime' | 'form' | 'text'): StoreFailure => ({ kind: 'invalid-value', reason, schema: op.schema });
  switch (code) {
    case '23505':
      return { kind: 'exists', schema: op.schema, id: op.id };
    case '22003':
      return invalid('range');
    case '22007':
    case '22008':
      return invalid('datetime');
    case '22P02':
      return invalid('form');
    case '22021':
      return invalid('text');
    case '54000': // "index row requires … bytes" / "index row size … exceeds": the pre-check's safety net
      return { kind: 'too-large', schema: op.schema, id: op.id, detail: 'a sortable (indexed) value is longer than PostgreSQL indexes (about 2,700 bytes with the id)' };
    case '42P01':
    case '42703':
      return { kind: 'not-prepared', schema: op.schema };
    default:
      throw err;
  }
}

export { q as quoteIdent };
