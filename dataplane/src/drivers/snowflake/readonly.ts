/**
 * Raw SQL on the warehouse (the spec's rule 4 and 5): each query runs in a session whose role is
 * the dataset's read-only role (`readOnlyRole`, default SERVICE_READONLY), so the warehouse
 * itself refuses INSERT, UPDATE, DELETE, MERGE and DDL (insufficient privileges: a 403). The
 * session is one of the pool for (login, executor's warehouse, read-only role), never the one
 * writes use. Bounds: STATEMENT_TIMEOUT_IN_SECONDS per statement (and a cancel from here should
 * the warehouse not stop it), rows streamed and counted against the row limit and the result's
 * JSON size budget, and at most maxConcurrentQueries raw queries at once in the process.
 * Unquoted aliases come back upper case, as the warehouse folds them.
 */
import type { RawQuery, RawQueryOptions } from '../../engine/contract.js';
import { jsonSize, Slots } from '../postgres/result-budget.js';
import { rawQueryError, refused } from './errors.js';
import type { SnowflakeColumn, SnowflakeStatement } from './sdk.js';
import type { Session } from './sessions.js';

export interface ReadOnlyOptions {
  /** Raw queries at once in this process, all datasets together. Default 4. */
  maxConcurrentQueries?: number;
  /** How long a query waits for a free slot before a 503. Default 10 s. */
  slotTimeoutMs?: number;
}

/** Default budget for a result's JSON size: 8 MiB (as on PostgreSQL). */
export const DEFAULT_MAX_RESULT_BYTES = 8 * 1024 * 1024;
/** Beyond the statement timeout, how long before the query is canceled from here. */
const CANCEL_GRACE_MS = 2000;
/** Snowflake's QUERY_TAG holds at most 2000 characters. */
const MAX_QUERY_TAG = 2000;

const busy = () => refused('busy', 'RAW_SQL_BUSY', 'raw SQL queries are all busy; try again shortly');

/** A result value as JSON gets it: dates `YYYY-MM-DD`, timestamps ISO-8601 in UTC, binary as hex. */
export function rawValue(value: unknown, type: string): unknown {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return type === 'date' ? value.toISOString().slice(0, 10) : value.toISOString();
  if (Buffer.isBuffer(value)) return value.toString('hex');
  return value;
}

export class WarehouseReadOnly {
  private readonly slots: Slots;

  constructor(private readonly options: ReadOnlyOptions = {}) {
    this.slots = new Slots(options.maxConcurrentQueries ?? 4);
  }

  async query(query: RawQuery, options: RawQueryOptions, withSession: <T>(fn: (session: Session) => Promise<T>) => Promise<T>): Promise<Record<string, unknown>[]> {
    const { rowLimit, timeoutMs } = options;
    const maxBytes = options.maxBytes ?? DEFAULT_MAX_RESULT_BYTES;
    for (const [name, value] of Object.entries({ rowLimit, timeoutMs, maxBytes })) {
      if (!Number.isSafeInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got ${value}`);
    }
    if (!(await this.slots.acquire(this.options.slotTimeoutMs ?? 10_000))) throw busy();
    try {
      return await withSession((session) => this.run(session, query, { ...options, maxBytes }));
    } catch (err) {
      throw rawQueryError(err, timeoutMs);
    } finally {
      this.slots.release();
    }
  }

  private async run(session: Session, query: RawQuery, options: RawQueryOptions & { maxBytes: number }): Promise<Record<string, unknown>[]> {
    const { rowLimit, timeoutMs, maxBytes } = options;
    const parameters: Record<string, unknown> = { STATEMENT_TIMEOUT_IN_SECONDS: Math.max(1, Math.ceil(timeoutMs / 1000)) };
    if (options.tags) parameters.QUERY_TAG = JSON.stringify(options.tags).slice(0, MAX_QUERY_TAG);
    let statement: SnowflakeStatement | undefined;
    let timer: NodeJS.Timeout | undefined;
    // Should the warehouse not stop the statement at its timeout, the data plane does: it cancels
    // it, answers, and drops the session (the statement may still be running on it).
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        session.broken = true;
        statement?.cancel(() => undefined);
        reject(refused('invalid', 'QUERY_TIMEOUT', `the query ran longer than the raw SQL time limit of ${timeoutMs} ms`, [{ path: '$.sql', message: 'timed out' }]));
      }, timeoutMs + CANCEL_GRACE_MS);
    });
    try {
      const executed = session.exec(query.text, { binds: query.values, parameters, rowMode: 'array', stream: true, onSubmit: (s) => (statement = s) });
      executed.catch(() => undefined); // answered by the timeout instead, when it came first
      statement = (await Promise.race([executed, timeout])).statement;
      const columns = statement.getColumns() ?? [];
      const names = columns.map((c: SnowflakeColumn) => c.getName());
      const duplicates = [...new Set(names.filter((name, i) => names.indexOf(name) !== i))];
      if (duplicates.length) {
        throw refused('invalid', 'DUPLICATE_COLUMN_NAMES', `the result has several columns named ${duplicates.map((d) => `"${d}"`).join(', ')}; give each column a distinct alias`, [
          { path: '$.sql', message: 'duplicate column names', columns: duplicates },
        ]);
      }
      const types = columns.map((c: SnowflakeColumn) => c.getType());
      return await Promise.race([this.collect(statement, names, types, rowLimit, maxBytes), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Reads the rows as they stream in, stopping at rowLimit + 1 rows or at the size budget. */
  private collect(statement: SnowflakeStatement, names: string[], types: string[], rowLimit: number, maxBytes: number): Promise<Record<string, unknown>[]> {
    return new Promise((resolve, reject) => {
      const rows: Record<string, unknown>[] = [];
      const keyBytes = names.reduce((sum, name) => sum + name.length + 4, 3);
      let bytes = 2;
      let done = false;
      const stream = statement.streamRows();
      const finish = (err?: unknown) => {
        if (done) return;
        done = true;
        stream.destroy();
        if (err) reject(err);
        else resolve(rows);
      };
      stream.on('data', (raw: unknown[]) => {
        if (done) return;
        const row: Record<string, unknown> = {};
        bytes += keyBytes;
        names.forEach((name, i) => {
          const value = rawValue(raw[i], types[i]);
          bytes += jsonSize(value);
          row[name] = value;
        });
        if (bytes > maxBytes) {
          finish(
            refused('invalid', 'RESULT_TOO_LARGE', `the query's result is larger than ${maxBytes} bytes, the raw SQL result limit (after ${rows.length} rows); select fewer or smaller columns, narrow it (WHERE, LIMIT) or aggregate`, [
              { path: '$.sql', message: `result larger than ${maxBytes} bytes`, maxBytes, rows: rows.length },
            ]),
          );
          return;
        }
        rows.push(row);
        if (rows.length > rowLimit) {
          finish(
            refused('invalid', 'ROW_LIMIT_EXCEEDED', `the query returns more than ${rowLimit} rows, the raw SQL row limit; narrow it (WHERE, LIMIT) or aggregate`, [
              { path: '$.sql', message: `more than ${rowLimit} rows`, rowLimit },
            ]),
          );
        }
      });
      stream.on('error', (err) => finish(err));
      stream.on('end', () => finish());
    });
  }
}
