/**
 * The warehouse location driver: one class for the two warehouse kinds, `snowflake` and
 * `iceberg`, which differ by their table format (table-format.ts), never by tests of the kind's
 * name. Sessions come from per-(login, warehouse, role) pools (sessions.ts); statements are pure
 * (layout.ts, write-sql.ts, list-sql.ts, ddl.ts); a write is planned in JS from the current rows
 * (write-plan.ts) because the warehouse returns no rows from a write. docs/warehouse.md has the
 * statements per consistency level and the round trips they cost.
 */
import type { SqlDialect } from '../../engine/sql/dialect.js';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { kindFacts } from '../../../../model/location-kinds.js';
import type { DatasetConfig } from '../../../../model/types.js';
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
  type StoredRecord,
  type WriteLevel,
  type WriteOp,
} from '../../engine/contract.js';
import { schemaDefOf } from '../../engine/layout.js';
import { quoteIdent as q } from '../../engine/sql/naming.js';
import { databaseSchemaFor } from '../sql/table-shape.js';
import { WarehouseBulkLoad } from './bulk-load.js';
import { transactionsTable } from './bulk-load-sql.js';
import { CredentialFiles } from './credentials.js';
import { DATAPLANE_DEFAULTS, type DataPlaneSettings } from '../../../../model/settings/dataplane.js';
import { WarehouseChangeFeed } from './change-feed.js';
import { appendChangesSql, CHANGES_TABLE, changeLogDdl, dropChangeLogSql, PRUNED_TABLE, type ChangeRow } from './change-log.js';
import { CATALOG_SQL, existingColumn, planSchemaChanges } from './ddl.js';
import { warehouseSqlDialect } from './dialect.js';
import { outageOf, requestError, statementFailure } from './errors.js';
import { WarehouseOwnership, warehouseOwnershipSql } from './ownership.js';
import { selectByIdSql, selectManySql, selectVersionSql, warehouseLayout, type Statement, type WarehouseLayout } from './layout.js';
import { listSql } from './list-sql.js';
import { WarehouseReadOnly, type ReadOnlyOptions } from './readonly.js';
import { Session, SessionPools, type ExecOptions, type ExecResult, type SessionPoolOptions, type SessionTarget } from './sessions.js';
import type { TableFormat } from './table-format.js';
import { plannedRowOf, recordOfRow } from './values.js';
import { currentRowsSql, expectedLiveCounts, historyMergeSql, liveMergeSql, type MergeCounts } from './write-sql.js';
import { planWrite, type CurrentRows, type PlannedRow, type TablePlan } from './write-plan.js';

export interface SnowflakeDriverOptions {
  logger: Logger;
  format: TableFormat;
  /** The process settings (default: every default). */
  settings?: DataPlaneSettings;
  sessions?: SessionPoolOptions;
  readOnly?: ReadOnlyOptions;
}

/** What a warehouse kind offers: the kind's levels (iceberg: no ATOMIC_ALL), SQL lists and raw SQL. */
export function warehouseCapabilities(format: TableFormat): DriverCapabilities {
  return {
    consistency: kindFacts(format.kind).consistency.filter((level): level is WriteLevel => level !== 'ASYNC'),
    list: true,
    sortable: 'any', // no indexes on the warehouse: every sort is a scan
    orderedWithoutSort: false, // the spec: unordered without a sort (pages still go by id internally)
    rawSql: true,
    changeFeed: true, // change-log.ts: a change table written with the records, polled only while someone subscribes
    bulkLoad: true, // bulk-load.ts
  };
}

/** How many times a write whose rows a concurrent writer changed is planned again. */
const WRITE_ATTEMPTS = 3;
/** Snowflake's QUERY_TAG holds at most 2000 characters. */
const MAX_QUERY_TAG = 2000;

type Counts = Partial<MergeCounts>;

/** How a write sends its statements (on the session it holds). */
type Run = (statement: Statement | string, extra?: ExecOptions) => Promise<ExecResult>;

/** Whether the row read back is the one planned (timestamps compared as instants: the warehouse answers them in UTC). */
export function sameRow(layout: WarehouseLayout, planned: PlannedRow, stored: PlannedRow | undefined): boolean {
  if (!stored || stored.version !== planned.version) return false;
  const instant = (v: unknown) => (v === null || v === undefined ? null : Date.parse(String(v)));
  if (instant(stored.updatedAt) !== instant(planned.updatedAt) || instant(stored.createdAt) !== instant(planned.createdAt)) return false;
  return layout.fields.every((field, i) => {
    const [a, b] = [planned.values[i] ?? null, stored.values[i] ?? null];
    return field.type === 'timestamp' ? instant(a) === instant(b) : a === b;
  });
}

export class SnowflakeDriver implements LocationDriver {
  readonly kind: TableFormat['kind'];
  readonly capabilities: DriverCapabilities;
  readonly ownership = new WarehouseOwnership(
    (dataset, fn) => this.withSession(dataset, undefined, fn),
    (dataset) => databaseSchemaFor(dataset, warehouseSqlDialect(this.format)),
  );
  readonly rawSqlDialect: SqlDialect;
  private readonly format: TableFormat;
  private readonly credentials: CredentialFiles;
  readonly sessions: SessionPools;
  private readonly readOnly: WarehouseReadOnly;
  private readonly layouts = new Map<string, { generation: number; layouts: Map<string, WarehouseLayout> }>();
  /** Bulk loads (transactions): the transactions table and the chunk writer, on this driver's sessions. */
  readonly bulkLoad = new WarehouseBulkLoad({
    format: () => this.format,
    layout: (d, s) => this.layout(d, s),
    withSession: (d, ctx, fn) => this.withSession(d, ctx, fn),
    idleClaimMs: () => this.settings.DAS_BULK_WAREHOUSE_POLL_MS,
    wrote: (d) => this.changes.wrote(d),
  });
  /** The change feed: the change table, polled while someone subscribes (change-feed.ts). */
  readonly changes: WarehouseChangeFeed;

  private get settings(): DataPlaneSettings {
    return this.options.settings ?? DATAPLANE_DEFAULTS;
  }

  constructor(private readonly options: SnowflakeDriverOptions) {
    this.format = options.format;
    this.rawSqlDialect = warehouseSqlDialect(options.format);
    this.kind = options.format.kind;
    this.capabilities = warehouseCapabilities(options.format);
    this.credentials = new CredentialFiles(this.settings);
    this.sessions = new SessionPools(options.sessions);
    this.readOnly = new WarehouseReadOnly(options.readOnly);
    this.changes = new WarehouseChangeFeed(
      {
        // Sessions of its own: a poll never queues behind writes that fill the pool.
        withSession: (dataset, fn) => this.withSession(dataset, { pool: 'change-feed' }, fn),
        layoutOf: (dataset, schema) => (schemaDefOf(dataset, schema) ? this.layout(dataset, schema) : undefined),
        dbSchema: (dataset) => databaseSchemaFor(dataset, warehouseSqlDialect(this.format)),
        failure: (err) => outageOf(err) ?? err,
      },
      this.settings.DAS_WAREHOUSE_CHANGE_POLL_MS,
    );
  }

  /** Appends the changes of the ops written (action order), inside the write's BEGIN … COMMIT (the request's or the table's). */
  private async appendChanges(run: Run, dataset: DatasetConfig, write: { tx: string; at: string }, ops: readonly WriteOp[], results: readonly OpResult[], indexes: Iterable<number>): Promise<void> {
    const rows: ChangeRow[] = [];
    for (const i of indexes) {
      const result = results[i];
      if (!result.ok) continue;
      const op = ops[i];
      rows.push({ n: i, schema: op.schema, id: op.id, version: result.record.version, op: op.op === 'create' ? 'CREATE' : op.op === 'update' ? 'UPDATE' : 'DELETE' });
    }
    if (!rows.length) return;
    await run(appendChangesSql(databaseSchemaFor(dataset, warehouseSqlDialect(this.format)), write.tx, write.at, rows));
    this.changes.wrote(dataset);
  }

  private layout(dataset: DatasetConfig, schemaName: string): WarehouseLayout {
    let entry = this.layouts.get(dataset.id);
    if (!entry || entry.generation !== dataset.generation) this.layouts.set(dataset.id, (entry = { generation: dataset.generation, layouts: new Map() }));
    let layout = entry.layouts.get(schemaName);
    if (!layout) {
      const schema = schemaDefOf(dataset, schemaName);
      // The engine checks schema names before it calls a driver: this is a broken invariant.
      if (!schema) throw new Error(`dataset "${dataset.id}" has no schema "${schemaName}"`);
      layout = warehouseLayout(dataset, schemaName, schema, this.format);
      entry.layouts.set(schemaName, layout);
    }
    return layout;
  }

  /** Where a session goes: the dataset's settings, the executor's warehouse, and a role. */
  private target(dataset: DatasetConfig, warehouse?: string, role?: string): SessionTarget {
    const { account, accessUrl, database } = dataset.location;
    return {
      account,
      accessUrl,
      database,
      schema: databaseSchemaFor(dataset, warehouseSqlDialect(this.format)),
      warehouse: warehouse ?? dataset.location.warehouse,
      role: role ?? dataset.location.role,
    };
  }

  private withSession<T>(dataset: DatasetConfig, ctx: { warehouse?: string; role?: string; pool?: string } | undefined, fn: (session: Session) => Promise<T>): Promise<T> {
    const credentials = this.credentials.credentialsFor(dataset);
    return this.sessions.with({ ...this.target(dataset, ctx?.warehouse, ctx?.role), ...(ctx?.pool ? { pool: ctx.pool } : {}) }, credentials, fn);
  }

  /** Per-statement parameters: the request's tags as QUERY_TAG (no extra round trip). */
  private parameters(ctx?: StatementContext): Record<string, unknown> | undefined {
    if (!ctx?.tags) return undefined;
    return { QUERY_TAG: JSON.stringify(ctx.tags).slice(0, MAX_QUERY_TAG) };
  }

  private exec(session: Session, statement: Statement | string, ctx?: StatementContext, extra: ExecOptions = {}) {
    const { text, binds } = typeof statement === 'string' ? { text: statement, binds: [] } : statement;
    return session.exec(text, { binds, parameters: this.parameters(ctx), ...extra });
  }

  async prepare(dataset: DatasetConfig): Promise<PrepareReport> {
    const layouts = Object.entries(dataset.schemas).map(([name, schema]) => warehouseLayout(dataset, name, schema, this.format));
    if (!layouts.length) return { applied: [], refused: [] };
    try {
      return await this.withSession(dataset, undefined, async (session) => {
        const dbSchema = layouts[0].dbSchema;
        await session.exec(`CREATE SCHEMA IF NOT EXISTS ${q(dbSchema)}`);
        for (let attempt = 1; ; attempt++) {
          const { rows } = await session.exec(CATALOG_SQL, { binds: [dbSchema], rowMode: 'object' });
          const existing = (rows as Record<string, unknown>[]).map(existingColumn);
          const plan = planSchemaChanges(dataset, layouts, existing);
          if (plan.refused.length) return { applied: [], refused: plan.refused };
          // The change log, when either of its tables is missing.
          const tables = new Set(existing.map((c) => c.table_name));
          const changeLog = tables.has(CHANGES_TABLE) && tables.has(PRUNED_TABLE) ? [] : changeLogDdl(dbSchema);
          try {
            // The schema exists by now; the rest in order (tables, then columns).
            for (const statement of [...plan.statements.slice(1), ...changeLog]) await session.exec(statement);
            return { applied: [...plan.statements, ...changeLog], refused: [] };
          } catch (err) {
            // Another replica preparing at once may have added the column first (the warehouse has
            // no advisory locks): read the catalog again and plan again (a few times).
            if (attempt >= 3 || outageOf(err)) throw err;
          }
        }
      });
    } catch (err) {
      throw outageOf(err) ?? err;
    }
  }

  async ping(dataset: DatasetConfig): Promise<void> {
    try {
      await this.withSession(dataset, undefined, (session) => session.exec('SELECT 1'));
    } catch (err) {
      throw outageOf(err) ?? err;
    }
  }

  async purge(dataset: DatasetConfig): Promise<string[]> {
    const layouts = Object.entries(dataset.schemas).map(([name, schema]) => warehouseLayout(dataset, name, schema, this.format));
    const dropped: string[] = [];
    try {
      await this.withSession(dataset, undefined, async (session) => {
        for (const layout of layouts) {
          for (const table of [layout.table, layout.history]) {
            await session.exec(`DROP TABLE IF EXISTS ${table}`);
            dropped.push(table);
          }
        }
        // The bulk loads' bookkeeping belongs to the dataset's data too.
        const transactions = transactionsTable(databaseSchemaFor(dataset, warehouseSqlDialect(this.format)));
        await session.exec(`DROP TABLE IF EXISTS ${transactions}`);
        dropped.push(transactions);
        await session.exec(warehouseOwnershipSql(databaseSchemaFor(dataset, warehouseSqlDialect(this.format))).drop);
        for (const statement of dropChangeLogSql(databaseSchemaFor(dataset, warehouseSqlDialect(this.format)))) {
          await session.exec(statement);
          dropped.push(statement.replace('DROP TABLE IF EXISTS ', ''));
        }
      });
      this.bulkLoad.forget(dataset);
    } catch (err) {
      throw outageOf(err) ?? err;
    }
    // The database schema stays: on the warehouse it is usually the administrators' (grants, other tables).
    this.layouts.delete(dataset.id);
    return dropped;
  }

  private async select(dataset: DatasetConfig, schema: string, statement: Statement, ctx?: StatementContext): Promise<unknown[][]> {
    try {
      return (await this.withSession(dataset, ctx, (session) => this.exec(session, statement, ctx))).rows as unknown[][];
    } catch (err) {
      throw requestError(err, schema);
    }
  }

  async read(dataset: DatasetConfig, { schema, id, version }: RecordKey, ctx?: StatementContext): Promise<StoredRecord | undefined> {
    const layout = this.layout(dataset, schema);
    const rows = await this.select(dataset, schema, version === undefined ? selectByIdSql(layout, id) : selectVersionSql(layout, id, version), ctx);
    const row = rows[0];
    if (!row) return undefined;
    // A version read may meet a delete's tombstone: reported, never shown as data.
    const deleted = version !== undefined && row[layout.columns.length] !== null && row[layout.columns.length] !== undefined;
    return recordOfRow(layout, row, deleted);
  }

  async readMany(dataset: DatasetConfig, schema: string, ids: string[], ctx?: StatementContext): Promise<StoredRecord[]> {
    if (!ids.length) return [];
    const layout = this.layout(dataset, schema);
    const rows = await this.select(dataset, schema, selectManySql(layout, ids), ctx);
    return rows.map((row) => recordOfRow(layout, row));
  }

  async list(dataset: DatasetConfig, schema: string, query: ListQuery, ctx?: StatementContext): Promise<StoredRecord[]> {
    const layout = this.layout(dataset, schema);
    try {
      const { rows } = await this.withSession(dataset, ctx, (session) => this.exec(session, listSql(layout, query), ctx));
      return (rows as unknown[][]).map((row) => recordOfRow(layout, row));
    } catch (err) {
      // A filter or position value the column cannot take (a date out of range, a version beyond NUMBER).
      if (/^100\d{3}$/.test(String((err as { code?: unknown }).code ?? ''))) {
        throw new StoreError({ kind: 'invalid-query', detail: `a value in the filter or nextToken is out of range for its property (${(err as Error).message})` });
      }
      throw requestError(err, schema);
    }
  }

  async write(dataset: DatasetConfig, ops: WriteOp[], consistency: WriteLevel, ctx?: StatementContext): Promise<OpResult[]> {
    if (!ops.length) return [];
    const atomic = consistency === 'ATOMIC' || consistency === 'ATOMIC_ALL';
    try {
      if (atomic && this.format.transactions) return await this.withSession(dataset, ctx, (session) => this.writeInTransaction(session, dataset, ops, ctx));
      return await this.withSession(dataset, ctx, (session) => this.writePerTable(session, dataset, ops, atomic, ctx, WRITE_ATTEMPTS));
    } catch (err) {
      const outage = outageOf(err);
      if (outage && !atomic) return ops.map(() => ({ ok: false as const, failure: outage.failure }));
      throw outage ?? err;
    }
  }

  private heldRun(session: Session, ctx?: StatementContext): Run {
    return (statement, extra) => this.exec(session, statement, ctx, extra);
  }

  /** The current rows of every id the ops touch: one SELECT per schema. */
  private async currentRows(run: Run, dataset: DatasetConfig, ops: readonly WriteOp[]): Promise<Map<string, CurrentRows>> {
    const idsBySchema = new Map<string, Set<string>>();
    for (const op of ops) {
      if (!idsBySchema.has(op.schema)) idsBySchema.set(op.schema, new Set());
      idsBySchema.get(op.schema)!.add(op.id);
    }
    const current = new Map<string, CurrentRows>();
    for (const [schema, ids] of idsBySchema) {
      const layout = this.layout(dataset, schema);
      const { rows } = await run(currentRowsSql(layout, [...ids]));
      const rows_: CurrentRows = { live: new Map(), maxVersion: new Map() };
      for (const raw of rows as unknown[][]) {
        const [source, ...row] = raw;
        if (Number(source) === 0) {
          const planned = plannedRowOf(layout, row);
          rows_.live.set(planned.id, planned);
        } else rows_.maxVersion.set(String(row[0]), Number(row[1]));
      }
      current.set(schema, rows_);
    }
    return current;
  }

  private plan(dataset: DatasetConfig, ops: readonly WriteOp[], current: Map<string, CurrentRows>, atomic: boolean) {
    return planWrite({
      ops,
      current: (schema) => current.get(schema) ?? { live: new Map(), maxVersion: new Map() },
      fields: (schema) => this.layout(dataset, schema).fields,
      atomic,
      now: new Date().toISOString(),
    });
  }

  /** A DML statement's counts (Snowflake answers one row: `number of rows inserted`, … per clause kind). */
  private async dml(run: Run, statement: Statement, ctx?: StatementContext): Promise<Counts> {
    const { rows } = await run(statement, { rowMode: 'object', async: ctx?.background });
    const row = (rows[0] ?? {}) as Record<string, unknown>;
    const count = (name: string) => (row[name] === undefined ? undefined : Number(row[name]));
    return { inserted: count('number of rows inserted'), updated: count('number of rows updated'), deleted: count('number of rows deleted') };
  }

  private static countsMatch(got: Counts, want: MergeCounts): boolean {
    return (got.inserted ?? 0) === want.inserted && (got.updated ?? 0) === want.updated && (got.deleted ?? 0) === want.deleted;
  }

  /**
   * ATOMIC_ALL and ATOMIC on Snowflake tables: BEGIN, the current rows, per table one MERGE of the
   * records and one of the history, COMMIT. Counts that differ from the plan mean a concurrent
   * writer changed a row since the SELECT: ROLLBACK, and plan again (a few times, then `aborted`).
   */
  private async writeInTransaction(session: Session, dataset: DatasetConfig, ops: WriteOp[], ctx?: StatementContext): Promise<OpResult[]> {
    const run = this.heldRun(session, ctx);
    for (let attempt = 1; ; attempt++) {
      await this.exec(session, 'BEGIN', ctx);
      let failingSchema: string | undefined;
      try {
        const plan = this.plan(dataset, ops, await this.currentRows(run, dataset, ops), true);
        let conflict = false;
        for (const [schema, table] of plan.tables) {
          failingSchema = schema;
          const layout = this.layout(dataset, schema);
          if (table.live.length && !SnowflakeDriver.countsMatch(await this.dml(run, liveMergeSql(layout, table.live), ctx), expectedLiveCounts(table.live))) conflict = true;
          else if (table.history.length && (await this.dml(run, historyMergeSql(layout, table.history), ctx)).inserted !== table.history.length) conflict = true;
          if (conflict) break;
        }
        if (!conflict) {
          await this.appendChanges(run, dataset, { tx: randomUUID(), at: new Date().toISOString() }, ops, plan.results, ops.keys());
          await this.exec(session, 'COMMIT', ctx);
          return plan.results;
        }
        await this.exec(session, 'ROLLBACK', ctx);
        this.options.logger.debug({ dataset: dataset.id, attempt }, 'warehouse write met a concurrent change; planning again');
        if (attempt >= WRITE_ATTEMPTS) return ops.map(() => ({ ok: false as const, failure: { kind: 'aborted' as const } }));
      } catch (err) {
        if (outageOf(err)) {
          session.broken = true; // the transaction's fate is the warehouse's: the session is not reused
          throw err;
        }
        await this.exec(session, 'ROLLBACK', ctx).catch(() => (session.broken = true));
        // A value the warehouse refused: the table's first op carries it, the others are aborted.
        const schema = failingSchema ?? ops[0].schema;
        const failure = statementFailure(err, schema);
        const first = ops.findIndex((op) => op.schema === schema);
        return ops.map((_, i) => ({ ok: false as const, failure: i === first ? failure : { kind: 'aborted' as const } }));
      }
    }
  }

  /**
   * Every other write (QUORUM, EVENTUAL, ASYNC's background write; ATOMIC on Iceberg tables): per
   * table one BEGIN … COMMIT of its own holding the MERGE of the records, the one of the history
   * for the ids it wrote, and the table's changes (so a change is never lost to a crash between the
   * record and its change row, and a record's next writer, waiting on the table's lock, comes after
   * both). Tables commit one by one: a failing table does not undo the others. A table whose
   * counts differ from the plan is read again: ids a concurrent writer got to first are planned
   * again (a few times, then `aborted`). At the weaker levels a table whose statement failed has
   * its ops written one by one, so each reports its own outcome.
   */
  private async writePerTable(session: Session, dataset: DatasetConfig, ops: WriteOp[], atomic: boolean, ctx: StatementContext | undefined, attempts: number): Promise<OpResult[]> {
    const run = this.heldRun(session, ctx);
    const current = await this.currentRows(run, dataset, ops);
    const plan = this.plan(dataset, ops, current, atomic);
    const results = plan.results;
    const again: number[] = [];
    // One name and time for the write's changes, appended table by table.
    const write = { tx: randomUUID(), at: new Date().toISOString() };
    // Set when the warehouse stopped answering: this table's outcome is unknown, the tables after it are not written.
    let stopped: OpResult | undefined;
    for (const [schema, table] of plan.tables) {
      const layout = this.layout(dataset, schema);
      if (stopped || session.broken) {
        // (A ROLLBACK that failed left the session unusable too.)
        for (const i of table.ops) if (results[i].ok) results[i] = stopped ?? { ok: false, failure: { kind: 'aborted' } };
        continue;
      }
      try {
        await this.exec(session, 'BEGIN', ctx);
        const unapplied = await this.writeTable(run, dataset, layout, table, ctx);
        await this.appendChanges(run, dataset, write, ops, results, table.ops.filter((i) => !unapplied.has(ops[i].id)));
        await this.exec(session, 'COMMIT', ctx);
        for (const i of table.ops) if (unapplied.has(ops[i].id)) again.push(i);
      } catch (err) {
        const outage = outageOf(err);
        if (outage) {
          session.broken = true; // the transaction's fate is the warehouse's: the session is not reused
          if (atomic) throw err;
          // The tables committed before it keep their results: each action reports its own.
          stopped = { ok: false, failure: outage.failure };
          for (const i of table.ops) if (results[i].ok) results[i] = stopped;
          continue;
        }
        await this.exec(session, 'ROLLBACK', ctx).catch(() => (session.broken = true));
        const tableOps = table.ops.filter((i) => results[i].ok);
        if (!atomic && tableOps.length > 1 && !session.broken) {
          for (const i of tableOps) results[i] = (await this.writePerTable(session, dataset, [ops[i]], false, ctx, 1))[0];
        } else {
          const failure = statementFailure(err, schema);
          tableOps.forEach((i, n) => (results[i] = { ok: false, failure: n === 0 ? failure : { kind: 'aborted' } }));
        }
      }
    }
    if (!again.length) return results;
    again.sort((a, b) => a - b);
    if (attempts <= 1 || stopped || session.broken) {
      for (const i of again) results[i] = { ok: false, failure: { kind: 'aborted' } };
      return results;
    }
    const retried = await this.writePerTable(session, dataset, again.map((i) => ops[i]), atomic, ctx, attempts - 1);
    again.forEach((i, n) => (results[i] = retried[n]));
    return results;
  }

  /** One table's MERGEs; answers the ids whose change a concurrent writer pre-empted (nothing of theirs was written). */
  private async writeTable(run: Run, dataset: DatasetConfig, layout: WarehouseLayout, table: TablePlan, ctx?: StatementContext): Promise<Set<string>> {
    const unapplied = new Set<string>();
    if (table.live.length) {
      const counts = await this.dml(run, liveMergeSql(layout, table.live), ctx);
      if (!SnowflakeDriver.countsMatch(counts, expectedLiveCounts(table.live))) {
        // Which changes landed: an insert or update left exactly its row (its version, time and
        // values: another writer's row differs at least in those), a delete left no row.
        const now = await this.currentRows(run, dataset, table.live.map((c) => ({ op: 'delete' as const, schema: layout.schemaName, id: c.kind === 'delete' ? c.id : c.row.id })));
        const live = now.get(layout.schemaName)?.live ?? new Map();
        for (const change of table.live) {
          const id = change.kind === 'delete' ? change.id : change.row.id;
          const landed = change.kind === 'delete' ? !live.has(id) : sameRow(layout, change.row, live.get(id));
          if (!landed) unapplied.add(id);
        }
      }
    }
    const history = table.history.filter((h) => !unapplied.has(h.row.id));
    // An insert-only MERGE: a version already there (written by a retry) is not written twice.
    if (history.length) await this.dml(run, historyMergeSql(layout, history), ctx);
    return unapplied;
  }

  async rawQuery(dataset: DatasetConfig, query: RawQuery, options: RawQueryOptions): Promise<Record<string, unknown>[]> {
    const role = dataset.location.readOnlyRole ?? 'SERVICE_READONLY';
    return this.readOnly.query(query, options, (fn) => this.withSession(dataset, { warehouse: options.warehouse, role }, fn));
  }

  async close(): Promise<void> {
    await this.sessions.close();
  }
}
