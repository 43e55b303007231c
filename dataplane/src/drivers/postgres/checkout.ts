/**
 * Every pooled PostgreSQL connection the driver holds for more than one statement, and every
 * transaction it opens, goes through here: `withConnection` (hold, use, give back) and
 * `inTransaction` (BEGIN, the lock, `fn`, COMMIT or ROLLBACK, on a held connection).
 *
 * pg-pool stops listening for a client's 'error' events while it is checked out, and pg emits one
 * when the server ends the session between two statements (shutdown, crash, terminate): unheard,
 * that event would crash the process. While held, the error is kept and the connection is
 * destroyed instead of going back to the pool.
 */
import type pg from 'pg';

/** The advisory lock that serialises a dataset's DDL (schema changes, purge, the transactions table) between replicas. */
export const ddlLockKey = (datasetId: string): string => `data-access:ddl:${datasetId}`;

export interface ConnectionUse {
  /** Whether the connection may go back to the pool after `fn` failed with this error (default: unless the failure broke it). */
  reusableAfter?: (failure: unknown) => boolean;
  /** A statement run before the connection goes back (e.g. DISCARD ALL); if it fails the connection is destroyed. */
  reset?: string;
}

/**
 * `fn` on one connection, which goes back to the pool afterwards. After a failure, a transaction
 * `fn` left open (through `inTransaction`, or in its own SQL text: change-log.ts) is rolled back
 * first; a connection the failure broke, or that died while held, is destroyed instead.
 * `source`: the pool, or how to check a connection out of it (the read-only executor's login).
 */
export async function withConnection<T>(source: pg.Pool | (() => Promise<pg.PoolClient>), fn: (client: pg.PoolClient) => Promise<T>, use: ConnectionUse = {}): Promise<T> {
  const client = typeof source === 'function' ? await source() : await source.connect();
  let lost: Error | undefined;
  const onError = (err: Error) => (lost ??= err);
  client.on('error', onError);
  let failed = false;
  let failure: unknown;
  try {
    return await fn(client);
  } catch (err) {
    failed = true;
    failure = err;
    throw err;
  } finally {
    // pg-pool destroys a client released with an error instead of reusing it.
    let broken: unknown = lost ?? (failed && !(use.reusableAfter ?? leavesSessionUsable)(failure) ? (failure ?? true) : undefined);
    if (!broken) {
      try {
        if (failed) await client.query('ROLLBACK');
        if (use.reset) await client.query(use.reset);
      } catch (err) {
        broken = err;
      }
    }
    broken ??= lost;
    client.off('error', onError);
    client.release(broken ? (broken instanceof Error ? broken : true) : undefined);
  }
}

/** Whether the session survives the failure: an error the server answered for a statement does; anything else may not. */
export function leavesSessionUsable(failure: unknown): boolean {
  const code = (failure as { code?: unknown } | undefined)?.code;
  // SQLSTATEs of statement errors leave the session usable; connection-level codes (08, 57P) do not.
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !code.startsWith('08') && !code.startsWith('57P');
}

export interface TransactionOptions<T> extends ConnectionUse {
  /** Taken with pg_advisory_xact_lock first: released by the COMMIT or ROLLBACK. */
  lockKey?: string;
  /** BEGIN READ ONLY. */
  readOnly?: boolean;
  /** SET LOCAL for this transaction only; names and values come from the code (never from a request). */
  local?: Record<string, string | number>;
  /** Whether the result is committed (default: always); false rolls back and still returns it. */
  commit?: (result: T) => boolean;
}

/**
 * `fn` in one transaction on a connection of the pool: BEGIN (with its SET LOCALs, in the same
 * round trip), the lock, `fn`, COMMIT (or ROLLBACK when `commit` says no, or `fn` throws:
 * withConnection), and the connection back to the pool.
 */
export function inTransaction<T>(source: pg.Pool | (() => Promise<pg.PoolClient>), options: TransactionOptions<T>, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const begin = beginSql(options);
  return withConnection(
    source,
    async (client) => {
      await client.query(begin);
      if (options.lockKey !== undefined) await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [options.lockKey]);
      const result = await fn(client);
      await client.query(options.commit && !options.commit(result) ? 'ROLLBACK' : 'COMMIT');
      return result;
    },
    options,
  );
}

/** `BEGIN [READ ONLY]; SET LOCAL name = value; …` (simple protocol: one round trip). Pure. */
export function beginSql(options: Pick<TransactionOptions<unknown>, 'readOnly' | 'local'>): string {
  const locals = Object.entries(options.local ?? {}).map(([name, value]) => {
    if (!/^[a-z_]+$/.test(name) || !/^[A-Za-z0-9_]+$/.test(String(value))) throw new Error(`SET LOCAL ${name} = ${value}: not a setting name and plain value`);
    return `; SET LOCAL ${name} = ${value}`;
  });
  return `BEGIN${options.readOnly ? ' READ ONLY' : ''}${locals.join('')}`;
}
