/**
 * Bulk loads on PostgreSQL: the transactions table (`das_transactions` in the dataset's schema)
 * and the chunk writer. A chunk is split by id into parts (bulk-load-parts.ts) written at once on
 * as many connections (`DAS_BULK_WRITERS`): each part is COPYed into a temporary staging table and
 * applied with one set-based statement that also writes the history rows (versions continue as
 * for any write) and the change-log rows, and commits with its part's cursor
 * (`das_transaction_parts`), so a part re-run after a crash writes nothing twice. Then the chunk
 * commits: the transaction's cursor moves and its progress takes in what the parts wrote.
 */
import { DATAPLANE_DEFAULTS } from '../../../../model/settings/dataplane.js';
import type pg from 'pg';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import copyStreams from 'pg-copy-streams';
import type { DatasetConfig } from '../../../../model/types.js';
import { stageCsv } from '../sql/stage-csv.js';
import { StoreError, type ActionProgress, type BulkLoadStore, type ChunkOutcome, type LoadChunk, type LoadCursor, type StoredTransaction } from '../../engine/contract.js';
import { quoteIdent as q, postgresNaming as naming } from '../../engine/sql/naming.js';
import { changeChannel, changesTable } from './change-log.js';
import { addToPending, foldPending, laterCursor, nothingPending, splitIntoParts, unwritten, type PartPending } from './bulk-load-parts.js';
import { ddlLockKey, inTransaction } from './checkout.js';
import { outageOf } from './outage.js';
import { reportOutcomes } from '../bulk-load-outcomes.js';
import { databaseSchemaOf, type TableLayout } from './sql.js';

const TABLE = 'das_transactions';
const PARTS_TABLE = 'das_transaction_parts';
/** Connections a chunk is written on at once, unless DAS_BULK_WRITERS (1 to 8: each writer holds a connection of the dataset's pool of 10, which requests share) says otherwise. */
export const DEFAULT_WRITERS = DATAPLANE_DEFAULTS.DAS_BULK_WRITERS;

type Row = Record<string, unknown>;

export class PostgresBulkLoad implements BulkLoadStore {
  /** Datasets (by schema and pool) whose transactions table is known to exist. */
  private readonly ready = new WeakMap<pg.Pool, Set<string>>();

  constructor(
    private readonly poolOf: (dataset: DatasetConfig) => pg.Pool,
    private readonly layoutOf: (dataset: DatasetConfig, schema: string) => TableLayout,
    /** Parts a new transaction's chunks are split into, each written on its own connection. */
    private readonly writers = DEFAULT_WRITERS,
  ) {
    // Every method reports what the store answered as a store outcome (never a bare pg error).
    reportOutcomes(this, (err, name, args) => outcomeOf(err, name === 'create' ? (args[1] as { id: string }).id : undefined));
  }

  private table(dataset: DatasetConfig): string {
    return `${q(databaseSchemaOf(dataset))}.${q(TABLE)}`;
  }

  private partsTable(dataset: DatasetConfig): string {
    return `${q(databaseSchemaOf(dataset))}.${q(PARTS_TABLE)}`;
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
    }
    // Also when the table exists: one made before parts existed gets its parts table.
    await inTransaction(pool, { lockKey: ddlLockKey(dataset.id) }, async (client) => {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${q(schema)}`);
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${this.table(dataset)} (id text PRIMARY KEY, status text NOT NULL, spec jsonb NOT NULL, progress jsonb NOT NULL, ` +
          `"cursor" jsonb NOT NULL, error text, created_at timestamptz NOT NULL DEFAULT clock_timestamp(), updated_at timestamptz NOT NULL DEFAULT clock_timestamp(), ` +
          `started_at timestamptz, finished_at timestamptz, lease_owner text, lease_expires_at timestamptz)`,
      );
      await client.query(`CREATE INDEX IF NOT EXISTS das_transactions_created ON ${this.table(dataset)} (created_at, id)`);
      // Takeovers of a lease that ran out (its replica stopped mid-load): the runner's crash-loop guard.
      await client.query(`ALTER TABLE ${this.table(dataset)} ADD COLUMN IF NOT EXISTS lost_leases integer NOT NULL DEFAULT 0`);
      // A running transaction's parts: where each has written up to, and what it wrote that the
      // transaction's progress has not taken in yet (bulk-load-parts.ts).
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${this.partsTable(dataset)} (transaction_id text NOT NULL, part integer NOT NULL, "cursor" jsonb NOT NULL, pending jsonb NOT NULL, PRIMARY KEY (transaction_id, part))`,
      );
    });
    known.add(schema);
    return pool;
  }

  /** Forgets the table (purge dropped it). */
  forget(dataset: DatasetConfig): void {
    this.ready.get(this.poolOf(dataset))?.delete(databaseSchemaOf(dataset));
  }

  dropSql(dataset: DatasetConfig): string {
    return `DROP TABLE IF EXISTS ${this.table(dataset)}, ${this.partsTable(dataset)}`;
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
        `started_at = COALESCE(started_at, clock_timestamp()), updated_at = clock_timestamp(), lost_leases = lost_leases + CASE WHEN status = 'RUNNING' THEN 1 ELSE 0 END ` +
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
      // Given back (shutdown, pause): another replica, or this one later, continues from the cursor
      // (and each part from its own).
      await pool.query(`UPDATE ${this.table(dataset)} SET status = 'PENDING', lease_owner = NULL, lease_expires_at = NULL, updated_at = clock_timestamp() WHERE id = $1 AND lease_owner = $2`, [id, owner]);
      return;
    }
    await inTransaction(pool, {}, async (client) => {
      // A load that failed after some parts of a chunk committed: what they wrote still counts
      // (the counts only: the chunk's refused rows were never reported as errors).
      const parts = await client.query(`DELETE FROM ${this.partsTable(dataset)} WHERE transaction_id = $1 RETURNING pending`, [id]);
      const progress = structuredClone(outcome.progress);
      for (const { pending } of parts.rows as { pending: PartPending }[]) {
        if ((pending.written || pending.rejected) && progress[pending.action]) progress[pending.action] = foldPending(progress[pending.action], [pending], () => '', 0);
      }
      await client.query(
        `UPDATE ${this.table(dataset)} SET status = $3, error = $4, progress = $5, finished_at = clock_timestamp(), updated_at = clock_timestamp(), lease_owner = NULL, lease_expires_at = NULL ` +
          `WHERE id = $1 AND lease_owner = $2`,
        [id, owner, outcome.status, outcome.error ?? null, JSON.stringify(progress)],
      );
    });
  }

  /**
   * A chunk: its parts written at once, each in its own database transaction with its cursor
   * (writePart), then the chunk's commit (commitChunk). A crash in between leaves parts that have
   * written and a cursor that has not moved: the chunk is offered again, those parts write nothing
   * again, and the commit takes in what they wrote then.
   */
  async loadChunk(dataset: DatasetConfig, chunk: LoadChunk): Promise<ChunkOutcome> {
    const layout = this.layoutOf(dataset, chunk.schema);
    const progress = structuredClone(chunk.progress);
    const { records, duplicates } = dedupe(chunk.records, chunk.operation);
    for (const d of duplicates) reject(progress, chunk.maxErrors, d.row, `id "${d.id}" appears earlier in the same chunk; INSERT keeps the first`);
    const pool = await this.pool(dataset);
    const parts = await this.partsOf(pool, dataset, chunk.transaction, chunk.owner);
    const settled = await Promise.allSettled(splitIntoParts(records, parts).map((mine, part) => this.writePart(pool, dataset, layout, chunk, part, mine)));
    // Every part has finished (none still writing) before the chunk reports anything.
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    const kinds = settled.map((s) => (s as PromiseFulfilledResult<PartOutcome>).value);
    if (kinds.includes('lease-lost')) return { kind: 'lease-lost' };
    if (kinds.includes('already-committed')) return { kind: 'already-committed' };
    return await this.commitChunk(pool, dataset, chunk, progress);
  }

  /**
   * The transaction's parts: made on its first chunk by the lease holder (as many as it writes
   * with), then kept, so every replica continuing it splits its ids the same way.
   */
  private async partsOf(pool: pg.Pool, dataset: DatasetConfig, transaction: string, owner: string): Promise<number> {
    const t = this.partsTable(dataset);
    const result = await pool.query(
      `WITH made AS (INSERT INTO ${t} (transaction_id, part, "cursor", pending) ` +
        `SELECT $1, k, m."cursor", jsonb_build_object('action', (m."cursor"->>'action')::int, 'written', 0, 'rejected', 0, 'samples', '[]'::jsonb) ` +
        `FROM generate_series(0, $2 - 1) k, ${this.table(dataset)} m WHERE m.id = $1 AND m.lease_owner = $3 AND NOT EXISTS (SELECT 1 FROM ${t} WHERE transaction_id = $1) ` +
        `ON CONFLICT DO NOTHING RETURNING 1) ` +
        `SELECT greatest((SELECT count(*) FROM made), (SELECT count(*) FROM ${t} WHERE transaction_id = $1))::int AS parts`,
      [transaction, this.writers, owner],
    );
    return Math.max(1, result.rows[0].parts as number);
  }

  /** One part of a chunk: its records not yet written, with their history and changes, and its cursor, in one database transaction. */
  private async writePart(pool: pg.Pool, dataset: DatasetConfig, layout: TableLayout, chunk: LoadChunk, part: number, records: LoadChunk['records']): Promise<PartOutcome> {
    return await inTransaction(pool, {}, async (client) => {
      // Shared: the parts of a chunk run at once; a claim (FOR UPDATE SKIP LOCKED) passes over the row meanwhile.
      const current = await client.query(`SELECT "cursor", lease_owner FROM ${this.table(dataset)} WHERE id = $1 FOR SHARE`, [chunk.transaction]);
      const row = current.rows[0];
      if (!row || row.lease_owner !== chunk.owner) return 'lease-lost';
      if (!sameCursor(row.cursor, chunk.from)) return 'already-committed';
      const mine = await client.query(`SELECT "cursor", pending FROM ${this.partsTable(dataset)} WHERE transaction_id = $1 AND part = $2 FOR UPDATE`, [chunk.transaction, part]);
      if (!mine.rows[0]) return 'lease-lost'; // the transaction finished meanwhile
      const partCursor = mine.rows[0].cursor as LoadCursor;
      const todo = unwritten(records, chunk, partCursor);
      let pending = mine.rows[0].pending as PartPending;
      if (pending.action !== chunk.from.action) pending = nothingPending(chunk.from.action);
      if (todo.length) {
        const staged = stageCopy(layout, todo, chunk.operation === 'DELETE');
        await client.query(staged.create);
        await pipeline(Readable.from(staged.text()), client.query(copyStreams.from(staged.copy)));
        // One statement writes the records, their history and their change-log rows (applySql).
        const { written, rejected, samples } = await applySettlingRaces(client, applySql(layout, chunk.operation, chunk.maxErrors));
        pending = addToPending(pending, { written: Number(written), rejected: Number(rejected), samples: samples ?? [] }, chunk.maxErrors);
      }
      await client.query(`UPDATE ${this.partsTable(dataset)} SET "cursor" = $3, pending = $4 WHERE transaction_id = $1 AND part = $2`, [
        chunk.transaction,
        part,
        JSON.stringify(laterCursor(partCursor, chunk.to)),
        JSON.stringify(pending),
      ]);
      return 'written';
    });
  }

  /** The chunk's commit: the transaction's cursor moves to its end and its progress takes in what every part wrote. */
  private async commitChunk(pool: pg.Pool, dataset: DatasetConfig, chunk: LoadChunk, progress: ActionProgress): Promise<ChunkOutcome> {
    return await inTransaction(pool, {}, async (client) => {
      const current = await client.query(`SELECT "cursor", lease_owner FROM ${this.table(dataset)} WHERE id = $1 FOR UPDATE`, [chunk.transaction]);
      const row = current.rows[0];
      if (!row || row.lease_owner !== chunk.owner) return { kind: 'lease-lost' as const };
      if (!sameCursor(row.cursor, chunk.from)) return { kind: 'already-committed' as const };
      const parts = await client.query(`SELECT pending FROM ${this.partsTable(dataset)} WHERE transaction_id = $1 FOR UPDATE`, [chunk.transaction]);
      await client.query(`UPDATE ${this.partsTable(dataset)} SET pending = $2 WHERE transaction_id = $1`, [chunk.transaction, JSON.stringify(nothingPending(chunk.from.action))]);
      const pending = (parts.rows as { pending: PartPending }[]).map((r) => r.pending).filter((p) => p.action === chunk.from.action);
      const refusal = (id: string) => (chunk.operation === 'INSERT' ? `a record with id "${id}" exists` : `no record with id "${id}"`);
      const done = foldPending(progress, pending, refusal, chunk.maxErrors);
      await client.query(
        `UPDATE ${this.table(dataset)} SET progress = jsonb_set(progress, $2, $3), "cursor" = $4, updated_at = clock_timestamp(), ` +
          `lease_expires_at = clock_timestamp() + $5 * interval '1 millisecond' WHERE id = $1`,
        [chunk.transaction, `{${chunk.from.action}}`, JSON.stringify(done), JSON.stringify(chunk.to), chunk.leaseMs],
      );
      return { kind: 'committed' as const, progress: done };
    });
  }
}

type PartOutcome = 'written' | 'lease-lost' | 'already-committed';

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

/**
 * The staging of a chunk: a temporary table shaped like the live one (no indexes, dropped at
 * commit) and the COPY text of its rows (sql/stage-csv.ts), built lazily in pieces of ~64 KB as
 * COPY takes them, so PostgreSQL parses one piece while the next is built.
 */
export function stageCopy(layout: TableLayout, records: LoadChunk['records'], idsOnly: boolean): { create: string; copy: string; text: () => Generator<string> } {
  const fields = idsOnly ? [] : layout.columns.filter((c) => c.field);
  const cols = ['das_row integer', `${q(naming.system.id)} text`, ...fields.map((c) => `${q(c.name)} ${c.sqlType}`)];
  const fieldNames = fields.map((c) => c.field!);
  const names = ['das_row', naming.system.id, ...fields.map((c) => c.name)].map(q).join(', ');
  return {
    create: `CREATE TEMP TABLE das_stage (${cols.join(', ')}) ON COMMIT DROP`,
    copy: `COPY das_stage (${names}) FROM STDIN WITH (FORMAT csv)`,
    text: () => stageCsv(records, fieldNames),
  };
}

const UNIQUE_VIOLATION = '23505';

/** What a part's write statement answers. */
export interface ApplyResult {
  written: number;
  rejected: number;
  samples: { row: number; id: string }[] | null;
}
const RACE_ATTEMPTS = 3;

/**
 * Runs a part's write statement under a savepoint, again (a new statement, so a new snapshot under
 * READ COMMITTED) when it meets a unique violation: a single write that committed while the
 * statement waited for its row (a DELETE of a record the chunk updates) wrote a version the
 * statement's snapshot did not see, so its next version collided with it in the history table.
 * Nothing of a failed attempt remains (`transactions-changes.test.ts` races it).
 */
async function applySettlingRaces(client: pg.ClientBase, statement: { text: string; values: unknown[] }): Promise<ApplyResult> {
  for (let attempt = 1; ; attempt++) {
    await client.query('SAVEPOINT das_part_write');
    try {
      const result = (await client.query(statement.text, statement.values)).rows[0] as ApplyResult;
      await client.query('RELEASE SAVEPOINT das_part_write');
      return result;
    } catch (err) {
      if ((err as { code?: string }).code !== UNIQUE_VIOLATION || attempt >= RACE_ATTEMPTS) throw err;
      await client.query('ROLLBACK TO SAVEPOINT das_part_write');
    }
  }
}

/**
 * The set-based write of the staged rows in one statement: the records (w), their history rows
 * (h) and their change-log rows (c, in w's order, which is row order), with the wake-up (n).
 * Answers how many were written, how many refused (INSERT: the id exists; DELETE: no such record)
 * and the first refused ones with their row. Like any writer, it takes no change-log lock
 * (change-log.ts: readers number the rows). Params: $1 the record schema's name, $2 the NOTIFY channel.
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
    `c AS (INSERT INTO ${changesTable(layout.dbSchema)} (schema_name, record_id, version, op) SELECT $1::text, w.${id}, w.${version}, ${op} FROM w RETURNING seq), ` +
    `n AS (SELECT pg_notify($2::text, max(seq)::text) FROM c HAVING count(*) > 0)`;
  const values = [layout.schemaName, changeChannel(layout.dbSchema)];
  // n (no data-modifying CTE, so run only if read) runs through the count of it.
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
    ...(row.lost_leases ? { lostLeases: Number(row.lost_leases) } : {}),
  };
}
