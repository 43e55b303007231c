/**
 * The read-only executor behind the raw SQL endpoint on PostgreSQL: the `readOnly` hook of
 * PostgresDriver.
 *
 * Read-only is enforced by the database, in layers:
 *
 * 1. A dedicated LOGIN role per dataset (`das_ro_<schema>_<hash of database and schema>`: role
 *    names are cluster-wide, schemas are per database) with NOSUPERUSER NOCREATEDB NOCREATEROLE
 *    NOINHERIT NOREPLICATION NOBYPASSRLS, member of no role (any membership is revoked at every
 *    prepare, so no pg_read_server_files and the like), holding only CONNECT on the database,
 *    USAGE on the dataset's database schema and SELECT on its tables (ALTER DEFAULT PRIVILEGES
 *    covers tables created later; prepare re-grants). Other datasets' schemas are not granted, so
 *    reading them is "permission denied". The role's defaults: default_transaction_read_only on,
 *    a statement_timeout ceiling, an idle-in-transaction timeout, standard_conforming_strings on
 *    (the rewrite lexer relies on it) and search_path = the dataset schema.
 *
 *    Why a separate login and not `SET ROLE` on the admin connection: SET ROLE only changes the
 *    current user; the session user stays the superuser (or admin), and any statement can switch
 *    back with `SELECT set_config('role', 'postgres', false)` or RESET ROLE. SET SESSION
 *    AUTHORIZATION is no better (a superuser-authenticated session can reset it). Only a session
 *    authenticated as the unprivileged role cannot regain privileges.
 *
 * 2. Every query runs in `BEGIN READ ONLY` with `SET LOCAL statement_timeout`, and is always rolled
 *    back, never committed. A function with side effects called from a SELECT (even a SECURITY
 *    DEFINER one owned by a superuser) fails with "cannot execute INSERT in a read-only
 *    transaction".
 *
 * 3. The statement runs as `DECLARE c NO SCROLL CURSOR FOR <statement>` then `FETCH <limit+1>`:
 *    DECLARE accepts only a query (SELECT, VALUES, TABLE, WITH … SELECT) and refuses
 *    data-modifying WITH clauses, so INSERT/UPDATE/DELETE/DDL/SET/COPY/GRANT never even parse; the
 *    cursor also caps how many rows leave the server. The extended query protocol is forced, and
 *    it refuses a text holding more than one statement.
 *
 * 4. After each query: ROLLBACK and DISCARD ALL, so nothing a query did to the session (session
 *    advisory locks, settings) survives into the next one; a connection in doubt is destroyed.
 *
 * 5. Built-ins with lasting side effects that a read-only transaction lets through
 *    (SIDE_EFFECT_FUNCTIONS: pg_logical_emit_message writes the WAL) lose PUBLIC's EXECUTE in the
 *    dataset's database when the admin is a superuser; otherwise a warning names the statement.
 *
 * Bounds on the data plane itself: rows are fetched one by one and their JSON size counted against
 * a budget (RESULT_TOO_LARGE), a protocol message larger than the budget closes the connection
 * before it is read (result-budget.ts), at most maxConcurrentQueries run at once in the process,
 * and a connection dying mid-query (the checked-out client's 'error' event is listened to) is a
 * 503 DATABASE_UNAVAILABLE, never a crash.
 *
 * The role's password: random (24 bytes), generated once and kept in an admin-only table
 * `das_internal.readonly_credentials` of the same database, so that every data-plane replica (and
 * a restart) uses the same password instead of resetting each other's; it is sent to the server
 * only as a SCRAM-SHA-256 verifier (ALTER ROLE … PASSWORD 'SCRAM-SHA-256$…'), so it never appears
 * in the server's statement log. Delete the row to rotate it: the next prepare generates a new one,
 * and a replica whose login then fails re-reads it (re-prepares) once.
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Logger } from 'pino';
import type { DatasetConfig } from '../../../../model/types.js';
import { hasSqlQueries } from '../../../../model/queries.js';
import type { ErrorDetail } from '../../engine/contract.js';
import { StoreError } from '../../engine/contract.js';
import type { RawQuery, RawQueryOptions } from '../../engine/contract.js';
import { skipBlockComment } from '../../engine/sql/lexing.js';
import { quoteIdent as q } from '../../engine/sql/naming.js';
import { inTransaction } from './checkout.js';
import { GuardedClient, jsonSize, Slots } from './result-budget.js';
import { databaseSchemaOf } from './sql.js';
import { applicationName, tagComment } from './tags.js';
import { recordTypes } from './types.js';

export interface ReadOnlyExecutorOptions {
  logger?: Logger;
  /** Connections per dataset (per data-plane replica). Default 4. */
  poolSize?: number;
  /**
   * Raw queries running at once in this process, all datasets together. Default 4. With the result
   * budget (maxBytes) this bounds the memory raw SQL answers take: each holds its rows, then their
   * JSON text while it is sent.
   */
  maxConcurrentQueries?: number;
  /** How long a query waits for a free connection before a 503. Default 10 s. */
  connectionTimeoutMs?: number;
  /** The role's statement_timeout default: a ceiling should a session skip SET LOCAL. Default 60 s. */
  roleStatementTimeoutMs?: number;
  /** temp_file_limit for the role (set only when the admin is a superuser). Default '1GB'. */
  tempFileLimit?: string;
}

interface DatasetState {
  role: string;
  password: string;
  pool: pg.Pool;
}

/**
 * Built-in functions that PUBLIC may execute by default and that have lasting effects a read-only
 * transaction does not stop: pg_logical_emit_message (both overloads) writes its message to the
 * WAL (a query calling it 20 times with 1 MB wrote 20 MB of WAL and reached logical-decoding
 * consumers). Checked on PostgreSQL 17 for the others PUBLIC may execute: pg_notify (delivered
 * only at commit, and raw queries never commit), lo_create/lo_from_bytea/lo_unlink/lo_put and
 * writing lo_open (refused in a read-only transaction), lo_get/loread (per-object ACLs),
 * brin_summarize_*, brin_desummarize_range, gin_clean_pending_list (owner only), replication slot
 * functions (REPLICATION only), pg_stat_reset*, pg_switch_wal, pg_log_standby_snapshot (not
 * PUBLIC), query_to_xml (runs queries only, read-only); txid_current/pg_current_xact_id assign a
 * transaction id (about 40 bytes of WAL at rollback, like any write) and advisory locks last at
 * most until the statement ends: both are left, see docs/raw-sql.md.
 */
export const SIDE_EFFECT_FUNCTIONS = ['pg_logical_emit_message'];

/** The schema holding the read-only roles' passwords: admin only, never granted to anyone. */
export const CREDENTIALS_SCHEMA = 'das_internal';
const CREDENTIALS_TABLE = `${q(CREDENTIALS_SCHEMA)}.readonly_credentials`;
const CURSOR = 'das_raw_query';
/** Serialises replicas preparing read-only roles at once. */
const READONLY_ROLES_LOCK = 'data-access:readonly-roles';

/** The per-dataset role: readable, unique per database and schema, at most 63 bytes. */
export function readOnlyRoleName(database: string, dbSchema: string): string {
  const hash = createHash('sha256').update(`${database}\0${dbSchema}`).digest('hex').slice(0, 8);
  const readable = dbSchema.toLowerCase().replace(/[^a-z0-9_]/g, '_').slice(0, 40);
  return `das_ro_${readable}_${hash}`;
}

/** A SCRAM-SHA-256 verifier as PostgreSQL stores it (RFC 5802/7677; what psql's \password sends). */
export function scramVerifier(password: string, iterations = 4096): string {
  const salt = randomBytes(16);
  const salted = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

/** The role serves the raw SQL endpoint and SQL-based query schemas (spec.queries). */
const needsReadOnlyRole = (dataset: DatasetConfig) => dataset.auth.iam.rawSqlEndpointEnabled || hasSqlQueries(dataset);

export class PostgresReadOnlyExecutor {
  /** Per admin pool (one per database URL), per database schema. */
  private readonly states = new Map<pg.Pool, Map<string, Promise<DatasetState>>>();
  private closed = false;
  private readonly slots: Slots;

  constructor(private readonly options: ReadOnlyExecutorOptions = {}) {
    this.slots = new Slots(options.maxConcurrentQueries ?? 4);
  }

  /**
   * Creates or repairs the dataset's read-only role and grants; called after the dataset's DDL.
   * For a dataset without rawSqlEndpointEnabled (and no SQL query schema) no role is created, and
   * an existing one (the endpoint was switched off) loses LOGIN and its connections.
   */
  async prepare(dataset: DatasetConfig, adminPool: pg.Pool): Promise<void> {
    if (!needsReadOnlyRole(dataset)) return this.disable(dataset, adminPool);
    await this.schedulePrepare(dataset, adminPool);
  }

  /** The dataset was deleted: its role loses LOGIN and its connections close, as when disabled. */
  retire(dataset: DatasetConfig, adminPool: pg.Pool): Promise<void> {
    return this.disable(dataset, adminPool);
  }

  private async disable(dataset: DatasetConfig, adminPool: pg.Pool): Promise<void> {
    const dbSchema = databaseSchemaOf(dataset);
    const byAdmin = this.states.get(adminPool);
    const previous = byAdmin?.get(dbSchema);
    byAdmin?.delete(dbSchema);
    await previous?.then((state) => state.pool.end()).catch(() => undefined);
    const { db } = (await adminPool.query<{ db: string }>('SELECT current_database() AS db')).rows[0];
    const role = readOnlyRoleName(db, dbSchema);
    const { rowCount } = await adminPool.query('SELECT 1 FROM pg_roles WHERE rolname = $1 AND rolcanlogin', [role]);
    if (rowCount) await adminPool.query(`ALTER ROLE ${q(role)} NOLOGIN`);
  }

  private schedulePrepare(dataset: DatasetConfig, adminPool: pg.Pool): Promise<DatasetState> {
    if (this.closed) return Promise.reject(new Error('the read-only executor is closed'));
    const dbSchema = databaseSchemaOf(dataset);
    let byAdmin = this.states.get(adminPool);
    if (!byAdmin) this.states.set(adminPool, (byAdmin = new Map()));
    const previous = byAdmin.get(dbSchema);
    const next = (previous ?? Promise.resolve(undefined))
      .catch(() => undefined)
      .then((prev) => this.setUp(dbSchema, adminPool, prev));
    byAdmin.set(dbSchema, next);
    // A failed prepare leaves no state behind, so that the next query or prepare tries again.
    next.catch(() => {
      if (byAdmin.get(dbSchema) === next) byAdmin.delete(dbSchema);
    });
    return next;
  }

  private async setUp(dbSchema: string, adminPool: pg.Pool, previous: DatasetState | undefined): Promise<DatasetState> {
    if (dbSchema === CREDENTIALS_SCHEMA) throw new Error(`database schema "${CREDENTIALS_SCHEMA}" is reserved for the data plane`);
    // Serialises replicas preparing at once (CREATE ROLE, GRANT and the credentials row).
    const { role, password } = await inTransaction(adminPool, { lockKey: READONLY_ROLES_LOCK }, async (admin) => {
      const me = (await admin.query<{ db: string; super: boolean }>('SELECT current_database() AS db, rolsuper AS super FROM pg_roles WHERE rolname = current_user')).rows[0];
      const role = readOnlyRoleName(me.db, dbSchema);
      const R = q(role);
      const password = await this.storedPassword(admin, role);

      const current = (
        await admin.query<Record<string, boolean>>(
          'SELECT rolsuper, rolcreatedb, rolcreaterole, rolinherit, rolreplication, rolbypassrls, rolcanlogin FROM pg_roles WHERE rolname = $1',
          [role],
        )
      ).rows[0];
      if (!current) await admin.query(`CREATE ROLE ${R} LOGIN NOINHERIT`);
      // Only attributes that differ are named: PostgreSQL lets only superusers mention SUPERUSER,
      // REPLICATION or BYPASSRLS at all, and the admin may be a mere CREATEROLE role. A role
      // someone made a superuser therefore fails here unless the admin is one: never served so.
      const wanted: [string, boolean, string][] = [
        ['rolsuper', false, 'NOSUPERUSER'],
        ['rolcreatedb', false, 'NOCREATEDB'],
        ['rolcreaterole', false, 'NOCREATEROLE'],
        ['rolinherit', false, 'NOINHERIT'],
        ['rolreplication', false, 'NOREPLICATION'],
        ['rolbypassrls', false, 'NOBYPASSRLS'],
        ['rolcanlogin', true, 'LOGIN'],
      ];
      const fixes = current ? wanted.filter(([column, value]) => current[column] !== value).map(([, , clause]) => clause) : [];
      await admin.query(`ALTER ROLE ${R} WITH ${[...fixes, `PASSWORD '${scramVerifier(password)}'`].join(' ')}`);
      const settings: [string, string][] = [
        ['default_transaction_read_only', 'on'],
        ['statement_timeout', String(this.options.roleStatementTimeoutMs ?? 60000)],
        ['idle_in_transaction_session_timeout', String(Math.max(60000, this.options.roleStatementTimeoutMs ?? 60000))],
        ['standard_conforming_strings', 'on'],
      ];
      for (const [name, value] of settings) await admin.query(`ALTER ROLE ${R} SET ${name} = ${value}`);
      await admin.query(`ALTER ROLE ${R} SET search_path = ${q(dbSchema)}`);
      if (me.super) await admin.query(`ALTER ROLE ${R} SET temp_file_limit = '${(this.options.tempFileLimit ?? '1GB').replace(/'/g, '')}'`);
      const memberships = await admin.query<{ granted: string }>(
        'SELECT m.roleid::regrole::text AS granted FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.member WHERE r.rolname = $1',
        [role],
      );
      for (const { granted } of memberships.rows) await admin.query(`REVOKE ${granted} FROM ${R}`);

      await admin.query(`GRANT CONNECT ON DATABASE ${q(me.db)} TO ${R}`);
      await this.lockDownPublicSchema(admin, role);
      await this.lockDownFunctions(admin, role, me.db, me.super);
      const schemaExists = (await admin.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [dbSchema])).rowCount;
      if (schemaExists) {
        const S = q(dbSchema);
        await admin.query(`GRANT USAGE ON SCHEMA ${S} TO ${R}`);
        await admin.query(`REVOKE CREATE ON SCHEMA ${S} FROM ${R}`);
        await admin.query(`GRANT SELECT ON ALL TABLES IN SCHEMA ${S} TO ${R}`);
        await admin.query(`REVOKE INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON ALL TABLES IN SCHEMA ${S} FROM ${R}`);
        await admin.query(`ALTER DEFAULT PRIVILEGES IN SCHEMA ${S} GRANT SELECT ON TABLES TO ${R}`);
      }
      return { role, password };
    });
    if (previous && previous.role === role && previous.password === password) return previous;
    if (previous) void previous.pool.end().catch(() => undefined);
    return { role, password, pool: this.openPool(adminPool, role, password) };
  }

  /** The role's password from the admin-only credentials table, created on first use. */
  private async storedPassword(admin: pg.PoolClient, role: string): Promise<string> {
    await admin.query(`CREATE SCHEMA IF NOT EXISTS ${q(CREDENTIALS_SCHEMA)}`);
    await admin.query(`REVOKE ALL ON SCHEMA ${q(CREDENTIALS_SCHEMA)} FROM PUBLIC`);
    await admin.query(
      `CREATE TABLE IF NOT EXISTS ${CREDENTIALS_TABLE} (role_name text PRIMARY KEY, password text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`,
    );
    await admin.query(`REVOKE ALL ON ${CREDENTIALS_TABLE} FROM PUBLIC`);
    await admin.query(`INSERT INTO ${CREDENTIALS_TABLE} (role_name, password) VALUES ($1, $2) ON CONFLICT (role_name) DO NOTHING`, [
      role,
      randomBytes(24).toString('base64url'),
    ]);
    return (await admin.query<{ password: string }>(`SELECT password FROM ${CREDENTIALS_TABLE} WHERE role_name = $1`, [role])).rows[0].password;
  }

  /**
   * The role gets nothing on schema public. PUBLIC's CREATE there (the default before
   * PostgreSQL 15) is revoked when this admin may; otherwise a warning (the read-only transaction
   * and the cursor still refuse CREATE).
   */
  private async lockDownPublicSchema(admin: pg.PoolClient, role: string): Promise<void> {
    const found = await admin.query<{ create: boolean; mine: boolean }>(
      `SELECT has_schema_privilege($1, n.oid, 'CREATE') AS create,
              (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) OR pg_has_role(current_user, n.nspowner, 'USAGE') AS mine
         FROM pg_namespace n WHERE n.nspname = 'public'`,
      [role],
    );
    const publicSchema = found.rows[0];
    if (!publicSchema) return;
    await admin.query(`REVOKE ALL ON SCHEMA public FROM ${q(role)}`);
    if (publicSchema.create) {
      if (publicSchema.mine) await admin.query('REVOKE CREATE ON SCHEMA public FROM PUBLIC');
      else this.options.logger?.warn({ role }, 'PUBLIC may CREATE in schema public and this admin cannot revoke it; the raw SQL role inherits that privilege');
    }
  }

  /**
   * Takes EXECUTE on the built-in functions with lasting side effects that a read-only transaction
   * does not stop (SIDE_EFFECT_FUNCTIONS) away from PUBLIC, in this database, when the admin is a
   * superuser (only the functions' owner can); otherwise it logs the statement for an operator.
   */
  private async lockDownFunctions(admin: pg.PoolClient, role: string, database: string, superuser: boolean): Promise<void> {
    const found = await admin.query<{ signature: string }>(
      `SELECT format('pg_catalog.%I(%s)', p.proname, oidvectortypes(p.proargtypes)) AS signature
         FROM pg_proc p
        WHERE p.pronamespace = 'pg_catalog'::regnamespace AND p.proname = ANY($2) AND has_function_privilege($1, p.oid, 'EXECUTE')
        ORDER BY 1`,
      [role, SIDE_EFFECT_FUNCTIONS],
    );
    const open = found.rows.map((r) => r.signature);
    if (!open.length) return;
    if (superuser) {
      for (const fn of open) {
        await admin.query(`REVOKE EXECUTE ON FUNCTION ${fn} FROM PUBLIC`);
        await admin.query(`REVOKE EXECUTE ON FUNCTION ${fn} FROM ${q(role)}`);
      }
      return;
    }
    const statement = `REVOKE EXECUTE ON FUNCTION ${open.join(', ')} FROM PUBLIC;`;
    this.options.logger?.warn(
      { role, database, functions: open, run: statement },
      `raw SQL queries of this database can call ${open.join(', ')}, which write to the WAL even in a read-only transaction; as a superuser, in database "${database}", run: ${statement}`,
    );
  }

  private openPool(adminPool: pg.Pool, role: string, password: string): pg.Pool {
    // The admin pool's resolved target (URL, PG* variables and defaults, as pg resolves them).
    const target = new pg.Client(adminPool.options as pg.ClientConfig);
    const pool = new pg.Pool({
      host: target.host,
      port: target.port,
      database: target.database,
      ssl: target.ssl as pg.PoolConfig['ssl'],
      stream: adminPool.options.stream,
      keepAlive: adminPool.options.keepAlive,
      user: role,
      password,
      max: this.options.poolSize ?? 4,
      idleTimeoutMillis: 30000,
      connectionTimeoutMillis: this.options.connectionTimeoutMs ?? 10000,
      application_name: 'data-access-raw-sql',
      types: rawTypes,
      Client: GuardedClient,
    });
    pool.on('error', (err) => this.options.logger?.warn({ err: err.message, role }, 'idle read-only PostgreSQL connection failed'));
    return pool;
  }

  private async ensure(dataset: DatasetConfig, adminPool: pg.Pool): Promise<DatasetState> {
    // The endpoint checks this first; here it keeps a switched-off dataset from re-creating its role.
    if (!needsReadOnlyRole(dataset)) throw refused('forbidden', 'RAW_SQL_DISABLED', `the raw SQL endpoint is not enabled for dataset "${dataset.id}"`);
    const existing = this.states.get(adminPool)?.get(databaseSchemaOf(dataset));
    try {
      return await (existing ?? this.schedulePrepare(dataset, adminPool));
    } catch (err) {
      this.options.logger?.error({ err: (err as Error).message, dataset: dataset.id }, 'could not prepare the read-only role');
      throw isConnectionFailure(err) ? databaseUnavailable() : unavailable();
    }
  }

  /** A connection as the read-only role; a failed login (rotated password, dropped role) re-prepares once. */
  private async connect(dataset: DatasetConfig, adminPool: pg.Pool): Promise<pg.PoolClient> {
    let state = await this.ensure(dataset, adminPool);
    for (let attempt = 0; ; attempt++) {
      try {
        return await state.pool.connect();
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (attempt === 0 && (code === '28P01' || code === '28000')) {
          this.options.logger?.warn({ code, role: state.role }, 'read-only login failed; preparing the role again');
          try {
            state = await this.schedulePrepare(dataset, adminPool);
          } catch (prepareErr) {
            throw isConnectionFailure(prepareErr) ? databaseUnavailable() : unavailable();
          }
          continue;
        }
        this.options.logger?.error({ err: (err as Error).message, code, role: state.role }, 'no read-only PostgreSQL connection');
        if (/timeout/i.test((err as Error).message) && !code) throw busy();
        throw isConnectionFailure(err) ? databaseUnavailable() : unavailable();
      }
    }
  }

  async query(dataset: DatasetConfig, adminPool: pg.Pool, query: RawQuery, options: RawQueryOptions): Promise<Record<string, unknown>[]> {
    const { rowLimit, timeoutMs } = options;
    const maxBytes = options.maxBytes ?? DEFAULT_MAX_RESULT_BYTES;
    for (const [name, value] of Object.entries({ rowLimit, timeoutMs, maxBytes })) {
      if (!Number.isSafeInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got ${value}`);
    }
    if (!(await this.slots.acquire(this.options.connectionTimeoutMs ?? 10000))) throw busy();
    try {
      return await this.run(dataset, adminPool, query, { rowLimit, timeoutMs, maxBytes, tags: options.tags, executor: options.executor });
    } finally {
      this.slots.release();
    }
  }

  private async run(dataset: DatasetConfig, adminPool: pg.Pool, query: RawQuery, options: RawQueryOptions & { maxBytes: number }): Promise<Record<string, unknown>[]> {
    const { timeoutMs, maxBytes } = options;
    let guard: GuardedClient['frames'] | undefined;
    let connectionLost: Error | undefined;
    let rowsSeen = 0;
    const prefix = `${tagComment(options)}DECLARE ${CURSOR} NO SCROLL CURSOR FOR `;
    const mapped = (err: pg.DatabaseError) => toRawSqlError(err, query.text, [...prefix].length, timeoutMs);
    try {
      return await inTransaction(
        () => this.connect(dataset, adminPool),
        {
          readOnly: true,
          local: { statement_timeout: timeoutMs },
          // Never committed, and the session reset after: nothing a query did survives it.
          commit: () => false,
          reset: 'DISCARD ALL',
          // A refusal of the statement leaves the session usable; a cut result, a cancel or server trouble does not.
          reusableAfter: (err) => err instanceof StoreError || (err instanceof pg.DatabaseError && !guard?.tripped && !isBusy(mapped(err))),
        },
        async (client) => {
          guard = (client as unknown as GuardedClient).frames;
          // A checked-out pg client emits 'error' when its connection dies (server stopped, network
          // lost); the query itself fails too, and is answered below.
          const onError = (err: Error) => {
            connectionLost ??= err;
            // The guard closing the connection on an oversized result is no loss worth a warning.
            if (!guard?.tripped) this.options.logger?.warn({ err: err.message, dataset: dataset.id }, 'read-only PostgreSQL connection lost during a raw query');
          };
          client.on('error', onError);
          try {
            return await this.select(client, guard, query, prefix, options, (n) => (rowsSeen = n));
          } finally {
            guard.disarm();
            client.off('error', onError);
          }
        },
      );
    } catch (err) {
      if (err instanceof StoreError) throw err;
      if (guard?.tripped) throw resultTooLarge(maxBytes, rowsSeen, guard.tripped);
      if (err instanceof pg.DatabaseError) throw mapped(err);
      if (connectionLost || isConnectionFailure(err)) throw databaseUnavailable();
      throw err;
    }
  }

  /** The statement through a cursor, its rows checked against the row limit and the result budget. */
  private async select(
    client: pg.PoolClient,
    guard: GuardedClient['frames'],
    query: RawQuery,
    prefix: string,
    options: RawQueryOptions & { maxBytes: number },
    progress: (rows: number) => void,
  ): Promise<Record<string, unknown>[]> {
    const { rowLimit, maxBytes } = options;
    if (options.tags) await client.query("SELECT set_config('application_name', $1, true)", [applicationName(options)]);
    // No single message (a row, or an error repeating a huge value) may exceed the budget.
    guard.arm(maxBytes);
    // queryMode 'extended' even without values: the simple protocol would run `…; DELETE …`.
    await client.query({ text: prefix + query.text, values: query.values, queryMode: 'extended' } as pg.QueryConfig);
    const { rows, fields } = await this.fetch(client, rowLimit, maxBytes, progress);
    guard.disarm();
    const names = fields.map((f) => f.name);
    const duplicates = [...new Set(names.filter((name, i) => names.indexOf(name) !== i))];
    if (duplicates.length) {
      throw refused('invalid', 'DUPLICATE_COLUMN_NAMES', `the result has several columns named ${duplicates.map((d) => `"${d}"`).join(', ')}; give each column a distinct alias`, [
        { path: '$.sql', message: 'duplicate column names', columns: duplicates },
      ]);
    }
    if (rows.length > rowLimit) {
      throw refused('invalid', 'ROW_LIMIT_EXCEEDED', `the query returns more than ${rowLimit} rows, the raw SQL row limit; narrow it (WHERE, LIMIT) or aggregate`, [
        { path: '$.sql', message: `more than ${rowLimit} rows`, rowLimit },
      ]);
    }
    return rows;
  }

  /**
   * FETCHes the cursor's rows (at most rowLimit + 1) one by one as they arrive, adding up their
   * JSON size: the first row that takes the total past maxBytes ends the connection (the guard),
   * so the rows are never all in memory first.
   */
  private fetch(client: pg.PoolClient, rowLimit: number, maxBytes: number, progress: (rows: number) => void): Promise<{ rows: Record<string, unknown>[]; fields: pg.FieldDef[] }> {
    const guard = (client as unknown as GuardedClient).frames;
    return new Promise((resolve, reject) => {
      const rows: Record<string, unknown>[] = [];
      let keyBytes: number | undefined;
      let bytes = 2;
      const fetch = client.query(new pg.Query(`FETCH FORWARD ${rowLimit + 1} FROM ${CURSOR}`));
      fetch.on('row', (row: Record<string, unknown>) => {
        if (guard.tripped) return;
        // Per row: braces, a comma, and per column its quoted key, a colon and a comma.
        keyBytes ??= Object.keys(row).reduce((sum, name) => sum + name.length + 4, 3);
        bytes += keyBytes;
        for (const key in row) bytes += jsonSize(row[key]);
        if (bytes > maxBytes) {
          guard.trip('the rows');
          return;
        }
        rows.push(row);
        progress(rows.length);
      });
      fetch.on('error', reject);
      // The rest of the answer may have been in the chunk that tripped the guard: still refused.
      fetch.on('end', (result: pg.QueryResult) => (guard.tripped ? reject(new Error(`raw query result refused: ${guard.tripped}`)) : resolve({ rows, fields: result.fields })));
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const states = [...this.states.values()].flatMap((byAdmin) => [...byAdmin.values()]);
    this.states.clear();
    await Promise.all(states.map((state) => state.then((s) => s.pool.end()).catch(() => undefined)));
  }
}

const BYTEA = 17;
const TIMESTAMP = 1114;
const INTERVAL = 1186;

/**
 * How result values reach JSON: as for record reads (bigint as a number when exact, else a string;
 * dates `YYYY-MM-DD`; timestamptz ISO-8601 in UTC; numeric as a string; json parsed), and bytea,
 * interval and timestamp without time zone in PostgreSQL's own text form (`\x…`,
 * `1 day 02:00:00`, `2024-05-01 12:30:00`): no objects, and no shift by the process's time zone.
 */
const rawTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === BYTEA || oid === INTERVAL || oid === TIMESTAMP) return (value: string) => value;
    return recordTypes.getTypeParser(oid, format);
  },
};

/** What the store refused, in its own terms (engine/store-outcomes.ts maps the problem to a status). */
const refused = (problem: 'invalid' | 'forbidden' | 'conflict' | 'busy', code: string, message: string, details: ErrorDetail[] = []) =>
  new StoreError({ kind: 'query-refused', problem, code, message, details });
const unavailable = () => refused('busy', 'RAW_SQL_UNAVAILABLE', 'the read-only connection for raw SQL is not available; try again later');
const busy = () => refused('busy', 'RAW_SQL_BUSY', 'raw SQL queries are all busy; try again shortly');
const isBusy = (err: StoreError) => err.failure.kind === 'query-refused' && err.failure.problem === 'busy';
const databaseUnavailable = () => refused('busy', 'DATABASE_UNAVAILABLE', 'the database could not run the query; try again later');

/** Default budget for a result's JSON size (RAW_SQL_MAX_BYTES): 8 MiB. */
export const DEFAULT_MAX_RESULT_BYTES = 8 * 1024 * 1024;

function resultTooLarge(maxBytes: number, rows: number, what: string): StoreError {
  const after = what === 'the rows' ? `after ${rows} row${rows === 1 ? '' : 's'}` : `${what} arrived after ${rows} row${rows === 1 ? '' : 's'}`;
  return refused('invalid', 'RESULT_TOO_LARGE', `the query's result is larger than ${maxBytes} bytes, the raw SQL result limit (${after}); select fewer or smaller columns, narrow it (WHERE, LIMIT) or aggregate`, [
    { path: '$.sql', message: `result larger than ${maxBytes} bytes`, maxBytes, rows },
  ]);
}

const NETWORK_CODES = /^(ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|ECONNABORTED)$/;
/** pg's own messages for a connection that died or never came up (they carry no code). */
const CONNECTION_MESSAGES = /Connection terminated|connection error|not queryable|Client was closed|Cannot use a pool after calling end/i;

/** The server cannot be reached, or it ended the session (shutdown, crash, too many connections). */
export function isConnectionFailure(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  if (err instanceof AggregateError) return err.errors.some(isConnectionFailure);
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && (NETWORK_CODES.test(code) || code.startsWith('08') || /^57P0[123]$/.test(code) || code === '53300')) return true;
  return typeof message === 'string' && CONNECTION_MESSAGES.test(message);
}

/** 1-based character position of the statement's first token (after blanks and comments). */
export function firstTokenPosition(sql: string): number {
  let i = 0;
  for (;;) {
    while (i < sql.length && /\s/.test(sql[i])) i += 1;
    if (sql.startsWith('--', i)) {
      const eol = sql.indexOf('\n', i);
      i = eol === -1 ? sql.length : eol + 1;
    } else if (sql.startsWith('/*', i)) {
      i = skipBlockComment(sql, i);
    } else break;
  }
  return [...sql.slice(0, i)].length + 1;
}

const WRITE_KEYWORDS = /^(insert|update|delete|merge)\b/i;

/** Longest database message passed on, in characters. */
const MAX_MESSAGE = 2000;
const clip = (message: string) => (message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE)}… (${message.length - MAX_MESSAGE} more characters)` : message);

/**
 * Maps an error PostgreSQL raised for the caller's statement to what the store refused and why.
 * What the SQL text can cause is `invalid` (or `forbidden`) with PostgreSQL's own message (and
 * position, hint, SQLSTATE); connection and server trouble is `busy` without internals.
 */
export function toRawSqlError(err: pg.DatabaseError, statement: string, prefixChars: number, timeoutMs: number): StoreError {
  const code = err.code ?? '';
  const cls = code.slice(0, 2);
  const raw = Number(err.position);
  const position = Number.isInteger(raw) && raw - prefixChars >= 1 ? raw - prefixChars : undefined;
  // PostgreSQL repeats a bad input value in full in its message ("invalid input syntax … 'xxxx…'").
  const text = clip(err.message);
  const detail: ErrorDetail = {
    path: '$.sql',
    message: text,
    sqlState: code,
    ...(position !== undefined ? { position } : {}),
    ...(err.hint ? { hint: err.hint } : {}),
  };
  const PROBLEM = { 400: 'invalid', 403: 'forbidden', 409: 'conflict', 503: 'busy' } as const;
  const fail = (status: keyof typeof PROBLEM, apiCode: string, message: string) => refused(PROBLEM[status], apiCode, message, [detail]);
  const at = position !== undefined ? ` (at character ${position})` : '';

  const readOnly = code === '25006' || (cls === '25' && /read-write|read-only/i.test(err.message)) || (code === '0A000' && /data-modifying/i.test(err.message));
  if (readOnly) {
    return fail(400, 'READ_ONLY_VIOLATION', `the raw SQL connection is read-only: ${text}`);
  }
  if (code === '42501') return fail(403, 'PERMISSION_DENIED', `the raw SQL role may only read this dataset's tables: ${text}`);
  if (code === '42601') {
    if (/multiple commands/i.test(err.message)) return fail(400, 'MULTIPLE_STATEMENTS', 'send exactly one statement (no ";"-separated list)');
    const chars = [...statement];
    const word = position !== undefined ? chars.slice(position - 1, position + 9).join('') : '';
    if (position !== undefined && (position === firstTokenPosition(statement) || WRITE_KEYWORDS.test(word))) {
      return fail(400, 'NOT_A_QUERY', `only queries can be run (SELECT, VALUES, TABLE, WITH … SELECT): ${text}${at}`);
    }
    return fail(400, 'SQL_SYNTAX_ERROR', `${text}${at}`);
  }
  if (code === '42P01') return fail(400, 'UNDEFINED_TABLE', `${text}${at}`);
  if (code === '42703') return fail(400, 'UNDEFINED_COLUMN', `${text}${at}`);
  if (code === '42883') return fail(400, 'UNDEFINED_FUNCTION', `${text}${at}`);
  if (cls === '42') return fail(400, 'INVALID_SQL', `${text}${at}`);
  if (code === '57014') {
    if (/statement timeout/i.test(err.message)) return fail(400, 'QUERY_TIMEOUT', `the query ran longer than the raw SQL time limit of ${timeoutMs} ms`);
    return fail(503, 'QUERY_CANCELED', 'the query was canceled by the database; try again');
  }
  if (code === '22012') return fail(400, 'DIVISION_BY_ZERO', text);
  if (cls === '22') return fail(400, 'DATA_EXCEPTION', text);
  if (cls === '0A') return fail(400, 'SQL_NOT_SUPPORTED', text);
  if (cls === '40') return fail(409, 'QUERY_CONFLICT', `${text}; try again`);
  if (code === '53300' || cls === '57' || cls === '58' || code === 'XX001' || code === 'XX002' || (cls === '08' && code !== '08P01')) {
    return databaseUnavailable();
  }
  if (cls === '53' || cls === '54') return fail(400, 'RESOURCE_LIMIT_EXCEEDED', text);
  // Everything else the statement can raise: cardinality, routine and trigger exceptions,
  // RAISE from a function, lock and object-state errors, internal errors reached through SQL.
  return fail(400, 'SQL_ERROR', text);
}
