import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { freshDatabase } from '../../../test-support/postgres.js';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../db/embedded.js';
import { ApiError } from '../../engine/errors.js';
import { apiErrorOf, fromStore, StoreError } from '../../engine/store-outcomes.js';
import { demoDataset, DEMO_SCHEMAS } from '../../../test-support/rawsql-fixtures.js';
import type { RawQueryOptions } from '../../engine/contract.js';
import { PostgresDriver } from './driver.js';
import { firstTokenPosition, PostgresReadOnlyExecutor, readOnlyRoleName, scramVerifier, toRawSqlError as toRefusal } from './readonly.js';
import { dataPlaneSettings } from '../../../../model/settings/dataplane.js';

/** The API error a database error becomes: the executor's refusal, mapped by the engine. */
const toRawSqlError = (...args: Parameters<typeof toRefusal>) => apiErrorOf((toRefusal(...args) as StoreError).failure);

const silent = pino({ level: 'silent' });
const dataset = demoDataset();
const OPTIONS: RawQueryOptions = { rowLimit: 100, timeoutMs: 5000 };

describe('PostgreSQL read-only executor', function () {
  let url: string;
  let role: string;
  let admin: pg.Pool;
  let executor: PostgresReadOnlyExecutor;
  let driver: PostgresDriver;
  const extra: { close(): Promise<void> }[] = [];

  const sql = (text: string, values: unknown[] = [], exec = executor, d = driver) => exec.query(dataset, d.pool(dataset), { text, values }, OPTIONS);
  const one = async <T = unknown>(text: string, values: unknown[] = []) => (await admin.query(text, values)).rows[0] as T;

  async function rejected(promise: Promise<unknown>): Promise<ApiError> {
    try {
      await promise;
    } catch (err) {
      // The executor reports what the store refused; the API error is what the caller sees.
      const mapped = fromStore(err);
      if (!(mapped instanceof ApiError)) throw err;
      return mapped;
    }
    throw new Error('expected a refusal');
  }

  /** Another data-plane replica: its own driver and executor on the same database. */
  function replica(options: ConstructorParameters<typeof PostgresReadOnlyExecutor>[0] = {}) {
    const ro = new PostgresReadOnlyExecutor(options);
    const d = new PostgresDriver({ logger: silent, settings: dataPlaneSettings({ DATABASE_URL: url }), readOnly: ro });
    extra.push(d);
    return { ro, d };
  }

  before(async () => {
    url = await freshDatabase('readonly');
    role = readOnlyRoleName(new URL(url).pathname.slice(1), 'demo');
    executor = new PostgresReadOnlyExecutor({ logger: silent });
    driver = new PostgresDriver({ logger: silent, settings: dataPlaneSettings({ DATABASE_URL: url }), readOnly: executor });
    expect((await driver.prepare(dataset)).refused).to.deep.equal([]);
    await driver.prepare(demoDataset({ id: 'other', databaseSchema: 'other', schemas: { 'other.Secret': { properties: { value: { type: 'string' } } } } }));
    await driver.write(dataset, [{ op: 'create', schema: 'demo.Company', id: 'acme', data: { name: 'Acme' } }], 'ATOMIC');
    admin = new pg.Pool({ connectionString: url, max: 2 });
    admin.on('error', () => undefined); // pool.end() does not wait for its sockets to close
  });

  after(async () => {
    for (const d of extra) await d.close();
    await driver?.close();
    await admin?.end();
  });

  describe('the role', () => {
    it('is an unprivileged login, member of nothing, read-only by default', async () => {
      const r = await one<Record<string, unknown>>(
        'SELECT rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolcanlogin, rolreplication, rolbypassrls, rolconfig FROM pg_roles WHERE rolname = $1',
        [role],
      );
      expect(r).to.deep.include({ rolsuper: false, rolinherit: false, rolcreaterole: false, rolcreatedb: false, rolcanlogin: true, rolreplication: false, rolbypassrls: false });
      expect(r.rolconfig).to.include.members(['default_transaction_read_only=on', 'statement_timeout=60000', 'standard_conforming_strings=on', 'search_path=demo']);
      expect((await admin.query('SELECT 1 FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.member WHERE r.rolname = $1', [role])).rowCount).to.equal(0);
    });

    it('may only SELECT the dataset tables', async () => {
      const can = async (check: string, ...args: string[]) => (await one<{ ok: boolean }>(`SELECT ${check}($1, ${args.map((_, i) => `$${i + 2}`).join(', ')}) AS ok`, [role, ...args])).ok;
      expect(await can('has_table_privilege', 'demo.demo_person', 'SELECT')).to.equal(true);
      expect(await can('has_table_privilege', 'demo.demo_person_history', 'SELECT')).to.equal(true);
      for (const p of ['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) expect(await can('has_table_privilege', 'demo.demo_person', p), p).to.equal(false);
      expect(await can('has_schema_privilege', 'demo', 'USAGE')).to.equal(true);
      expect(await can('has_schema_privilege', 'demo', 'CREATE')).to.equal(false);
      expect(await can('has_schema_privilege', 'public', 'CREATE')).to.equal(false);
      expect(await can('has_schema_privilege', 'other', 'USAGE')).to.equal(false);
      expect(await can('has_schema_privilege', 'das_internal', 'USAGE')).to.equal(false);
    });

    it('logs in as itself with a password stored only as a SCRAM verifier', async () => {
      const [row] = await sql('SELECT session_user AS s, current_user AS c');
      expect(row).to.deep.equal({ s: role, c: role });
      const stored = await one<{ rolpassword: string }>('SELECT rolpassword FROM pg_authid WHERE rolname = $1', [role]);
      expect(stored.rolpassword).to.match(/^SCRAM-SHA-256\$4096:/);
      const target = new URL(url);
      const wrong = new pg.Client({ host: target.hostname, port: Number(target.port), database: target.pathname.slice(1), user: role, password: 'guess' });
      const err = await wrong.connect().then(
        () => undefined,
        (e) => e,
      );
      await wrong.end().catch(() => undefined);
      expect(err?.code).to.equal('28P01');
    });

    it('is repaired by prepare: memberships revoked, grants restored, new tables readable', async () => {
      await admin.query(`GRANT pg_read_server_files TO "${role}"`);
      await admin.query(`REVOKE SELECT ON demo.demo_company FROM "${role}"`);
      await admin.query(`ALTER ROLE "${role}" SET default_transaction_read_only = off`);
      expect((await rejected(sql('SELECT * FROM demo.demo_company'))).code).to.equal('PERMISSION_DENIED');

      const next = { ...dataset, generation: 2, schemas: { ...DEMO_SCHEMAS, 'demo.Extra': { properties: { note: { type: 'string' as const } } } } };
      await driver.prepare(next);
      expect((await admin.query('SELECT 1 FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.member WHERE r.rolname = $1', [role])).rowCount).to.equal(0);
      expect(await sql('SELECT name FROM demo.demo_company')).to.deep.equal([{ name: 'Acme' }]);
      expect(await sql('SELECT count(*)::int AS n FROM demo.demo_extra')).to.deep.equal([{ n: 0 }]);
      const config = await one<{ rolconfig: string[] }>('SELECT rolconfig FROM pg_roles WHERE rolname = $1', [role]);
      expect(config.rolconfig).to.include('default_transaction_read_only=on');
    });

    it('reads tables an admin creates later in the dataset schema (default privileges)', async () => {
      await admin.query('CREATE TABLE demo.later (a int)');
      expect(await sql('SELECT count(*)::int AS n FROM demo.later')).to.deep.equal([{ n: 0 }]);
    });

    it('loses LOGIN when the endpoint is switched off, and gets it back when switched on', async () => {
      const { ro, d } = replica();
      const off = demoDataset({ rawSqlEndpointEnabled: false });
      await d.prepare(dataset);
      expect(await sql('SELECT 1 AS one', [], ro, d)).to.deep.equal([{ one: 1 }]);
      await d.prepare(off);
      expect((await one<{ rolcanlogin: boolean }>('SELECT rolcanlogin FROM pg_roles WHERE rolname = $1', [role])).rolcanlogin).to.equal(false);
      expect((await rejected(ro.query(off, d.pool(off), { text: 'SELECT 1', values: [] }, OPTIONS))).code).to.equal('RAW_SQL_DISABLED');
      await d.prepare(dataset);
      expect((await one<{ rolcanlogin: boolean }>('SELECT rolcanlogin FROM pg_roles WHERE rolname = $1', [role])).rolcanlogin).to.equal(true);
      expect(await sql('SELECT 2 AS two', [], ro, d)).to.deep.equal([{ two: 2 }]);
    });

    it('does not create a role for a dataset without the endpoint', async () => {
      const off = demoDataset({ id: 'quiet', databaseSchema: 'quiet', rawSqlEndpointEnabled: false, schemas: { 'quiet.Thing': { properties: { a: { type: 'string' } } } } });
      await driver.prepare(off);
      const quietRole = readOnlyRoleName(new URL(url).pathname.slice(1), 'quiet');
      expect((await admin.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [quietRole])).rowCount).to.equal(0);
    });

    it('is named per database and schema, within 63 bytes', () => {
      expect(readOnlyRoleName('db1', 'demo')).to.match(/^das_ro_demo_[0-9a-f]{8}$/);
      expect(readOnlyRoleName('db1', 'demo')).to.not.equal(readOnlyRoleName('db2', 'demo'));
      expect(readOnlyRoleName('db', 'Ünïcode-Schema'.repeat(10))).to.match(/^das_ro_[a-z0-9_]{40}_[0-9a-f]{8}$/);
    });

    it('builds SCRAM-SHA-256 verifiers in the form PostgreSQL stores', () => {
      expect(scramVerifier('secret')).to.match(/^SCRAM-SHA-256\$4096:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/);
    });
  });

  describe('built-in functions with side effects', () => {
    const walBytesSince = async (lsn: string) => Number((await one<{ d: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1)::bigint AS d', [lsn])).d);
    const currentLsn = async () => (await one<{ l: string }>('SELECT pg_current_wal_insert_lsn()::text AS l')).l;

    it('cannot write to the WAL through pg_logical_emit_message (403), however it is called', async () => {
      const before = await currentLsn();
      // Used to answer 200 and write 20 MB of WAL per request.
      const err = await rejected(sql("SELECT count(pg_logical_emit_message(false, 'x', repeat('x', 1000000))) FROM generate_series(1, 20)"));
      expect([err.status, err.code]).to.deep.equal([403, 'PERMISSION_DENIED']);
      expect(err.details[0].message).to.match(/permission denied for function pg_logical_emit_message/);
      expect((await rejected(sql("SELECT pg_logical_emit_message(true, 'x', '\\x01'::bytea, true)"))).code).to.equal('PERMISSION_DENIED');
      // A query text built at run time reaches the function as well: only the privilege stops it.
      expect((await rejected(sql("SELECT query_to_xml('SELECT pg_logical_emit_message(false, ''x'', ''y'')', true, false, '')"))).code).to.equal('PERMISSION_DENIED');
      expect(await walBytesSince(before)).to.be.below(1_000_000);
    });

    it('takes EXECUTE from PUBLIC on both overloads; the admin keeps it as a superuser', async () => {
      const rows = (
        await admin.query<{ fn: string; role_may: boolean; public_may: boolean }>(
          `SELECT p.oid::regprocedure::text AS fn, has_function_privilege($1, p.oid, 'EXECUTE') AS role_may,
                  coalesce(bool_or(a.grantee = 0), false) AS public_may
             FROM pg_proc p LEFT JOIN LATERAL aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a ON a.privilege_type = 'EXECUTE'
            WHERE p.proname = 'pg_logical_emit_message' GROUP BY p.oid ORDER BY 1`,
          [role],
        )
      ).rows;
      expect(rows.map((r) => [r.fn, r.role_may, r.public_may])).to.deep.equal([
        ['pg_logical_emit_message(boolean,text,bytea,boolean)', false, false],
        ['pg_logical_emit_message(boolean,text,text,boolean)', false, false],
      ]);
      expect((await one<{ ok: boolean }>("SELECT pg_logical_emit_message(false, 'das-test', 'x') IS NOT NULL AS ok")).ok).to.equal(true);
    });
  });

  describe('result size', () => {
    const MiB = 1024 * 1024;
    const run = (ro: PostgresReadOnlyExecutor, d: PostgresDriver, text: string, maxBytes: number) =>
      ro.query(dataset, d.pool(dataset), { text, values: [] }, { rowLimit: 10000, timeoutMs: 15000, maxBytes });

    it('refuses a result past the byte budget while its rows arrive, naming the limit and the rows reached', async () => {
      const { ro, d } = replica({ poolSize: 1 });
      // Used to build a 300 MB answer (1.6 GB of RSS); 600 rows ended in a RangeError and a 500.
      const err = await rejected(run(ro, d, "SELECT repeat('x', 1000000) AS v FROM generate_series(1, 300)", 16 * MiB));
      expect([err.status, err.code]).to.deep.equal([400, 'RESULT_TOO_LARGE']);
      // Each row is {"v":"x…"} of 1,000,010 bytes: the 17th passes 16 MiB.
      expect(err.details[0]).to.deep.include({ path: '$.sql', maxBytes: 16 * MiB, rows: 16 });
      expect(err.message).to.include(`larger than ${16 * MiB} bytes`).and.include('after 16 rows');
      // The connection was dropped; the next query gets a new one.
      expect(await run(ro, d, 'SELECT 1 AS one', 100)).to.deep.equal([{ one: 1 }]);
      expect(await run(ro, d, "SELECT repeat('y', 50) AS v FROM generate_series(1, 3)", 200)).to.have.length(3);
      expect((await rejected(run(ro, d, "SELECT repeat('y', 50) AS v FROM generate_series(1, 4)", 200))).code).to.equal('RESULT_TOO_LARGE');
      // Counted in UTF-8 bytes: 'é' takes two.
      expect(await run(ro, d, "SELECT repeat('x', 30) AS v FROM generate_series(1, 3)", 200)).to.have.length(3);
      expect((await rejected(run(ro, d, "SELECT repeat('é', 30) AS v FROM generate_series(1, 3)", 200))).code).to.equal('RESULT_TOO_LARGE');
    });

    it('refuses one enormous value before the process reads it', async () => {
      const { ro, d } = replica({ poolSize: 1 });
      const rss = process.memoryUsage().rss;
      const err = await rejected(run(ro, d, "SELECT 1 AS n, repeat('x', 200000000) AS v", 16 * MiB));
      expect([err.status, err.code]).to.deep.equal([400, 'RESULT_TOO_LARGE']);
      expect(err.message).to.match(/a row of 2000000\d\d bytes arrived after 0 rows/);
      // Only the socket chunk announcing the 200 MB row was read.
      expect(process.memoryUsage().rss - rss).to.be.below(64 * MiB);
      expect(await run(ro, d, 'SELECT 2 AS two', 100)).to.deep.equal([{ two: 2 }]);
    });

    it('bounds an error message that repeats a huge value the same way, and clips smaller ones', async () => {
      const { ro, d } = replica({ poolSize: 1 });
      const huge = await rejected(run(ro, d, "SELECT repeat('x', 20000000)::int", 16 * MiB));
      expect(huge.code).to.equal('RESULT_TOO_LARGE');
      expect(huge.message).to.match(/a message of \d+ bytes arrived after 0 rows/);
      const clipped = await rejected(run(ro, d, "SELECT repeat('x', 100000)::int", 16 * MiB));
      expect(clipped.code).to.equal('DATA_EXCEPTION');
      expect(clipped.message.length).to.be.below(2100);
      expect(clipped.details[0].message).to.match(/^invalid input syntax for type integer: "x+… \(\d+ more characters\)$/);
    });
  });

  describe('with an admin that is not a superuser (CREATEROLE only)', () => {
    let limited: PostgresDriver;
    let superuser: pg.Pool;
    const warnings: string[] = [];

    before(async () => {
      const superUrl = await freshDatabase('ro_createrole');
      const target = new URL(superUrl);
      const db = target.pathname.slice(1);
      const adminRole = `das_admin_${db}`;
      superuser = new pg.Pool({ connectionString: superUrl, max: 1 });
      superuser.on('error', () => undefined); // pool.end() does not wait for its sockets to close
      await superuser.query(`CREATE ROLE ${adminRole} LOGIN CREATEROLE PASSWORD 'admin-pw'`);
      await superuser.query(`GRANT CREATE, CONNECT ON DATABASE ${db} TO ${adminRole}`);
      target.username = adminRole;
      target.password = 'admin-pw';
      const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) });
      limited = new PostgresDriver({ logger: silent, settings: dataPlaneSettings({ DATABASE_URL: target.toString() }), readOnly: new PostgresReadOnlyExecutor({ logger }) });
      extra.push(limited, { close: () => superuser.end() });
    });

    it('prepares the role and serves read-only queries', async () => {
      expect((await limited.prepare(dataset)).refused).to.deep.equal([]);
      await limited.write(dataset, [{ op: 'create', schema: 'demo.Company', id: 'c1', data: { name: 'One' } }], 'ATOMIC');
      await limited.prepare(dataset); // idempotent
      expect(await limited.rawQuery(dataset, { text: 'SELECT name FROM demo.demo_company', values: [] }, OPTIONS)).to.deep.equal([{ name: 'One' }]);
      const err = await rejected(limited.rawQuery(dataset, { text: 'SELECT current_user, set_config(\'role\', \'postgres\', false)', values: [] }, OPTIONS));
      expect(err.code).to.equal('PERMISSION_DENIED');
    });

    it('cannot revoke pg_logical_emit_message from PUBLIC: logs the statement for an operator, which then works', async () => {
      warnings.length = 0;
      await limited.prepare(dataset);
      const warned = warnings.map((line) => JSON.parse(line) as { run?: string; msg: string }).filter((w) => w.run);
      const statement =
        'REVOKE EXECUTE ON FUNCTION pg_catalog.pg_logical_emit_message(boolean, text, bytea, boolean), pg_catalog.pg_logical_emit_message(boolean, text, text, boolean) FROM PUBLIC;';
      expect(warned.map((w) => w.run)).to.deep.equal([statement]);
      expect(warned[0].msg).to.include(statement);
      await superuser.query(statement);
      warnings.length = 0;
      await limited.prepare(dataset);
      expect(warnings.filter((line) => line.includes('REVOKE'))).to.deep.equal([]);
      const err = await rejected(limited.rawQuery(dataset, { text: "SELECT pg_logical_emit_message(false, 'x', 'y')", values: [] }, OPTIONS));
      expect(err.code).to.equal('PERMISSION_DENIED');
    });

    it('refuses to go on when it cannot take back a privilege someone granted the role', async () => {
      const db = (await superuser.query('SELECT current_database() AS db')).rows[0].db as string;
      const limitedRole = readOnlyRoleName(db, 'demo');
      await superuser.query(`GRANT pg_read_server_files TO "${limitedRole}"`);
      try {
        let failed: unknown;
        await limited.prepare(dataset).catch((e) => (failed = e));
        expect(failed, 'prepare must fail').to.be.instanceOf(Error);
        expect((failed as Error).message).to.match(/pg_read_server_files/);
      } finally {
        await superuser.query(`REVOKE pg_read_server_files FROM "${limitedRole}"`);
      }
    });
  });

  describe('replicas', () => {
    it('share the stored password: a second replica preparing does not lock the first out', async () => {
      const a = replica();
      const b = replica();
      await a.d.prepare(dataset);
      await b.d.prepare(dataset);
      // a opens its first connection only now, after b prepared.
      expect(await sql('SELECT 1 AS one', [], a.ro, a.d)).to.deep.equal([{ one: 1 }]);
      expect(await sql('SELECT 1 AS one', [], b.ro, b.d)).to.deep.equal([{ one: 1 }]);
    });

    it('re-prepares once when the login fails after a password rotation', async () => {
      const a = replica();
      const b = replica();
      await a.d.prepare(dataset);
      await admin.query('DELETE FROM das_internal.readonly_credentials WHERE role_name = $1', [role]);
      await b.d.prepare(dataset); // a new password
      expect(await sql('SELECT 2 AS two', [], a.ro, a.d)).to.deep.equal([{ two: 2 }]);
      // A replica starting now reads the new password.
      const fresh = replica();
      expect(await sql('SELECT 3 AS three', [], fresh.ro, fresh.d)).to.deep.equal([{ three: 3 }]);
    });

    it('prepares lazily on the first query', async () => {
      const lazy = replica();
      expect(await sql('SELECT 4 AS four', [], lazy.ro, lazy.d)).to.deep.equal([{ four: 4 }]);
    });
  });

  describe('session hygiene', () => {
    it('nothing a query does to its session survives into the next query on that connection', async () => {
      const { ro, d } = replica({ poolSize: 1 });
      const [first] = await sql(
        "SELECT pg_backend_pid() AS pid, pg_advisory_lock(4242) AS locked, set_config('default_transaction_read_only', 'off', false) AS a, set_config('search_path', 'public', false) AS b, set_config('work_mem', '64MB', false) AS c",
        [],
        ro,
        d,
      );
      const held = await one<{ n: number }>("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242");
      expect(held.n).to.equal(0);
      const [next] = await sql(
        "SELECT pg_backend_pid() AS pid, current_setting('default_transaction_read_only') AS a, current_setting('search_path') AS b, current_setting('work_mem') AS c",
        [],
        ro,
        d,
      );
      expect(next).to.deep.equal({ pid: first.pid, a: 'on', b: 'demo', c: '4MB' });
    });

    it('keeps serving after errors and timeouts on a single connection', async () => {
      const { ro, d } = replica({ poolSize: 1 });
      const timeout = await rejected(ro.query(dataset, d.pool(dataset), { text: 'SELECT pg_sleep(3)', values: [] }, { rowLimit: 5, timeoutMs: 100 }));
      expect(timeout.code).to.equal('QUERY_TIMEOUT');
      expect((await rejected(sql('SELECT 1/0', [], ro, d))).code).to.equal('DIVISION_BY_ZERO');
      expect((await rejected(sql('DELETE FROM demo.demo_company', [], ro, d))).code).to.equal('NOT_A_QUERY');
      expect(await sql('SELECT name FROM demo.demo_company', [], ro, d)).to.deep.equal([{ name: 'Acme' }]);
    });

    it('returns bytea, interval and timestamp without zone in their text form', async () => {
      expect(
        await sql("SELECT '\\x4142'::bytea AS b, interval '1 day 2 hours' AS i, 10000000000::bigint AS n, 1.50::numeric AS d, '2024-05-01 12:30:00'::timestamp AS t"),
      ).to.deep.equal([{ b: '\\x4142', i: '1 day 02:00:00', n: 10000000000, d: '1.50', t: '2024-05-01 12:30:00' }]);
    });

    it('serves concurrent queries beyond its pool size, each in its own transaction', async () => {
      const { ro, d } = replica({ poolSize: 2 });
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) => sql('SELECT ($1::integer) AS i, txid_current_if_assigned() AS tx, pg_sleep(0.02)::text AS s', [String(i)], ro, d)),
      );
      expect(results.map(([row]) => row.i)).to.deep.equal(Array.from({ length: 12 }, (_, i) => i));
      expect(results.every(([row]) => row.tx === null)).to.equal(true);
    });

    it('runs binds through the extended protocol', async () => {
      expect(await sql('SELECT ($1::text) AS a, ($2::integer) + 1 AS b', ["x'; DROP TABLE demo.demo_company; --", '41'])).to.deep.equal([
        { a: "x'; DROP TABLE demo.demo_company; --", b: 42 },
      ]);
      expect(await sql('SELECT count(*)::int AS n FROM demo.demo_company')).to.deep.equal([{ n: 1 }]);
    });

    it('runs at most maxConcurrentQueries at once in the process, all datasets together; a query waiting too long is a 503 RAW_SQL_BUSY', async () => {
      const { ro, d } = replica({ maxConcurrentQueries: 1, connectionTimeoutMs: 300 });
      const otherDataset = demoDataset({ id: 'other', databaseSchema: 'other', schemas: { 'other.Secret': { properties: { value: { type: 'string' } } } } });
      const slow = ro.query(dataset, d.pool(dataset), { text: 'SELECT pg_sleep(1)::text AS slept', values: [] }, OPTIONS);
      const err = await rejected(ro.query(otherDataset, d.pool(otherDataset), { text: 'SELECT 1', values: [] }, OPTIONS));
      expect([err.status, err.code]).to.deep.equal([503, 'RAW_SQL_BUSY']);
      expect(await slow).to.deep.equal([{ slept: '' }]);
      expect(await ro.query(otherDataset, d.pool(otherDataset), { text: 'SELECT 2 AS two', values: [] }, OPTIONS)).to.deep.equal([{ two: 2 }]);
    });

    it('503 after close', async () => {
      const { ro, d } = replica();
      await ro.prepare(dataset, d.pool(dataset));
      await ro.close();
      const err = await rejected(sql('SELECT 1', [], ro, d));
      expect(err.status).to.equal(503);
    });
  });

  describe('when the connection dies during a query', () => {
    const uncaught: unknown[] = [];
    const record = (err: unknown) => void uncaught.push(err);
    beforeEach(() => {
      uncaught.length = 0;
      process.on('uncaughtException', record);
    });
    afterEach(() => process.removeListener('uncaughtException', record));

    /** The backend running a raw query's FETCH (the cursor runs the statement there). */
    async function runningQuery(pool: pg.Pool | pg.Client): Promise<number> {
      for (let i = 0; i < 200; i++) {
        const found = await pool.query<{ pid: number }>(
          "SELECT pid FROM pg_stat_activity WHERE application_name = 'data-access-raw-sql' AND state = 'active' AND query LIKE 'FETCH FORWARD %'",
        );
        if (found.rows[0]) return found.rows[0].pid;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      throw new Error('the raw query never showed up in pg_stat_activity');
    }

    it('a terminated backend is a 503 DATABASE_UNAVAILABLE, the process lives on and the next query runs', async () => {
      const { ro, d } = replica({ poolSize: 1 });
      const pending = rejected(sql("SELECT pg_sleep(5), 'terminate-me'", [], ro, d));
      await admin.query('SELECT pg_terminate_backend($1)', [await runningQuery(admin)]);
      const err = await pending;
      expect([err.status, err.code]).to.deep.equal([503, 'DATABASE_UNAVAILABLE']);
      await new Promise((resolve) => setTimeout(resolve, 200)); // late 'error'/'end' events
      expect(uncaught).to.deep.equal([]);
      expect(await sql('SELECT 1 AS one', [], ro, d)).to.deep.equal([{ one: 1 }]);
    });

    describe('PostgreSQL stopped and started again (a server of its own)', function () {
      this.timeout(180000);
      let dir: string;
      let server: EmbeddedDatabase | undefined;

      before(async () => {
        dir = mkdtempSync(join(tmpdir(), 'das-ro-stop-'));
        server = await startEmbeddedPostgres({ dir });
        await server.createDatabase('stopped');
      });

      after(async () => {
        await server?.stop();
        rmSync(dir, { recursive: true, force: true });
      });

      let d: PostgresDriver;
      const raw = (text: string) => d.rawQuery(dataset, { text, values: [] }, OPTIONS);
      /** Runs `fn` with the backend pid of a raw query sleeping on the server. */
      async function whileSleeping(fn: (pid: number) => Promise<void>): Promise<ApiError> {
        const pending = rejected(raw('SELECT pg_sleep(5)'));
        const watcher = new pg.Client({ connectionString: server!.urlFor('stopped') });
        watcher.on('error', () => undefined);
        await watcher.connect();
        try {
          await fn(await runningQuery(watcher));
        } finally {
          await watcher.end().catch(() => undefined);
        }
        return pending;
      }

      it('a backend killed without a word (no error message, the socket just closes) is a 503, and the process lives on', async () => {
        d = new PostgresDriver({ logger: silent, settings: dataPlaneSettings({ DATABASE_URL: server!.urlFor('stopped') }), readOnly: new PostgresReadOnlyExecutor({ logger: silent, connectionTimeoutMs: 3000 }) });
        extra.push(d);
        expect((await d.prepare(dataset)).refused).to.deep.equal([]);
        expect(await raw('SELECT 1 AS one')).to.deep.equal([{ one: 1 }]);
        // SIGKILL: the backend sends nothing; pg emits 'error' on the checked-out client at once.
        const err = await whileSleeping(async (pid) => void process.kill(pid, 'SIGKILL'));
        expect([err.status, err.code]).to.deep.equal([503, 'DATABASE_UNAVAILABLE']);
        await new Promise((resolve) => setTimeout(resolve, 200));
        expect(uncaught).to.deep.equal([]);
        // The server restarts its sessions after a crash; then queries run again.
        let answer: unknown;
        for (let i = 0; i < 100 && answer === undefined; i++) {
          answer = await raw('SELECT 4 AS four').catch(async (thrown: unknown) => {
            const e = fromStore(thrown) as ApiError;
            expect(e.status, e.message).to.equal(503);
            await new Promise((resolve) => setTimeout(resolve, 100));
          });
        }
        expect(answer).to.deep.equal([{ four: 4 }]);
      });

      it('answers 503 when the server stops mid-query and while it is down, and recovers without a restart', async () => {
        expect(await raw('SELECT 1 AS one')).to.deep.equal([{ one: 1 }]);
        const port = server!.port;
        const err = await whileSleeping(async () => {
          await server!.stop(); // a fast shutdown: sessions are terminated
          server = undefined;
        });
        expect([err.status, err.code]).to.deep.equal([503, 'DATABASE_UNAVAILABLE']);
        expect(err.message).to.not.match(/terminat|ECONN|administrator/i);
        const down = await rejected(raw('SELECT 2'));
        expect([down.status, down.code]).to.deep.equal([503, 'DATABASE_UNAVAILABLE']);

        server = await startEmbeddedPostgres({ dir, port });
        expect(await raw('SELECT 3 AS three')).to.deep.equal([{ three: 3 }]);
        await new Promise((resolve) => setTimeout(resolve, 200));
        expect(uncaught).to.deep.equal([]);
      });
    });
  });

  describe('error mapping', () => {
    const dbError = (code: string, message: string, position?: number) => Object.assign(new pg.DatabaseError(message, 0, 'error'), { code, position: position === undefined ? undefined : String(position) });

    it('maps what the SQL text causes to 4xx and server trouble to 503', () => {
      const cases: [string, string, number, string][] = [
        ['25006', 'cannot execute INSERT in a read-only transaction', 400, 'READ_ONLY_VIOLATION'],
        ['0A000', 'DECLARE CURSOR must not contain data-modifying statements in WITH', 400, 'READ_ONLY_VIOLATION'],
        ['0A000', 'something else', 400, 'SQL_NOT_SUPPORTED'],
        ['42501', 'permission denied for schema other', 403, 'PERMISSION_DENIED'],
        ['42601', 'cannot insert multiple commands into a prepared statement', 400, 'MULTIPLE_STATEMENTS'],
        ['42P01', 'relation "x" does not exist', 400, 'UNDEFINED_TABLE'],
        ['42703', 'column "x" does not exist', 400, 'UNDEFINED_COLUMN'],
        ['42804', 'argument of WHERE must be type boolean', 400, 'INVALID_SQL'],
        ['57014', 'canceling statement due to statement timeout', 400, 'QUERY_TIMEOUT'],
        ['57014', 'canceling statement due to user request', 503, 'QUERY_CANCELED'],
        ['22012', 'division by zero', 400, 'DIVISION_BY_ZERO'],
        ['22P02', 'invalid input syntax for type integer', 400, 'DATA_EXCEPTION'],
        ['53400', 'temporary file size exceeds temp_file_limit', 400, 'RESOURCE_LIMIT_EXCEEDED'],
        ['54000', 'array size exceeds the maximum allowed', 400, 'RESOURCE_LIMIT_EXCEEDED'],
        ['P0001', 'raised by a function', 400, 'SQL_ERROR'],
        ['21000', 'more than one row returned by a subquery', 400, 'SQL_ERROR'],
        ['40001', 'could not serialize access', 409, 'QUERY_CONFLICT'],
        ['57P01', 'terminating connection due to administrator command', 503, 'DATABASE_UNAVAILABLE'],
        ['53300', 'too many connections', 503, 'DATABASE_UNAVAILABLE'],
        ['08006', 'connection failure', 503, 'DATABASE_UNAVAILABLE'],
      ];
      for (const [code, message, status, apiCode] of cases) {
        const err = toRawSqlError(dbError(code, message), 'SELECT 1', 10, 1000);
        expect([err.status, err.code], `${code} ${message}`).to.deep.equal([status, apiCode]);
        if (status === 503) expect(err.message).to.not.include(message);
      }
    });

    it('reports positions relative to the statement and tells a non-query from a syntax error', () => {
      const prefix = 'DECLARE c NO SCROLL CURSOR FOR ';
      const at = (statement: string, needle: string) => prefix.length + statement.indexOf(needle) + 1;
      const insert = '  -- note\n  INSERT INTO t VALUES (1)';
      const a = toRawSqlError(dbError('42601', 'syntax error at or near "INSERT"', at(insert, 'INSERT')), insert, prefix.length, 1000);
      expect([a.code, a.details[0].position]).to.deep.equal(['NOT_A_QUERY', insert.indexOf('INSERT') + 1]);
      const cte = 'WITH x AS (SELECT 1) UPDATE t SET a = 1';
      expect(toRawSqlError(dbError('42601', 'syntax error at or near "UPDATE"', at(cte, 'UPDATE')), cte, prefix.length, 1000).code).to.equal('NOT_A_QUERY');
      const typo = 'SELECT 1 FORM t';
      const b = toRawSqlError(dbError('42601', 'syntax error at or near "t"', at(typo, ' t') + 1), typo, prefix.length, 1000);
      expect([b.code, b.details[0].position]).to.deep.equal(['SQL_SYNTAX_ERROR', typo.length]);
      expect(toRawSqlError(dbError('42601', 'syntax error at or near "DECLARE"', 1), typo, prefix.length, 1000).details[0]).to.not.have.property('position');
    });

    it('finds the first token after blanks and comments', () => {
      expect(firstTokenPosition('SELECT 1')).to.equal(1);
      const text = '  /* a /* nested */ b */ -- x\n\t DELETE';
      expect(firstTokenPosition(text)).to.equal(text.indexOf('DELETE') + 1);
      expect(firstTokenPosition('/* ü */ SELECT')).to.equal(9);
      expect(firstTokenPosition('')).to.equal(1);
    });
  });
});
