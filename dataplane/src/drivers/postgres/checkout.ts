/**
 * A pooled connection held for several statements. pg-pool stops listening for a client's
 * 'error' events while it is checked out, and pg emits one when the server ends the session
 * between two statements (shutdown, crash, terminate): unheard, that event would crash the
 * process. While held, the error is kept and the connection is released as broken.
 */
import type pg from 'pg';

export interface HeldConnection {
  client: pg.PoolClient;
  /** Returns the connection to the pool, or destroys it after a failure. */
  release(failure?: unknown): void;
}

export async function holdConnection(pool: pg.Pool): Promise<HeldConnection> {
  const client = await pool.connect();
  let failed: Error | undefined;
  const onError = (err: Error) => {
    failed ??= err;
  };
  client.on('error', onError);
  let released = false;
  return {
    client,
    release(failure?: unknown) {
      if (released) return;
      released = true;
      client.off('error', onError);
      // pg-pool destroys a client released with an error instead of reusing it.
      const broken = failed ?? (isBroken(failure) ? (failure as Error) : undefined);
      client.release(broken ?? undefined);
    },
  };
}

/** A failure that leaves the connection unusable (anything but an error the server answered). */
function isBroken(failure: unknown): boolean {
  if (!failure) return false;
  const code = (failure as { code?: unknown }).code;
  // SQLSTATEs of statement errors leave the session usable; connection-level codes do not.
  return !(typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !code.startsWith('08') && !code.startsWith('57P'));
}

/** The advisory lock that serialises a dataset's DDL (schema changes, purge, the transactions table) between replicas. */
export const ddlLockKey = (datasetId: string): string => `data-access:ddl:${datasetId}`;

export interface TransactionOptions<T> {
  /** Taken with pg_advisory_xact_lock first: released by the COMMIT or ROLLBACK. */
  lockKey?: string;
  /** Whether the result is committed (default: always); false rolls back and still returns it. */
  commit?: (result: T) => boolean;
}

/**
 * `fn` in one transaction on a connection of the pool: BEGIN, the lock, `fn`, COMMIT (or ROLLBACK
 * when `fn` throws or `commit` says no), and the connection back to the pool — destroyed when the
 * failure left it unusable.
 */
export async function inTransaction<T>(pool: pg.Pool, options: TransactionOptions<T>, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const held = await holdConnection(pool);
  const { client } = held;
  let failure: unknown;
  try {
    await client.query('BEGIN');
    if (options.lockKey !== undefined) await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [options.lockKey]);
    const result = await fn(client);
    await client.query(options.commit && !options.commit(result) ? 'ROLLBACK' : 'COMMIT');
    return result;
  } catch (err) {
    failure = err;
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    held.release(failure);
  }
}
