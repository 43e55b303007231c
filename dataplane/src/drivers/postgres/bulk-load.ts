/**
 * Bulk loads on PostgreSQL: the transactions table (`das_transactions` in the dataset's schema)
 * and the chunk writer. A chunk is COPYed into a temporary staging table and applied with one
 * set-based statement that also writes the history rows (versions continue as for any write) and
 * the change-log rows; the transaction's cursor and progress are updated in the same database
 * transaction, so a chunk re-run after a crash finds its cursor moved and writes nothing twice.
 */
import type pg from 'pg';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import copyStreams from 'pg-copy-streams';
import type { DatasetConfig } from '../../../../model/types.js';
import { valueAt } from '../../engine/layout.js';
import { StoreError, type ActionProgress, type BulkLoadStore, type ChunkOutcome, type LoadChunk, type LoadCursor, type StoredTransaction } from '../../engine/contract.js';
import { quoteIdent as q, postgresNaming as naming } from '../sql-naming.js';
import { changeChannel, changeLockKey, changesTable } from './change-log.js';
import { holdConnection } from './checkout.js';
import { outageOf } from './outage.js';
import { reportOutcomes } from '../bulk-load-outcomes.js';
import { databaseSchemaOf, type TableLayout } from './sql.js';

const TABLE = 'das_transactions';

type Row = Record<string, unknown>;

export class PostgresBulkLoad implements BulkLoadStore {
  /** Datasets (by schema and pool) whose transactions table is known to exist. */
  private readonly ready = new WeakMap<pg.Pool, Set<string>>();

  constructor(
    private readonly poolOf: (dataset: DatasetConfig) => pg.Pool,
    private readonly layoutOf: (dataset: DatasetConfig, schema: string) => TableLayout,
  ) {
    // Every method reports what the store answered as a store outcome (never a bare pg error).
    reportOutcomes(this, (err, name, args) => outcomeOf(err, name === 'create' ? (args[1] as { id: string }).id : undefined));
  }

  private table(dataset: DatasetConfig): string {
    return `${q(databaseSchemaOf(dataset))}.${q(TABLE)}`;
  }

  /**
   * The pool, once the transactions table exists: the first create makes it (additive; serialised
   * like the other DDL). Reads and claims on a dataset that never had a transaction find no table
   * and answer nothing, so polling creates no tables.
   */
  private async pool(dataset: DatasetConfig): Promise<pg.Pool>;
  private async pool(dataset: DatasetConfig, create: false): Promise<pg.Pool | undefined>;
  private async pool(dataset: DatasetConfig, create = true): Promise<pg.Pool | undefined> {
    const pool = this.poolOf(dataset);
    const schema = databaseSchemaOf(dataset);
    const known = this.ready.get(pool) ?? new Set<string>();
    this.ready.set(pool, known);
    if (known.has(schema)) return pool;
    if (!create) {
      const found = await pool.query('SELECT to_regclass($1) IS NOT NULL AS present', [this.table(dataset)]);
      if (!found.rows[0].present) return undefined;
      known.add(schema);
      return pool;
    }
    await withTransaction(pool, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`data-access:ddl:${dataset.id}`]);
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${q(schema)}`);
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${this.table(dataset)} (id text PRIMARY KEY, status text NOT NULL, spec jsonb NOT NULL, progress jsonb NOT NULL, ` +
          `"cursor" jsonb NOT NULL, error text, created_at timestamptz NOT NULL DEFAULT clock_timestamp(), updated_at timestamptz NOT NULL DEFAULT clock_timestamp(), ` +
          `started_at timestamptz, finished_at timestamptz, lease_owner text, lease_expires_at timestamptz)`,
      );
      await client.query(`CREATE INDEX IF NOT EXISTS das_transactions_created ON ${this.table(dataset)} (created_at, id)`);
    });
    known.add(schema);
    return pool;
  }

  /** Forgets the table (purge dropped it). */
  forget(dataset: DatasetConfig): void {
    this.ready.get(this.poolOf(dataset))?.delete(databaseSchemaOf(dataset));
  }

  dropSql(dataset: DatasetConfig): string {
    return `DROP TABLE IF EXISTS ${this.table(dataset)}`;
  }

  async create(dataset: DatasetConfig, tx: Pick<StoredTransaction, 'id' | 'spec'>): Promise<StoredTransaction> {
    const pool = await this.pool(dataset);
    const progress = tx.spec.actions.map(emptyProgress);
    const cursor: LoadCursor = { action: 0, file: 0, row: 0 };
    const result = await pool.query(`INSERT INTO ${this.table(dataset)} (id, status, spec, progress, "cursor") VALUES ($1, 'PENDING', $2, $3, $4) RETURNING *`, [
      tx.id,
      JSON.stringify(tx.spec),
      JSON.stringify(progress),
      JSON.stringify(cursor),
    ]);
    return fromRow(result.rows[0]);
  }

  async get(dataset: DatasetConfig, id: string): Promise<StoredTransaction | undefined> {
    const pool = await this.pool(dataset, false);
    if (!pool) return undefined;
    const result = await pool.query(`SELECT * FROM ${this.table(dataset)} WHERE id = $1`, [id]);
    return result.rows[0] ? fromRow(result.rows[0]) : undefined;
  }

  async list(dataset: DatasetConfig, query: { status?: string; descending: boolean; limit: number; after?: [string, string] }): Promise<StoredTransaction[]> {
    const pool = await this.pool(dataset, false);
    if (!pool) return [];
    const where: string[] = [];
    const values: unknown[] = [];
    if (query.status !== undefined) {
      values.push(query.status);
      where.push(`status = $${values.length}`);
    }
    if (query.after) {
      values.push(query.after[0], query.after[1]);
      where.push(`(created_at, id) ${query.descending ? '<' : '>'} ($${values.length - 1}::timestamptz, $${values.length})`);
    }
    values.push(query.limit);
    const dir = query.descending ? 'DESC' : 'ASC';
    const result = await pool.query(
      `SELECT * FROM ${this.table(dataset)}${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at ${dir}, id ${dir} LIMIT $${values.length}`,
      values,
    );
    return result.rows.map(fromRow);
  }

  async claim(dataset: DatasetConfig, owner: string, leaseMs: number): Promise<StoredTransaction | undefined> {
    const pool = await this.pool(dataset, false);
    if (!pool) return undefined;
    const t = this.table(dataset);
    const result = await pool.query(
      `UPDATE ${t} SET status = 'RUNNING', lease_owner = $1, lease_expires_at = clock_timestamp() + $2 * interval '1 millisecond', ` +
        `started_at = COALESCE(started_at, clock_timestamp()), updated_at = clock_timestamp() ` +
        `WHERE id = (SELECT id FROM ${t} WHERE status = 'PENDING' OR (status = 'RUNNING' AND lease_expires_at < clock_timestamp()) ` +
        `ORDER BY created_at, id FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING *`,
      [owner, leaseMs],
    );
    return result.rows[0] ? fromRow(result.rows[0]) : undefined;
  }

  async renew(dataset: DatasetConfig, id: string, owner: string, leaseMs: number): Promise<boolean> {
    const pool = await this.pool(dataset);
    const result = await pool.query(
      `UPDATE ${this.table(dataset)} SET lease_expires_at = clock_timestamp() + $3 * interval '1 millisecond' WHERE id = $1 AND lease_owner = $2 AND status = 'RUNNING'`,
      [id, owner, leaseMs],
    );
    return result.rowCount === 1;
  }

  async advance(dataset: DatasetConfig, id: string, owner: string, cursor: LoadCursor, progress: ActionProgress[]): Promise<boolean> {
    const pool = await this.pool(dataset);
    const result = await pool.query(
      `UPDATE ${this.table(dataset)} SET "cursor" = $3, progress = $4, updated_at = clock_timestamp() WHERE id = $1 AND lease_owner = $2 AND status = 'RUNNING'`,
      [id, owner, JSON.stringify(cursor), JSON.stringify(progress)],
    );
    return result.rowCount === 1;
  }

  async finish(
    dataset: DatasetConfig,
    id: string,
    owner: string,
    outcome: { status: 'SUCCEEDED' | 'FAILED'; error?: string; progress: ActionProgress[] } | undefined,
  ): Promise<void> {
    const pool = await this.pool(dataset);
    if (!outcome) {
      // Given back (shutdown, pause): another replica, or this one later, continues from the cursor.
      await pool.query(`UPDATE ${this.table(dataset)} SET status = 'PENDING', lease_owner = NULL, lease_expires_at = NULL, updated_at = clock_timestamp() WHERE id = $1 AND lease_owner = $2`, [id, owner]);
      return;
    }
    await pool.query(
      `UPDATE ${this.table(dataset)} SET status = $3, error = $4, progress = $5, finished_at = clock_timestamp(), updated_at = clock_timestamp(), lease_owner = NULL, lease_expires_at = NULL ` +
        `WHERE id = $1 AND lease_owner = $2`,
      [id, owner, outcome.status, outcome.error ?? null, JSON.stringify(outcome.progress)],
    );
  }

  async loadChunk(dataset: DatasetConfig, chunk: LoadChunk): Promise<ChunkOutcome> {
    const layout = this.layoutOf(dataset, chunk.schema);
    const progress = structuredClone(chunk.progress);
    const { records, duplicates } = dedupe(chunk.records, chunk.operation);
    for (const d of duplicates) reject(progress, chunk.maxErrors, d.row, `id "${d.id}" appears earlier in the same chunk; INSERT keeps the first`);
    const staged = records.length ? stageCopy(layout, records, chunk.operation === 'DELETE') : undefined;
    const pool = await this.pool(dataset);
    return await withTransaction(pool, async (client) => {
      const current = await client.query(`SELECT "cursor", lease_owner FROM ${this.table(dataset)} WHERE id = $1 FOR UPDATE`, [chunk.transaction]);
      const row = current.rows[0];
      if (!row || row.lease_owner !== chunk.owner) return { kind: 'lease-lost' as const };
      if (!sameCursor(row.cursor, chunk.from)) return { kind: 'already-committed' as const };
      if (staged) {
        await client.query(staged.create);
        await pipeline(Readable.from(staged.text()), client.query(copyStreams.from(staged.copy)));
        // One statement writes the records, their history and their change-log rows (see applySql).
        const apply = applySql(layout, chunk.operation, chunk.maxErrors);
        const outcome = await client.query(apply.text, apply.values);
        const { written, rejected, samples } = outcome.rows[0] as ApplyResult;
        progress.rowsWritten += Number(written);
        progress.rowsRejected += Number(rejected) - (samples?.length ?? 0);
        for (const s of samples ?? []) reject(progress, chunk.maxErrors, s.row, chunk.operation === 'INSERT' ? `a record with id "${s.id}" exists` : `no record with id "${s.id}"`);
      }
      // After the change-log lock (taken at the end of the apply): this row is locked by us since
      // the SELECT ... FOR UPDATE above, so this statement waits for no lock and the change-log lock
      // stays the last one the transaction takes.
      await client.query(
        `UPDATE ${this.table(dataset)} SET progress = jsonb_set(progress, $2, $3), "cursor" = $4, updated_at = clock_timestamp(), ` +
          `lease_expires_at = clock_timestamp() + $5 * interval '1 millisecond' WHERE id = $1`,
        [chunk.transaction, `{${chunk.from.action}}`, JSON.stringify(progress), JSON.stringify(chunk.to), chunk.leaseMs],
      );
      return { kind: 'committed' as const, progress };
    });
  }
}

/** A failure in the store's terms: unreachable, an id taken, a value the column type cannot hold; else as it is. */
function outcomeOf(err: unknown, id: string | undefined): unknown {
  const outage = outageOf(err);
  if (outage) return outage;
  const code = (err as { code?: string }).code ?? '';
  if (code === '23505' && id !== undefined) return new StoreError({ kind: 'exists', schema: 'Transaction', id });
  if (code.startsWith('22')) return new StoreError({ kind: 'invalid-value', reason: 'form', schema: 'Transaction', detail: (err as Error).message });
  return err;
}

export function emptyProgress(): ActionProgress {
  return { rowsRead: 0, rowsWritten: 0, rowsRejected: 0, bytesRead: 0, errors: [] };
}

function reject(progress: ActionProgress, maxErrors: number, row: number, message: string): void {
  progress.rowsRejected += 1;
  if (progress.errors.length < maxErrors) progress.errors.push({ row, message });
}

const sameCursor = (a: LoadCursor, b: LoadCursor) => a.action === b.action && a.file === b.file && a.row === b.row;

/** One row per id: the last wins for UPSERT and DELETE; INSERT keeps the first and refuses the rest. */
function dedupe(records: LoadChunk['records'], operation: LoadChunk['operation']) {
  const byId = new Map<string, LoadChunk['records'][number]>();
  const duplicates: LoadChunk['records'] = [];
  for (const r of records) {
    if (byId.has(r.id) && operation === 'INSERT') duplicates.push(r);
    else {
      byId.delete(r.id); // re-inserted at the end: staging keeps row order
      byId.set(r.id, r);
    }
  }
  return { records: [...byId.values()], duplicates };
}

async function withTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const held = await holdConnection(pool);
  let failure: unknown;
  try {
    await held.client.query('BEGIN');
    const result = await work(held.client);
    await held.client.query('COMMIT');
    return result;
  } catch (err) {
    failure = err;
    await held.client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    held.release(failure);
  }
}

/**
 * The staging of a chunk: a temporary table shaped like the live one (no indexes, dropped at
 * commit) and the COPY text of its rows, built lazily in pieces of ~64 KB as COPY takes them, so
 * PostgreSQL parses one piece while the next is built.
 */
export function stageCopy(layout: TableLayout, records: LoadChunk['records'], idsOnly: boolean): { create: string; copy: string; text: () => Generator<string> } {
  const fields = idsOnly ? [] : layout.columns.filter((c) => c.field);
  const cols = ['das_row integer', `${q(naming.system.id)} text`, ...fields.map((c) => `${q(c.name)} ${c.sqlType}`)];
  const text = function* () {
    let batch = '';
    for (const r of records) {
      batch += String(r.row) + ',' + csvValue(r.id);
      for (const c of fields) batch += ',' + csvValue(valueAt(r.data, c.field!));
      batch += '\n';
      if (batch.length > 64 * 1024) {
        yield batch;
        batch = '';
      }
    }
    if (batch) yield batch;
  };
  const names = ['das_row', naming.system.id, ...fields.map((c) => c.name)].map(q).join(', ');
  return {
    create: `CREATE TEMP TABLE das_stage (${cols.join(', ')}) ON COMMIT DROP`,
    copy: `COPY das_stage (${names}) FROM STDIN WITH (FORMAT csv)`,
    text,
  };
}

/** CSV for COPY: null is an empty unquoted field, every value is quoted (quotes doubled). */
function csvValue(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);
  return text.includes('"') ? `"${text.replace(/"/g, '""')}"` : `"${text}"`;
}

/**
 * The set-based write of the staged rows in one statement: the records (w), their history rows
 * (h) and their change-log rows (c, in w's order, which is row order), with the wake-up (n).
 * Answers how many were written, how many refused (INSERT: the id exists; DELETE: no such record)
 * and the first refused ones with their row.
 *
 * The change log's ordering lock (change-log.ts: held from drawing sequences to the commit, and
 * the last lock a transaction takes) is taken in `l`, whose input counts every row of w and h:
 * the lock call runs only once every record and history row is written (with their row locks),
 * so it cannot close a deadlock cycle with a concurrent single write of the same records.
 * Params: $1 the lock key, $2 the record schema's name, $3 the NOTIFY channel.
 */
export function applySql(layout: TableLayout, operation: LoadChunk['operation'], maxErrors: number): { text: string; values: unknown[] } {
  const s = naming.system;
  const [id, version, created, updated, deleted] = [s.id, s.version, s.createdAt, s.updatedAt, s.deletedAt].map(q);
  const fields = layout.columns.filter((c) => c.field).map((c) => q(c.name));
  const all = layout.columns.map((c) => q(c.name)).join(', ');
  let write: string;
  let history: string;
  let op: string;
  if (operation === 'DELETE') {
    write = `DELETE FROM ${layout.table} t USING das_stage st WHERE t.${id} = st.${id} RETURNING t.${id}, t.${version} + 1 AS ${version}, t.${created}`;
    history = `INSERT INTO ${layout.history} (${id}, ${version}, ${created}, ${updated}, ${deleted}) SELECT ${id}, ${version}, ${created}, now(), now() FROM w RETURNING 1`;
    op = `'DELETE'`;
  } else {
    const nextVersion = `COALESCE((SELECT max(h.${version}) FROM ${layout.history} h WHERE h.${id} = st.${id}), 0) + 1`;
    const insert =
      `INSERT INTO ${layout.table} AS t (${[id, version, created, updated, ...fields].join(', ')}) ` +
      `SELECT st.${id}, ${nextVersion}, now(), now()${fields.map((f) => `, st.${f}`).join('')} FROM das_stage st ORDER BY st.das_row `;
    write =
      operation === 'UPSERT'
        ? `${insert}ON CONFLICT (${id}) DO UPDATE SET ${[`${version} = t.${version} + 1`, `${updated} = now()`, ...fields.map((f) => `${f} = EXCLUDED.${f}`)].join(', ')} RETURNING ${all}, (t.xmax = 0) AS das_created`
        : `${insert}ON CONFLICT (${id}) DO NOTHING RETURNING ${all}, true AS das_created`;
    history = `INSERT INTO ${layout.history} (${all}) SELECT ${all} FROM w RETURNING 1`;
    op = `CASE WHEN w.das_created THEN 'CREATE' ELSE 'UPDATE' END`;
  }
  const changes =
    `l AS (SELECT pg_advisory_xact_lock(hashtext($1::text)) FROM (SELECT count(*) FROM w) a, (SELECT count(*) FROM h) b), ` +
    `c AS (INSERT INTO ${changesTable(layout.dbSchema)} (schema_name, record_id, version, op) SELECT $2::text, w.${id}, w.${version}, ${op} FROM l, w RETURNING seq), ` +
    `n AS (SELECT pg_notify($3::text, max(seq)::text) FROM c HAVING count(*) > 0)`;
  const values = [changeLockKey(layout.dbSchema), layout.schemaName, changeChannel(layout.dbSchema)];
  // The count of c makes the change-log CTEs run; n runs through the count of it.
  const written = `(SELECT count(*) FROM c)::int AS written, (SELECT count(*) FROM n) AS notified`;
  // An UPSERT writes every staged row: nothing to count as refused.
  if (operation === 'UPSERT') return { text: `WITH w AS (${write}), h AS (${history}), ${changes} SELECT ${written}, 0 AS rejected, NULL::json AS samples`, values };
  const refused = `FROM das_stage st WHERE NOT EXISTS (SELECT 1 FROM w WHERE w.${id} = st.${id})`;
  return {
    text:
      `WITH w AS (${write}), h AS (${history}), ${changes} SELECT ${written}, (SELECT count(*) ${refused})::int AS rejected, ` +
      `(SELECT json_agg(json_build_object('row', x.das_row, 'id', x.${id})) FROM (SELECT st.das_row, st.${id} ${refused} ORDER BY st.das_row LIMIT ${Number(maxErrors)}) x) AS samples`,
    values,
  };
}

interface ApplyResult {
  written: number;
  rejected: number;
  samples: { row: number; id: string }[] | null;
}

function fromRow(row: Row): StoredTransaction {
  const iso = (v: unknown) => (v === null || v === undefined ? undefined : v instanceof Date ? v.toISOString() : String(v));
  return {
    id: row.id as string,
    status: row.status as StoredTransaction['status'],
    spec: row.spec as StoredTransaction['spec'],
    progress: row.progress as ActionProgress[],
    cursor: row.cursor as LoadCursor,
    ...(row.error ? { error: row.error as string } : {}),
    createdAt: iso(row.created_at)!,
    updatedAt: iso(row.updated_at)!,
    ...(row.started_at ? { startedAt: iso(row.started_at) } : {}),
    ...(row.finished_at ? { finishedAt: iso(row.finished_at) } : {}),
    ...(row.lease_owner ? { leaseOwner: row.lease_owner as string, leaseExpiresAt: iso(row.lease_expires_at) } : {}),
  };
}
