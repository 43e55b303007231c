/**
 * Reading the warehouse change log (change-log.ts): numbered pages of changes with their record
 * images from the history tables. The warehouse notifies no one and every query can spend credits,
 * so it is polled only while a replica has subscribers (the dispatcher asks), every `pollMs` (an
 * idle poll is one query), and pruned only by a replica that has written to the dataset since its
 * last prune (docs/warehouse.md, "Change feed").
 */
import type { DatasetConfig } from '../../../../model/types.js';
import { StoreError, type ChangeBatch, type ChangeFeed, type ChangeOp, type RecordChange, type StoredRecord } from '../../engine/contract.js';
import { quoteIdent as q } from '../../engine/sql/naming.js';
import { headSql, numberSql, parseCursor, pollSql, pruneSql, readSql } from './change-log.js';
import type { Statement, WarehouseLayout } from './layout.js';
import type { Session } from './sessions.js';
import { recordOfRow } from './values.js';

export interface WarehouseFeedHost {
  withSession<T>(dataset: DatasetConfig, fn: (session: Session) => Promise<T>): Promise<T>;
  /** The layout of a schema of the dataset's config; undefined when it has no such schema. */
  layoutOf(dataset: DatasetConfig, schema: string): WarehouseLayout | undefined;
  dbSchema(dataset: DatasetConfig): string;
  failure(err: unknown): unknown;
}

type Row = Record<string, unknown>;

export class WarehouseChangeFeed implements ChangeFeed {
  /** The wake-up timer polls; the dispatcher's own fallback only every few minutes. */
  readonly fallbackPollMs = 300_000;
  /** Datasets this replica wrote to since it last pruned them. */
  private readonly written = new Set<string>();
  /** Statements this feed sent since start (polls, numberings, pages, images, pruning). */
  queries = 0;

  constructor(
    private readonly host: WarehouseFeedHost,
    /** How often a replica with subscribers polls. */
    private readonly pollMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** A write or bulk load committed changes to the dataset (pruning has something to do). */
  wrote(dataset: DatasetConfig): void {
    this.written.add(dataset.id);
  }

  private async run(session: Session, statement: Statement | string): Promise<Row[]> {
    this.queries++;
    const { text, binds } = typeof statement === 'string' ? { text: statement, binds: [] } : statement;
    return (await session.exec(text, { binds, rowMode: 'object' })).rows as Row[];
  }

  /** Numbers what is pending (change-log.ts); a failure rolls the numbering back. */
  private async number(session: Session, dbSchema: string): Promise<void> {
    try {
      for (const statement of numberSql(dbSchema)) await this.run(session, statement);
    } catch (err) {
      await this.run(session, 'ROLLBACK').catch(() => (session.broken = true));
      throw err;
    }
  }

  async readChanges(dataset: DatasetConfig, after: string, limit: number): Promise<ChangeBatch> {
    const from = parseCursor(after);
    if (from === undefined) throw new StoreError({ kind: 'invalid-query', detail: `"${after.slice(0, 40)}" is not a cursor of this dataset's changes` });
    const dbSchema = this.host.dbSchema(dataset);
    try {
      return await this.host.withSession(dataset, async (session) => {
        const [poll] = await this.run(session, pollSql(dbSchema, from));
        if (from < BigInt(String(poll?.THROUGH ?? 0))) return { changes: [], expired: true };
        const unnumbered = Number(poll?.UNNUMBERED ?? 0);
        // Nothing new: an idle poll is this one query.
        if (!unnumbered && !Number(poll?.AFTER ?? 0)) return { changes: [], expired: false };
        if (unnumbered) await this.number(session, dbSchema);
        const rows = await this.run(session, readSql(dbSchema, from, limit));
        const changes: RecordChange[] = rows.map((r) => ({
          cursor: String(r.POS),
          schema: String(r.SCHEMA_NAME),
          id: String(r.RECORD_ID),
          version: Number(r.VERSION),
          op: String(r.OP) as ChangeOp,
          committedAt: new Date(String(r.COMMITTED_AT)).toISOString(),
        }));
        await this.attachImages(session, dataset, changes);
        return { changes, expired: false };
      });
    } catch (err) {
      throw this.failure(err);
    }
  }

  /** Each change's version from its schema's history (a delete: the version before it). */
  private async attachImages(session: Session, dataset: DatasetConfig, changes: RecordChange[]): Promise<void> {
    const bySchema = new Map<string, RecordChange[]>();
    for (const c of changes) bySchema.set(c.schema, [...(bySchema.get(c.schema) ?? []), c]);
    for (const [schema, list] of bySchema) {
      const layout = this.host.layoutOf(dataset, schema);
      if (!layout) continue;
      const wanted = list.map((c) => [c.id, c.op === 'DELETE' ? c.version - 1 : c.version] as const);
      const [id, version] = [layout.columns[0], layout.columns[1]];
      const pairs = wanted.map(() => `(${q(id.name)} = ${layout.cast(id.sqlType)} AND ${q(version.name)} = ${layout.cast(version.sqlType)})`).join(' OR ');
      const { rows } = await session.exec(`SELECT ${layout.columnList} FROM ${layout.history} WHERE ${pairs}`, { binds: wanted.flat() });
      this.queries++;
      const images = new Map<string, StoredRecord>();
      for (const row of rows as unknown[][]) {
        const record = recordOfRow(layout, row);
        images.set(`${record.id}:${record.version}`, record);
      }
      for (const c of list) {
        if (c.op === 'DELETE') {
          c.previous = images.get(`${c.id}:${c.version - 1}`);
          c.record = { id: c.id, version: c.version, data: {}, updatedAt: c.committedAt, deleted: true };
        } else c.record = images.get(`${c.id}:${c.version}`);
      }
    }
  }

  async head(dataset: DatasetConfig): Promise<string> {
    const dbSchema = this.host.dbSchema(dataset);
    try {
      return await this.host.withSession(dataset, async (session) => {
        await this.number(session, dbSchema);
        const [row] = await this.run(session, headSql(dbSchema));
        return String(BigInt(String(row?.HEAD ?? 0)) > BigInt(String(row?.THROUGH ?? 0)) ? row.HEAD : (row?.THROUGH ?? 0));
      });
    } catch (err) {
      throw this.failure(err);
    }
  }

  /** Only after this replica wrote to the dataset: with no writes, pruning spends nothing. */
  async prune(dataset: DatasetConfig, retentionMs: number): Promise<number> {
    if (!this.written.delete(dataset.id)) return 0;
    const dbSchema = this.host.dbSchema(dataset);
    try {
      return await this.host.withSession(dataset, async (session) => {
        await this.number(session, dbSchema);
        const [mark, removed] = pruneSql(dbSchema, new Date(this.now() - retentionMs).toISOString());
        await this.run(session, mark);
        const [row] = await this.run(session, removed);
        return Number(row?.['number of rows deleted'] ?? 0);
      });
    } catch (err) {
      this.written.add(dataset.id);
      throw this.failure(err);
    }
  }

  async subscribeWakeups(_dataset: DatasetConfig, onWake: () => void): Promise<() => Promise<void>> {
    // The warehouse notifies no one: a replica with subscribers polls on this timer.
    const timer = setInterval(onWake, this.pollMs);
    timer.unref();
    return async () => clearInterval(timer);
  }

  private failure(err: unknown): unknown {
    return err instanceof StoreError ? err : this.host.failure(err);
  }
}
