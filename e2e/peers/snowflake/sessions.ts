/**
 * TEST PEER ONLY. One Snowflake session of the test peer: its own PostgreSQL client (so BEGIN …
 * COMMIT spans the statements of one SDK connection), its context (database, schema, warehouse,
 * role, session parameters such as QUERY_TAG), and the execution of one statement at a time,
 * from Snowflake SQL in to a Snowflake response body out.
 */
import { randomUUID } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import pg from 'pg';
import { databaseUrl, pgDatabaseName, pgRoleName, quoteIdent, type PeerCatalog } from './catalog.js';
import { fromPostgresError, SnowflakeSqlError, swapCase } from './errors.js';
import { encodeValue, fixedColumn, RESULT_PARAMETERS, rowTypeOf, snowflakeTypeOf, STATEMENT_TYPE, textColumn, type PgField, type RowType, type SnowflakeType } from './results.js';
import { CsvError, parseCsv } from './csv.js';
import type { PeerStage } from './stage.js';
import type { CopyStatement } from './stage-sql.js';
import { PEER_SCHEMA, translate, type Translated } from './translate.js';

export interface QueryLogEntry {
  queryId: string;
  sessionId: number;
  sqlText: string;
  warehouse: string | null;
  role: string;
  database: string;
  schema: string;
  queryTag: string | null;
  async: boolean;
  inTransaction: boolean;
  startedAt: Date;
  /** Filled in when the statement ends: 'running' until then. */
  status: 'running' | 'succeeded' | 'failed';
  /** Snowflake's error code when it failed. */
  errorCode: string | null;
}

export interface QueryRequest {
  sqlText: string;
  bindings?: Record<string, { type?: string; value: unknown }>;
  parameters?: Record<string, unknown>;
  asyncExec?: boolean;
}

/** A Snowflake response body (`success`, `code`, `message`, `data`). */
export interface ResponseBody {
  success: boolean;
  code: string | null;
  message: string | null;
  data: Record<string, unknown>;
}

export interface SessionContext {
  database: string;
  schema: string;
  warehouse: string | null;
  role: string;
}

const RAW_TEXT = { getTypeParser: () => (value: string) => value };

export function errorBody(err: SnowflakeSqlError, queryId?: string): ResponseBody {
  return {
    success: false,
    code: err.code,
    message: err.message,
    data: { ...(queryId ? { queryId } : {}), sqlState: err.sqlState, errorCode: err.code, internalError: false, age: 0, line: -1, pos: -1 },
  };
}

interface Outcome {
  rowtype: RowType[];
  rowset: (string | null)[][];
  statementTypeId: number;
  /** More of the response's `data` (a PUT's upload instructions). */
  data?: Record<string, unknown>;
}

/** The peer's user stages and its storage endpoint (stage.ts), for PUT and COPY INTO. */
export interface StageAccess {
  stage: PeerStage;
  endPoint(): string;
}

export class Session {
  readonly params: Record<string, string> = {};
  private client!: pg.Client;
  private chain: Promise<unknown> = Promise.resolve();
  private inTransaction = false;
  private ownTransaction = false;
  private closed = false;
  /**
   * Transaction control owed to PostgreSQL and sent in front of the session's next statement, in
   * the same round trip: a BEGIN not yet needed, the last statement's RELEASE SAVEPOINT. (Each
   * round trip to PostgreSQL costs the peer process a socket write and a wake-up; a write inside
   * a transaction took 17 of them, and the ones inside the table lock lengthen every writer's
   * wait.) COMMIT and ROLLBACK end the subtransactions themselves; a BEGIN followed by nothing is
   * never sent.
   */
  private owed: string[] = [];
  /** (table OID, column number) → the peer domain the column was declared with, if any. */
  private readonly declaredDomains = new Map<string, string | null>();

  constructor(
    readonly id: number,
    readonly user: string,
    private context: SessionContext,
    private readonly adminUrl: string,
    private readonly catalog: PeerCatalog,
    private readonly isReadOnlyRole: (role: string) => boolean,
    private readonly log: (entry: QueryLogEntry) => void,
    private readonly stages?: StageAccess,
  ) {}

  get current(): SessionContext {
    return { ...this.context };
  }

  /** Connects to the session's database, creating database, schema and role on first use. */
  async open(): Promise<void> {
    await this.catalog.ensureDatabase(this.context.database);
    await this.catalog.ensureRole(this.context.role);
    this.client = await this.connect(this.context.database);
    await this.catalog.ensureSchema(this.client, this.context.schema);
    await this.applyContext();
  }

  private async connect(database: string): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: databaseUrl(this.adminUrl, pgDatabaseName(database)) });
    client.on('error', () => undefined);
    await client.connect();
    await client.query("SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET IntervalStyle = 'iso_8601'; SET extra_float_digits = 1");
    return client;
  }

  private async applyContext(): Promise<void> {
    await this.client.query(`SET search_path = ${quoteIdent(swapCase(this.context.schema))}`);
    if (this.isReadOnlyRole(this.context.role)) await this.client.query(`SET ROLE ${quoteIdent(pgRoleName(this.context.role))}`);
    else await this.client.query('RESET ROLE');
  }

  /** Runs PostgreSQL SQL as is, outside the query log (the peer's own bookkeeping). */
  rawQuery<T extends pg.QueryResultRow>(sql: string): Promise<T[]> {
    return this.serial(async () => {
      await this.simple([]);
      return (await this.client.query<T>(sql)).rows;
    });
  }

  /** Simple (unparameterised) statements, after what is owed, in one round trip; nothing when there is nothing to send. */
  private async simple(statements: string[]): Promise<void> {
    const all = [...this.owed, ...statements];
    this.owed = [];
    if (all.length) await this.client.query(all.join('; '));
  }

  /** Logout lets the running statement finish; the peer's stop (`force`) does not wait for it. */
  async close(force = false): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (!force) await this.chain.catch(() => undefined);
    await this.client?.end().catch(() => undefined);
  }

  /** Runs statements one at a time, in arrival order (a Snowflake session is sequential too). */
  private serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.chain.then(work, work);
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** Records the query and starts it; the promise settles with the response body (never rejects). */
  submit(request: QueryRequest, queryId = randomUUID()): { queryId: string; done: Promise<ResponseBody> } {
    const tag = request.parameters?.QUERY_TAG;
    const inForce = () => ({
      warehouse: this.context.warehouse,
      role: this.context.role,
      database: this.context.database,
      schema: this.context.schema,
      queryTag: tag !== undefined && tag !== null ? String(tag) : (this.params.QUERY_TAG ?? null),
      inTransaction: this.inTransaction,
    });
    const entry: QueryLogEntry = {
      queryId,
      sessionId: this.id,
      sqlText: request.sqlText,
      ...inForce(),
      async: request.asyncExec === true,
      startedAt: new Date(),
      status: 'running',
      errorCode: null,
    };
    this.log(entry);
    const done = this.serial(async () => {
      // Statements queued behind others (asynchronous submissions) run in the context those leave.
      Object.assign(entry, inForce(), { startedAt: new Date() });
      if (this.closed) throw new SnowflakeSqlError('390111', '08003', 'Session no longer exists.');
      const outcome = await this.run(request);
      return this.successBody(queryId, outcome);
    })
      .catch((err: unknown) => errorBody(fromPostgresError(err), queryId))
      .then((body) => {
        entry.status = body.success ? 'succeeded' : 'failed';
        entry.errorCode = body.success ? null : body.code;
        return body;
      });
    return { queryId, done };
  }

  private successBody(queryId: string, outcome: Outcome): ResponseBody {
    return {
      success: true,
      code: null,
      message: null,
      data: {
        parameters: RESULT_PARAMETERS,
        rowtype: outcome.rowtype.map((r) => ({ ...r, database: r.database || this.context.database, schema: r.schema || this.context.schema })),
        rowset: outcome.rowset,
        total: outcome.rowset.length,
        returned: outcome.rowset.length,
        queryId,
        databaseProvider: null,
        finalDatabaseName: this.context.database,
        finalSchemaName: this.context.schema,
        finalWarehouseName: this.context.warehouse,
        finalRoleName: this.context.role,
        numberOfBinds: 0,
        arrayBindSupported: false,
        statementTypeId: outcome.statementTypeId,
        version: 1,
        sendResultTime: Date.now(),
        queryResultFormat: 'json',
        ...outcome.data,
      },
    };
  }

  private status(message: string, statementTypeId: number): Outcome {
    return { rowtype: [textColumn('status')], rowset: [[message]], statementTypeId };
  }

  private async run(request: QueryRequest): Promise<Outcome> {
    const translated = translate(request.sqlText, {
      database: this.context.database,
      schema: this.context.schema,
      warehouse: this.context.warehouse ?? '',
      role: this.context.role,
    });
    if (translated.kind === 'sql' && translated.ignoreMissingTable) {
      return this.runTranslated(translated, request).catch((err: { code?: string }) => {
        if (err.code === '42P01') return this.status('Statement executed successfully.', STATEMENT_TYPE.ddl);
        throw err;
      });
    }
    return this.runTranslated(translated, request);
  }

  private async runTranslated(translated: Translated, request: QueryRequest): Promise<Outcome> {
    switch (translated.kind) {
      case 'begin':
        // Sent with the transaction's first statement (PostgreSQL's transaction does nothing before it).
        if (!this.inTransaction) this.owed.push('BEGIN');
        this.inTransaction = true;
        return this.status('Statement executed successfully.', STATEMENT_TYPE.transaction);
      case 'commit':
      case 'rollback': {
        const begun = this.inTransaction && !this.owed.includes('BEGIN');
        this.owed = [];
        this.inTransaction = false;
        if (begun) await this.client.query(translated.kind === 'commit' ? 'COMMIT' : 'ROLLBACK');
        return this.status('Statement executed successfully.', STATEMENT_TYPE.transaction);
      }
      case 'alterSession':
        Object.assign(this.params, translated.set);
        for (const name of translated.unset) delete this.params[name];
        return this.status('Statement executed successfully.', STATEMENT_TYPE.session);
      case 'use':
        await this.use(translated);
        return this.status('Statement executed successfully.', STATEMENT_TYPE.session);
      case 'put':
        // Not transactional (as in Snowflake): the file is on the stage once the SDK uploaded it.
        return { rowtype: [], rowset: [], statementTypeId: STATEMENT_TYPE.ddl, data: this.stageAccess().stage.putResponse(this.user, translated, this.stageAccess().endPoint()) };
      case 'copy':
        return this.copyInto(translated);
      case 'sql': {
        const work = () => this.runSql(translated, request);
        if (this.inTransaction) return this.inSavepoint(this.beforeStatement(translated), work);
        if (translated.target || translated.replaceTable) return this.inOwnTransaction(this.beforeStatement(translated), work);
        return work();
      }
    }
  }

  private stageAccess(): StageAccess {
    if (!this.stages) throw SnowflakeSqlError.unsupported('A stage in this session');
    return this.stages;
  }

  /**
   * COPY INTO <table> (<cols>) FROM '@~/<file>': the staged CSV's rows inserted with one INSERT
   * of array binds (the peer's usual conversion of bound text to the columns' types), so all
   * rows or none (ON_ERROR = ABORT_STATEMENT); PURGE removes the file after a load.
   */
  private async copyInto(copy: CopyStatement): Promise<Outcome> {
    const { stage } = this.stageAccess();
    const name = `@~/${copy.path}`;
    const staged = stage.file(this.user, copy.path);
    if (!staged) {
      throw new SnowflakeSqlError('091016', '22000', `Remote file '${name}' was not found. There are several potential causes. The file might not exist. The required credentials may be missing or invalid.`);
    }
    const gzipped = staged[0] === 0x1f && staged[1] === 0x8b;
    let bytes = staged;
    if (copy.gzip && gzipped) {
      try {
        bytes = gunzipSync(staged);
      } catch {
        throw new SnowflakeSqlError('100069', '22000', `Invalid data encountered during decompression for file: '${copy.path}',compression type used: 'GZIP', cause: 'data error'`);
      }
    } else if (gzipped) throw new SnowflakeSqlError('100069', '22000', `Invalid UTF8 detected in string: the file '${copy.path}' is gzip-compressed and COMPRESSION = NONE`);
    let rows: (string | null)[][];
    try {
      rows = parseCsv(bytes.toString('utf8'));
    } catch (err) {
      if (!(err instanceof CsvError)) throw err;
      throw new SnowflakeSqlError('100065', '22000', `${err.message}\n  File '${copy.path}', line ${err.line}`);
    }
    rows.forEach((row, i) => {
      if (row.length !== copy.columns.length) {
        throw new SnowflakeSqlError(
          '100080',
          '22000',
          `Number of columns in file (${row.length}) does not match that of the corresponding table (${copy.columns.length}), use file format option error_on_column_count_mismatch=false to ignore this error\n  File '${copy.path}', line ${i + 1}`,
        );
      }
    });
    if (rows.length > 0) {
      const sqlText = `INSERT INTO ${copy.table} (${copy.columns.join(', ')}) VALUES (${copy.columns.map(() => '?').join(', ')})`;
      const insert = translate(sqlText, { database: this.context.database, schema: this.context.schema, warehouse: this.context.warehouse ?? '', role: this.context.role });
      const bindings = Object.fromEntries(copy.columns.map((_, c) => [String(c + 1), { type: 'TEXT', value: rows.map((r) => r[c]) }]));
      await this.runTranslated(insert, { sqlText, bindings });
    }
    if (copy.purge) stage.remove(this.user, copy.path);
    const n = String(rows.length);
    const columns = ['file', 'status', 'rows_parsed', 'rows_loaded', 'error_limit', 'errors_seen', 'first_error', 'first_error_line', 'first_error_character', 'first_error_column_name'];
    const numeric = new Set(['rows_parsed', 'rows_loaded', 'error_limit', 'errors_seen', 'first_error_line', 'first_error_character']);
    return {
      rowtype: columns.map((c) => ({ ...(numeric.has(c) ? fixedColumn(c) : textColumn(c)), nullable: true })),
      rowset: [[copy.path, 'LOADED', n, n, '1', '0', null, null, null, null]],
      statementTypeId: STATEMENT_TYPE.copy,
    };
  }

  /**
   * Snowflake runs UPDATE, DELETE and MERGE on one table one at a time (each waits for the table
   * lock the other holds until its transaction ends); INSERTs run alongside. PostgreSQL's MERGE
   * would instead race (two MERGEs both inserting one new key). A self-conflicting table lock that
   * INSERT's lock does not conflict with gives Snowflake's order; the statement after it sees what
   * the lock holder committed (read committed: it is a later statement than the LOCK, though sent
   * in one round trip with it). Answers the simple statements to send before the statement itself.
   */
  private beforeStatement(t: Extract<Translated, { kind: 'sql' }>): string[] {
    const before: string[] = [];
    if (t.target) before.push(`LOCK TABLE ${t.target} IN SHARE UPDATE EXCLUSIVE MODE`);
    // CREATE OR REPLACE TABLE: PostgreSQL has no OR REPLACE for tables.
    if (t.replaceTable) before.push(`DROP TABLE IF EXISTS ${t.replaceTable}`);
    return before;
  }

  /** One statement in a transaction of its own (the session is outside BEGIN … COMMIT), `before` sent with its BEGIN. */
  private async inOwnTransaction<T>(before: string[], work: () => Promise<T>): Promise<T> {
    if (this.ownTransaction) {
      await this.simple(before);
      return work();
    }
    this.ownTransaction = true;
    try {
      await this.simple(['BEGIN', ...before]);
      const result = await work();
      await this.client.query('COMMIT');
      return result;
    } catch (err) {
      await this.client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      this.ownTransaction = false;
    }
  }

  /**
   * Snowflake keeps a transaction going after a failed statement; PostgreSQL would abort it. The
   * savepoint goes with `before` (and what is owed) in one round trip; its release is owed to the
   * next statement, or made needless by COMMIT or ROLLBACK.
   */
  private async inSavepoint<T>(before: string[], work: () => Promise<T>): Promise<T> {
    try {
      await this.simple(['SAVEPOINT sf_peer_statement', ...before]);
      const result = await work();
      this.owed.push('RELEASE SAVEPOINT sf_peer_statement');
      return result;
    } catch (err) {
      await this.client.query('ROLLBACK TO SAVEPOINT sf_peer_statement; RELEASE SAVEPOINT sf_peer_statement').catch(() => undefined);
      throw err;
    }
  }

  private async use(u: Extract<Translated, { kind: 'use' }>): Promise<void> {
    switch (u.object) {
      case 'WAREHOUSE':
        this.context.warehouse = u.name;
        return;
      case 'ROLE':
        await this.catalog.ensureRole(u.name);
        this.context.role = u.name;
        await this.applyContext();
        return;
      case 'SCHEMA': {
        if (u.database && u.database !== this.context.database) await this.switchDatabase(u.database);
        const exists = await this.client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [swapCase(u.name)]);
        if (!exists.rowCount) throw new SnowflakeSqlError('002043', '02000', `SQL compilation error:\nObject does not exist, or operation cannot be performed.`);
        this.context.schema = u.name;
        await this.applyContext();
        return;
      }
      case 'DATABASE':
        await this.switchDatabase(u.name);
        return;
    }
  }

  private async switchDatabase(database: string): Promise<void> {
    if (this.inTransaction) throw SnowflakeSqlError.unsupported('USE DATABASE inside a transaction');
    await this.catalog.ensureDatabase(database);
    const client = await this.connect(database);
    await this.client.end().catch(() => undefined);
    this.client = client;
    this.context.database = database;
    this.context.schema = 'PUBLIC';
    this.declaredDomains.clear();
    await this.applyContext();
  }

  /** The bind values in $N order; an array value (array binding) makes one row of values per element. */
  private bindRows(paramCount: number, bindings: QueryRequest['bindings'] = {}): (string | null)[][] {
    const values: unknown[] = [];
    for (let n = 1; n <= paramCount; n++) {
      const bind = bindings[String(n)];
      if (!bind) throw new SnowflakeSqlError('002049', '42601', `SQL compilation error: error line 1 at position 0\nBind variable ? not set.`);
      values.push(bind.value);
    }
    const arrays = values.filter(Array.isArray) as unknown[][];
    const toText = (v: unknown): string | null => (v === null || v === undefined ? null : typeof v === 'string' ? v : JSON.stringify(v));
    if (arrays.length === 0) return [values.map(toText)];
    const rows = arrays[0].length;
    return Array.from({ length: rows }, (_, r) => values.map((v) => toText(Array.isArray(v) ? v[r] : v)));
  }

  private async runSql(t: Extract<Translated, { kind: 'sql' }>, request: QueryRequest): Promise<Outcome> {
    const rows = this.bindRows(t.paramCount, request.bindings);
    const runAll = async () => {
      const all: pg.QueryArrayResult[] = [];
      for (const values of rows) all.push(await this.client.query({ text: t.sql, values, rowMode: 'array', types: RAW_TEXT }));
      return all;
    };
    // An array binding is one statement in Snowflake: all its rows or none.
    const results = rows.length > 1 && !this.inTransaction ? await this.inOwnTransaction([], runAll) : await runAll();
    const count = results.reduce((sum, r) => sum + (r.rowCount ?? 0), 0);
    switch (t.category) {
      case 'insert':
        return { rowtype: [fixedColumn('number of rows inserted')], rowset: [[String(count)]], statementTypeId: STATEMENT_TYPE.insert };
      case 'update':
        return {
          rowtype: [fixedColumn('number of rows updated'), fixedColumn('number of multi-joined rows updated')],
          rowset: [[String(count), '0']],
          statementTypeId: STATEMENT_TYPE.update,
        };
      case 'delete':
        return { rowtype: [fixedColumn('number of rows deleted')], rowset: [[String(count)]], statementTypeId: STATEMENT_TYPE.delete };
      case 'merge': {
        const actions = results.flatMap((r) => r.rows.map((row) => String(row[0])));
        const counted = { inserted: 'INSERT', updated: 'UPDATE', deleted: 'DELETE' } as const;
        const kinds = t.mergeKinds ?? [];
        return {
          rowtype: kinds.map((k) => fixedColumn(`number of rows ${k}`)),
          rowset: [kinds.map((k) => String(actions.filter((a) => a === counted[k]).length))],
          statementTypeId: STATEMENT_TYPE.merge,
        };
      }
      case 'ddl':
        if (t.iceberg) {
          await this.client.query(
            `INSERT INTO ${PEER_SCHEMA}.iceberg_tables (table_schema, table_name, external_volume, catalog, base_location) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (table_schema, table_name) DO NOTHING`,
            [t.iceberg.schema ?? this.context.schema, t.iceberg.table, t.iceberg.settings.externalVolume ?? null, t.iceberg.settings.catalog ?? null, t.iceberg.settings.baseLocation ?? null],
          );
        }
        return this.status(t.status ?? 'Statement executed successfully.', STATEMENT_TYPE.ddl);
      case 'select': {
        const result = results[results.length - 1];
        return this.rowsOutcome(result);
      }
    }
  }

  private async rowsOutcome(result: pg.QueryArrayResult): Promise<Outcome> {
    const fields = result.fields as unknown as PgField[];
    const domains = await this.domainsOf(fields);
    const types: SnowflakeType[] = fields.map((f, i) => snowflakeTypeOf(f, domains[i]));
    const raw = result.rows as (string | null)[][];
    const rowtype = fields.map((f, i) => rowTypeOf(f, types[i], raw.map((r) => r[i]), { database: '', schema: '' }));
    const rowset = raw.map((r) => r.map((v, i) => encodeValue(types[i], v)));
    return { rowtype, rowset, statementTypeId: STATEMENT_TYPE.select };
  }

  /** For table columns over jsonb/timestamptz: which peer domain (VARIANT, TIMESTAMP_TZ, …) they were declared with. */
  private async domainsOf(fields: PgField[]): Promise<(string | undefined)[]> {
    const key = (f: PgField) => `${f.tableID}:${f.columnID}`;
    const wanted = fields.filter((f) => f.tableID !== 0 && (f.dataTypeID === 3802 || f.dataTypeID === 1184) && !this.declaredDomains.has(key(f)));
    if (wanted.length > 0) {
      const found = await this.client.query<{ attrelid: number; attnum: number; domain: string | null }>(
        `SELECT a.attrelid::int AS attrelid, a.attnum::int AS attnum, CASE WHEN n.nspname = '${PEER_SCHEMA}' THEN t.typname::text END AS domain
         FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid JOIN pg_namespace n ON n.oid = t.typnamespace
         WHERE (a.attrelid::int, a.attnum::int) IN (SELECT * FROM unnest($1::int[], $2::int[]))`,
        [wanted.map((f) => f.tableID), wanted.map((f) => f.columnID)],
      );
      for (const f of wanted) this.declaredDomains.set(key(f), null);
      for (const row of found.rows) this.declaredDomains.set(`${row.attrelid}:${row.attnum}`, row.domain);
    }
    return fields.map((f) => (f.tableID !== 0 ? (this.declaredDomains.get(key(f)) ?? undefined) : undefined));
  }
}
