/**
 * Warehouse sessions: a bounded pool of logged-in snowflake-sdk connections per (login, account,
 * database, schema, warehouse, role). The executor's warehouse and the read-only role pick their
 * own pool, so a request never pays a `USE WAREHOUSE` or `USE ROLE` round trip. Logins use
 * `connect(cb)` (connectAsync resolved on a wrong password), with key-pair (`SNOWFLAKE_JWT`) or
 * password authentication. A failed login or a lost connection is the store outcome `unavailable`
 * (a 503); the broken session is dropped and the next request logs in anew, so the driver
 * recovers when the warehouse does, without a restart.
 */
import { StoreError } from '../../engine/contract.js';
import type { WarehouseCredentials } from './credentials.js';
import { isOutage } from './errors.js';
import { loadSnowflakeSdk, type SnowflakeConnection, type SnowflakeConnectionOptions, type SnowflakeStatement } from './sdk.js';

export interface SessionTarget {
  /** A pool of its own for the same login and context (the change feed's: its polls never wait behind writes). */
  pool?: string;
  account?: string;
  accessUrl?: string;
  database?: string;
  schema?: string;
  warehouse?: string;
  role?: string;
}

export interface ExecOptions {
  binds?: unknown[];
  /** Per-statement session parameters (QUERY_TAG, STATEMENT_TIMEOUT_IN_SECONDS), sent with the query. */
  parameters?: Record<string, unknown>;
  rowMode?: 'array' | 'object';
  /**
   * Submit asynchronously (`asyncExec`) and await completion through getQueryStatus and
   * getResultsFromQueryId: no HTTP request stays open while the warehouse runs the statement.
   */
  async?: boolean;
  /** Rows are streamed (the caller reads them from `statement.streamRows()`), not collected. */
  stream?: boolean;
  /** Called with the statement as soon as it is submitted (to cancel it while it runs). */
  onSubmit?: (statement: SnowflakeStatement) => void;
  /** A PUT's file, uploaded from memory (the SDK's `fileStream`): no local file is written. */
  fileStream?: Buffer;
}

export interface ExecResult {
  rows: unknown[];
  statement: SnowflakeStatement;
}

/** How often an asynchronously submitted statement's status is asked for. */
const ASYNC_POLL_MS = 25;

/** One logged-in connection, as the driver uses it. */
export class Session {
  /** Set when a statement met an outage: the session is destroyed on release, never reused. */
  broken = false;

  constructor(readonly connection: SnowflakeConnection) {}

  exec(sqlText: string, options: ExecOptions = {}): Promise<ExecResult> {
    if (options.async) return this.execAsync(sqlText, options);
    return new Promise((resolve, reject) => {
      const statement = this.connection.execute({
        sqlText,
        binds: options.binds as never,
        parameters: options.parameters,
        rowMode: options.rowMode ?? 'array',
        streamResult: options.stream,
        ...(options.fileStream ? { fileStream: options.fileStream } : {}),
        complete: (err, statement, rows) => {
          if (err) {
            if (isOutage(err)) this.broken = true;
            reject(err);
          } else resolve({ rows: rows ?? [], statement: statement as SnowflakeStatement });
        },
      });
      options.onSubmit?.(statement as SnowflakeStatement);
    });
  }

  private async execAsync(sqlText: string, options: ExecOptions): Promise<ExecResult> {
    return this.awaitResult(await this.submit(sqlText, options), options);
  }

  /** Submits a statement asynchronously (`asyncExec`): answers its query id at once. */
  submit(sqlText: string, options: ExecOptions): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      this.connection.execute({
        sqlText,
        binds: options.binds as never,
        parameters: options.parameters,
        asyncExec: true,
        complete: (err, statement) => {
          if (err) {
            if (isOutage(err)) this.broken = true;
            reject(err);
          } else resolve((statement as SnowflakeStatement).getQueryId());
        },
      });
    });
  }

  /**
   * Awaits an asynchronously submitted statement through getQueryStatus and getResultsFromQueryId.
   * The connection may serve other statements meanwhile (the SDK sends each over HTTP).
   */
  async awaitResult(queryId: string, options: ExecOptions): Promise<ExecResult> {
    try {
      for (;;) {
        // Throws the statement's own error (with its Snowflake code) when it failed.
        const status = await this.connection.getQueryStatusThrowIfError(queryId);
        if (!this.connection.isStillRunning(status as never)) break;
        await new Promise((r) => setTimeout(r, ASYNC_POLL_MS));
      }
      return await new Promise<ExecResult>((resolve, reject) => {
        this.connection
          .getResultsFromQueryId({
            queryId,
            rowMode: options.rowMode ?? 'array',
            complete: (err, statement, rows) => (err ? reject(err) : resolve({ rows: rows ?? [], statement: statement as SnowflakeStatement })),
          })
          .catch(reject);
      });
    } catch (err) {
      if (isOutage(err)) this.broken = true;
      throw err;
    }
  }
}

export interface SessionPoolOptions {
  /** Connections per pool (per login, warehouse and role). Default 8. */
  maxPerPool?: number;
  /** An idle connection older than this is logged out. Default 5 minutes. */
  idleMs?: number;
  /** How long a request waits for a free connection of a full pool. Default 10 s. */
  acquireTimeoutMs?: number;
}

interface Waiter {
  resolve(session: Session | undefined): void;
  timer: NodeJS.Timeout;
}

class Pool {
  readonly idle: { session: Session; since: number }[] = [];
  total = 0;
  readonly waiters: Waiter[] = [];
  constructor(readonly options: SnowflakeConnectionOptions) {}
}

const unavailable = (detail: string) => new StoreError({ kind: 'unavailable', detail });

/** `https://acme-main.snowflakecomputing.com` → `acme-main`: the SDK wants an account even with a URL. */
function accountOf(target: SessionTarget): string {
  if (target.account) return target.account;
  try {
    return new URL(target.accessUrl ?? '').hostname.split('.')[0] || 'account';
  } catch {
    return 'account';
  }
}

export function connectionOptions(target: SessionTarget, credentials: WarehouseCredentials): SnowflakeConnectionOptions {
  const auth =
    'privateKey' in credentials
      ? { authenticator: 'SNOWFLAKE_JWT', privateKey: credentials.privateKey, ...(credentials.passphrase ? { privateKeyPass: credentials.passphrase } : {}) }
      : { password: credentials.password };
  return {
    account: accountOf(target),
    ...(target.accessUrl ? { accessUrl: target.accessUrl } : {}),
    username: credentials.username,
    ...auth,
    ...(target.database ? { database: target.database } : {}),
    ...(target.schema ? { schema: target.schema } : {}),
    ...(target.warehouse ? { warehouse: target.warehouse } : {}),
    ...(target.role ? { role: target.role } : {}),
    application: 'data-access',
    // One login attempt per request: a store that is down answers 503 in seconds, not minutes.
    sfRetryMaxLoginRetries: 1,
  } as SnowflakeConnectionOptions;
}

export class SessionPools {
  private readonly pools = new Map<string, Pool>();
  private closed = false;
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly options: SessionPoolOptions = {}) {
    this.sweeper = setInterval(() => this.sweep(), Math.min(60_000, this.idleMs));
    this.sweeper.unref();
  }

  private get idleMs() {
    return this.options.idleMs ?? 300_000;
  }

  /** Runs `fn` on a session of the target's pool; a session that met an outage is destroyed afterwards. */
  async with<T>(target: SessionTarget, credentials: { credentials: WarehouseCredentials; fingerprint: string }, fn: (session: Session) => Promise<T>): Promise<T> {
    const session = await this.acquire(target, credentials);
    try {
      return await fn(session);
    } finally {
      this.release(session);
    }
  }

  /** Logged-in connections across every pool (for tests and the curious). */
  get size(): number {
    let n = 0;
    for (const pool of this.pools.values()) n += pool.total;
    return n;
  }

  private readonly poolOf = new Map<Session, Pool>();

  private async acquire(target: SessionTarget, { credentials, fingerprint }: { credentials: WarehouseCredentials; fingerprint: string }): Promise<Session> {
    if (this.closed) throw unavailable('the warehouse driver is closed');
    const key = JSON.stringify([fingerprint, target.account, target.accessUrl, target.database, target.schema, target.warehouse, target.role, target.pool]);
    let pool = this.pools.get(key);
    if (!pool) this.pools.set(key, (pool = new Pool(connectionOptions(target, credentials))));
    for (;;) {
      const idle = pool.idle.pop();
      if (!idle) break;
      if (idle.session.connection.isUp()) return this.lend(pool, idle.session);
      this.destroy(pool, idle.session);
    }
    if (pool.total < (this.options.maxPerPool ?? 8)) {
      pool.total += 1;
      try {
        return this.lend(pool, await this.login(pool.options));
      } catch (err) {
        pool.total -= 1;
        this.handOver(pool);
        throw err;
      }
    }
    const waited = await new Promise<Session | undefined>((resolve) => {
      const waiter: Waiter = {
        resolve,
        timer: setTimeout(() => {
          pool.waiters.splice(pool.waiters.indexOf(waiter), 1);
          resolve(undefined);
        }, this.options.acquireTimeoutMs ?? 10_000),
      };
      pool.waiters.push(waiter);
    });
    if (!waited) throw unavailable('every warehouse session is busy');
    return this.lend(pool, waited);
  }

  private lend(pool: Pool, session: Session): Session {
    this.poolOf.set(session, pool);
    return session;
  }

  private async login(options: SnowflakeConnectionOptions): Promise<Session> {
    const sdk = await loadSnowflakeSdk();
    const connection = sdk.createConnection(options);
    await new Promise<void>((resolve, reject) =>
      connection.connect((err) => {
        if (!err) return resolve();
        // A wrong login, a role or warehouse the user may not use, or no answer: all 503s, logged by the caller.
        const code = (err as { code?: unknown }).code;
        reject(unavailable(`Snowflake login failed${code ? ` (${String(code)})` : ''}: ${err.message}`));
      }),
    );
    return new Session(connection);
  }

  private release(session: Session): void {
    const pool = this.poolOf.get(session);
    this.poolOf.delete(session);
    if (!pool) return;
    if (session.broken || this.closed || !session.connection.isUp()) {
      this.destroy(pool, session);
      this.handOver(pool);
      return;
    }
    const waiter = pool.waiters.shift();
    if (waiter) {
      clearTimeout(waiter.timer);
      waiter.resolve(session);
      return;
    }
    pool.idle.push({ session, since: Date.now() });
  }

  /** A slot came free: the first waiter logs in on it (or is told to try again). */
  private handOver(pool: Pool): void {
    const waiter = pool.waiters.shift();
    if (!waiter) return;
    clearTimeout(waiter.timer);
    pool.total += 1;
    this.login(pool.options).then(
      (session) => waiter.resolve(session),
      () => {
        pool.total -= 1;
        waiter.resolve(undefined);
      },
    );
  }

  private destroy(pool: Pool, session: Session): void {
    pool.total -= 1;
    session.connection.destroy(() => undefined);
  }

  private sweep(): void {
    const cutoff = Date.now() - this.idleMs;
    for (const pool of this.pools.values()) {
      for (let i = pool.idle.length - 1; i >= 0; i--) {
        if (pool.idle[i].since < cutoff) this.destroy(pool, pool.idle.splice(i, 1)[0].session);
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    const all: Promise<void>[] = [];
    for (const pool of this.pools.values()) {
      for (const waiter of pool.waiters.splice(0)) {
        clearTimeout(waiter.timer);
        waiter.resolve(undefined);
      }
      for (const { session } of pool.idle.splice(0)) {
        pool.total -= 1;
        all.push(new Promise((resolve) => session.connection.destroy(() => resolve())));
      }
    }
    this.pools.clear();
    await Promise.all(all);
  }
}
