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
