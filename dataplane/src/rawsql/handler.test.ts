import { expect } from 'chai';
import pg from 'pg';
import pino from 'pino';
import { freshDatabase } from '../../test-support/postgres.js';
import { PostgresDriver, type PostgresDriverOptions } from '../drivers/postgres/driver.js';
import { PostgresReadOnlyExecutor } from '../drivers/postgres/readonly.js';
import type { StatementContext } from '../engine/contract.js';
import { ApiError } from '../engine/errors.js';
import type { RawQueryHandler } from '../http/app.js';
import { demoDataset } from '../../test-support/rawsql-fixtures.js';
import { executeRawQuery, rawSqlLimits, type RawSqlLimits } from './handler.js';
import { dataPlaneSettings } from '../../../model/settings/dataplane.js';

const dataset = demoDataset();
const other = demoDataset({ id: 'other', databaseSchema: 'other', schemas: { 'other.Secret': { properties: { value: { type: 'string' } } } } });
const P = { p: 'demo.Person' };

describe('raw SQL endpoint on PostgreSQL', function () {
  let driver: PostgresDriver;
  let admin: pg.Pool;

  const run = (body: unknown, options: { ctx?: StatementContext; limits?: Partial<RawSqlLimits>; authkind?: 'iam' | 'public' } = {}) =>
    executeRawQuery({ dataset, authkind: options.authkind ?? 'iam', body, driver, ctx: options.ctx ?? {}, limits: options.limits });

  async function rejected(body: unknown, options: Parameters<typeof run>[1] = {}): Promise<ApiError> {
    try {
      await run(body, options);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      return err;
    }
    throw new Error(`expected an ApiError for ${JSON.stringify(body)}`);
  }

  /** Everything a write could change, read through the admin connection. */
  async function snapshot() {
    const q = async (sql: string) => (await admin.query(sql)).rows;
    return {
      people: await q('SELECT id, version, name, email, age, address_street, address_postcode, employer_id FROM demo.demo_person ORDER BY id'),
      companies: await q('SELECT id, version, name FROM demo.demo_company ORDER BY id'),
      history: await q('SELECT count(*)::int AS n FROM demo.demo_person_history'),
      secrets: await q('SELECT id, value FROM other.other_secret ORDER BY id'),
      tables: await q(
        "SELECT table_schema, table_name FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2",
      ),
      columns: await q("SELECT count(*)::int AS n FROM information_schema.columns WHERE table_schema = 'demo'"),
      largeObjects: await q('SELECT count(*)::int AS n FROM pg_largeobject_metadata'),
      grants: await q("SELECT grantee, table_name, privilege_type FROM information_schema.role_table_grants WHERE table_schema = 'demo' ORDER BY 1, 2, 3"),
    };
  }

  before(async function () {
    const url = await freshDatabase('rawsql');
    driver = new PostgresDriver({ logger: pino({ level: 'silent' }), settings: dataPlaneSettings({ DATABASE_URL: url }), readOnly: new PostgresReadOnlyExecutor() });
    for (const d of [dataset, other]) expect((await driver.prepare(d)).refused).to.deep.equal([]);
    const write = await driver.write(
      dataset,
      [
        { op: 'create', schema: 'demo.Company', id: 'acme', data: { name: 'Acme' } },
        { op: 'create', schema: 'demo.Company', id: 'globex', data: { name: 'Globex' } },
        {
          op: 'create',
          schema: 'demo.Person',
          id: 'ann',
          data: { name: 'Ann', email: 'ann@example.com', age: 34, address: { street: 'Main St 1', postcode: '1000' }, employer: { id: 'acme' } },
        },
        { op: 'create', schema: 'demo.Person', id: 'bob', data: { name: 'Bob', email: 'bob@example.com', age: 19, employer: { id: 'globex' } } },
        { op: 'create', schema: 'demo.Person', id: 'cid', data: { name: 'Cid', age: 52 } },
      ],
      'ATOMIC',
    );
    expect(write.every((r) => r.ok)).to.equal(true);
    expect((await driver.write(other, [{ op: 'create', schema: 'other.Secret', id: 's1', data: { value: 'top secret' } }], 'ATOMIC'))[0].ok).to.equal(true);
    admin = new pg.Pool({ connectionString: url, max: 2 });
    admin.on('error', () => undefined); // pool.end() does not wait for its sockets to close
    // Functions an admin might have created, called from raw SQL below.
    await admin.query("CREATE FUNCTION demo.add_company() RETURNS int LANGUAGE sql AS $$ INSERT INTO demo.demo_company (id, version) VALUES ('evil', 1) RETURNING 1 $$");
    await admin.query(
      "CREATE FUNCTION demo.add_company_definer() RETURNS int LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN DELETE FROM demo.demo_person; RETURN 1; END $$",
    );
    await admin.query(
      `CREATE FUNCTION demo.flip_and_write() RETURNS int LANGUAGE plpgsql SECURITY DEFINER AS $$
       BEGIN PERFORM set_config('transaction_read_only', 'off', true); DELETE FROM demo.demo_person; RETURN 1; END $$`,
    );
  });

  after(async () => {
    await driver?.close();
    await admin?.end();
  });

  describe('gates', () => {
    it('403 RAW_SQL_IAM_ONLY through a non-iam gateway, before anything else', async () => {
      const err = await rejected({ sql: 'SELECT 1' }, { authkind: 'public' });
      expect([err.status, err.code]).to.deep.equal([403, 'RAW_SQL_IAM_ONLY']);
      const off = await executeRawQuery({ dataset: demoDataset({ rawSqlEndpointEnabled: false }), authkind: 'public', body: {}, driver, ctx: {} }).catch((e) => e);
      expect(off.code).to.equal('RAW_SQL_IAM_ONLY');
    });

    it('403 RAW_SQL_DISABLED unless auth.iam.rawSqlEndpointEnabled', async () => {
      const err = await executeRawQuery({ dataset: demoDataset({ rawSqlEndpointEnabled: false }), authkind: 'iam', body: { sql: 'SELECT 1' }, driver, ctx: {} }).catch((e) => e);
      expect([err.status, err.code]).to.deep.equal([403, 'RAW_SQL_DISABLED']);
    });
  });

  describe('the 400s of the spec', () => {
    const cases: [string, unknown, string, string][] = [
      ['sql missing', { using: P }, 'SQL_REQUIRED', '$.sql'],
      ['sql blank', { sql: '   ' }, 'SQL_REQUIRED', '$.sql'],
      ['alias not declared in using', { sql: 'SELECT * FROM @{q}', using: P }, 'UNKNOWN_ALIAS', '$.sql'],
      ['property the schema lacks', { sql: 'SELECT @{p.salary} FROM @{p}', using: P }, 'UNKNOWN_PROPERTY', '$.sql'],
      ['placeholder with no argument', { sql: 'SELECT * FROM @{p} WHERE @{p.age} > ${minAge}', using: P }, 'MISSING_ARGUMENT', '$.sql'],
      ['unrecognised type', { sql: 'SELECT ${a}', arguments: { a: { value: 1, type: 'int32' } } }, 'INVALID_ARGUMENT_TYPE', '$.arguments.a.type'],
      ['non-string type', { sql: 'SELECT ${a}', arguments: { a: { value: 1, type: { name: 'integer' } } } }, 'INVALID_ARGUMENT_TYPE', '$.arguments.a.type'],
      ['value that does not fit its type', { sql: 'SELECT ${a}', arguments: { a: { value: '2024-13-01', type: 'date' } } }, 'INVALID_ARGUMENT_VALUE', '$.arguments.a.value'],
      ['schema the dataset lacks in using', { sql: 'SELECT 1', using: { p: 'demo.Nobody' } }, 'UNKNOWN_SCHEMA', '$.using.p'],
    ];
    for (const [what, body, code, path] of cases) {
      it(`${what} → 400 ${code}`, async () => {
        const err = await rejected(body);
        expect([err.status, err.code, err.details[0].path]).to.deep.equal([400, code, path]);
      });
    }
  });

  describe('responses', () => {
    it('returns rows keyed by column alias: unquoted lower case, quoted as written', async () => {
      const rows = await run({
        sql: 'SELECT @{p.name} AS Name, @{p.age} AS "AgeInYears", @{p.address.postcode} AS "postCode", @{p.employer.id} AS EMPLOYER FROM @{p} WHERE @{p.id} = ${id}',
        using: P,
        arguments: { id: { value: 'ann', type: 'string' } },
      });
      expect(rows).to.deep.equal([{ name: 'Ann', AgeInYears: 34, postCode: '1000', employer: 'acme' }]);
    });

    it('returns [] for an empty result', async () => {
      expect(await run({ sql: 'SELECT * FROM @{p} WHERE @{p.age} > ${a}', using: P, arguments: { a: { value: 200, type: 'integer' } } })).to.deep.equal([]);
    });

    it('joins through a link, filters with typed arguments, reuses a repeated placeholder', async () => {
      const rows = await run({
        sql: `SELECT p.@{p.name} AS person, c.@{c.name} AS company
                FROM @{p} p JOIN @{c} c ON c.@{c.id} = p.@{p.employer}
               WHERE p.@{p.age} BETWEEN \${minAge} AND \${minAge} + 20 ORDER BY 1`,
        using: { p: 'demo.Person', c: 'demo.Company' },
        arguments: { minAge: { value: 18, type: 'integer' }, unused: { value: 'x', type: 'string' } },
      });
      expect(rows).to.deep.equal([
        { person: 'Ann', company: 'Acme' },
        { person: 'Bob', company: 'Globex' },
      ]);
    });

    it('returns values as the database gives them: typed arguments round-trip', async () => {
      const [row] = await run({
        sql: 'SELECT ${d} AS d, ${t} AS t, ${j} AS j, ${n} AS n, ${l} AS l, ${b} AS b, ${x} AS x, ${u} AS u, 1.5::float8 AS f',
        arguments: {
          d: { value: '2024-02-29', type: 'date' },
          t: { value: '2024-02-29T12:00:00+02:00', type: 'timestamp' },
          j: { value: { a: [1, 'two', null] }, type: 'json' },
          n: { value: '12345678901234567890.125', type: 'decimal' },
          l: { value: '9223372036854775807', type: 'long' },
          b: { value: true, type: 'boolean' },
          x: { value: null, type: 'integer' },
          u: { value: '123e4567-e89b-12d3-a456-426614174000', type: 'uuid' },
        },
      });
      expect(row).to.deep.equal({
        d: '2024-02-29',
        t: '2024-02-29T10:00:00Z',
        j: { a: [1, 'two', null] },
        n: '12345678901234567890.125',
        l: '9223372036854775807',
        b: true,
        x: null,
        u: '123e4567-e89b-12d3-a456-426614174000',
        f: 1.5,
      });
    });

    it('400 ROW_LIMIT_EXCEEDED beyond the row cap; exactly the cap is fine', async () => {
      expect(await run({ sql: 'SELECT g FROM generate_series(1, 10) g' }, { limits: { rowLimit: 10 } })).to.have.length(10);
      // A set-returning function in the select list streams: the cursor stops after 11 rows.
      const err = await rejected({ sql: 'SELECT generate_series(1, 1000000000) AS g' }, { limits: { rowLimit: 10 } });
      expect([err.status, err.code]).to.deep.equal([400, 'ROW_LIMIT_EXCEEDED']);
      expect(err.message).to.include('10 rows');
    });

    it('400 QUERY_TIMEOUT when the statement runs past the time limit', async () => {
      // QUERY_TIMEOUT is PostgreSQL's statement timeout acting: a sleep that ran out would answer rows.
      const err = await rejected({ sql: 'SELECT pg_sleep(5)' }, { limits: { timeoutMs: 200 } });
      expect([err.status, err.code]).to.deep.equal([400, 'QUERY_TIMEOUT']);
      // The connection is fine afterwards.
      expect(await run({ sql: 'SELECT 1 AS one' })).to.deep.equal([{ one: 1 }]);
    });

    it('400 DUPLICATE_COLUMN_NAMES rather than silently dropping a column', async () => {
      const err = await rejected({ sql: 'SELECT p.@{p.name}, c.@{c.name} FROM @{p} p JOIN @{c} c ON c.@{c.id} = p.@{p.employer}', using: { p: 'demo.Person', c: 'demo.Company' } });
      expect([err.status, err.code]).to.deep.equal([400, 'DUPLICATE_COLUMN_NAMES']);
    });

    it('maps SQL errors to 400s with the position in the caller SQL', async () => {
      const sql = 'SELECT @{p.name} FROM @{p} WHERE AND';
      const syntax = await rejected({ sql, using: P });
      expect([syntax.status, syntax.code]).to.deep.equal([400, 'SQL_SYNTAX_ERROR']);
      expect(syntax.details[0]).to.include({ position: sql.indexOf('AND') + 1, sqlState: '42601' });
      expect(syntax.message).to.include(`at character ${sql.indexOf('AND') + 1}`);

      const tagged = await rejected({ sql, using: P }, { ctx: { tags: { team: 'ü */ DROP' }, executor: 'default' } });
      expect(tagged.details[0].position).to.equal(sql.indexOf('AND') + 1);

      const column = await rejected({ sql: 'SELECT nope FROM @{p}', using: P });
      expect([column.status, column.code, column.details[0].position]).to.deep.equal([400, 'UNDEFINED_COLUMN', 8]);
      const table = await rejected({ sql: 'SELECT * FROM demo.nope' });
      expect([table.status, table.code]).to.deep.equal([400, 'UNDEFINED_TABLE']);
      const fn = await rejected({ sql: 'SELECT nope(1)' });
      expect([fn.status, fn.code]).to.deep.equal([400, 'UNDEFINED_FUNCTION']);
      const zero = await rejected({ sql: 'SELECT 1 / ${z}', arguments: { z: { value: 0, type: 'integer' } } });
      expect([zero.status, zero.code]).to.deep.equal([400, 'DIVISION_BY_ZERO']);
      const cast = await rejected({ sql: "SELECT 'abc'::int" });
      expect([cast.status, cast.code]).to.deep.equal([400, 'DATA_EXCEPTION']);
      const many = await rejected({ sql: 'SELECT (SELECT g FROM generate_series(1, 2) g)' });
      expect([many.status, many.code]).to.deep.equal([400, 'SQL_ERROR']);
    });

    it('takes a trailing semicolon and comments', async () => {
      expect(await run({ sql: '-- count\nSELECT count(*)::int AS n FROM @{p}; -- done', using: P })).to.deep.equal([{ n: 3 }]);
      expect(await run({ sql: '/* a */ SELECT 1 AS one /* b */;' })).to.deep.equal([{ one: 1 }]);
    });

    it('carries tags into application_name', async () => {
      const [row] = await run({ sql: "SELECT current_setting('application_name') AS app" }, { ctx: { tags: { team: 'payments' } } });
      expect(row.app).to.equal('data-access {"team":"payments"}');
      const [plain] = await run({ sql: "SELECT current_setting('application_name') AS app" });
      expect(plain.app).to.equal('data-access-raw-sql');
    });

    it('answers queries on the history table and the catalog, as any read', async () => {
      const [row] = await run({ sql: 'SELECT count(*)::int AS n FROM demo.demo_person_history' });
      expect(row.n).to.equal(3);
      expect(await run({ sql: 'VALUES (1), (2)' })).to.deep.equal([{ column1: 1 }, { column1: 2 }]);
      expect(await run({ sql: 'TABLE @{c} ORDER BY 1 LIMIT 1', using: { c: 'demo.Company' } })).to.have.length(1);
    });
  });

  describe('injection', () => {
    it('binds argument values: a quote trick matches nothing, a statement is just text', async () => {
      const before = await snapshot();
      expect(await run({ sql: 'SELECT * FROM @{p} WHERE @{p.name} = ${n}', using: P, arguments: { n: { value: "x' OR '1'='1", type: 'string' } } })).to.deep.equal([]);
      const drop = '1; DROP TABLE demo.demo_person; --';
      expect(await run({ sql: 'SELECT ${v} AS v', arguments: { v: { value: drop, type: 'string' } } })).to.deep.equal([{ v: drop }]);
      expect(await run({ sql: 'SELECT ${v} AS v', arguments: { v: { value: { sql: "'); DELETE FROM demo.demo_person; --" }, type: 'json' } } })).to.deep.equal([
        { v: { sql: "'); DELETE FROM demo.demo_person; --" } },
      ]);
      expect(await snapshot()).to.deep.equal(before);
    });

    it('400s alias, property and schema names that try to inject SQL, and the tables stay', async () => {
      const before = await snapshot();
      const attempts: [unknown, string][] = [
        [{ sql: 'SELECT * FROM @{p; DROP TABLE demo.demo_person}', using: P }, 'INVALID_TOKEN'],
        [{ sql: 'SELECT @{p.name"--} FROM @{p}', using: P }, 'INVALID_TOKEN'],
        [{ sql: 'SELECT @{p.name FROM x; DELETE FROM demo.demo_person --} FROM @{p}', using: P }, 'INVALID_TOKEN'],
        [{ sql: 'SELECT ${a); DELETE FROM demo.demo_person; --}', arguments: {} }, 'INVALID_TOKEN'],
        [{ sql: 'SELECT * FROM @{p}', using: { p: 'demo.Person"; DROP TABLE demo.demo_person; --' } }, 'UNKNOWN_SCHEMA'],
        [{ sql: 'SELECT * FROM @{x}', using: { 'x; DROP TABLE demo.demo_person': 'demo.Person' } }, 'INVALID_USING'],
      ];
      for (const [body, code] of attempts) {
        const err = await rejected(body);
        expect([err.status, err.code], JSON.stringify(body)).to.deep.equal([400, code]);
      }
      expect(await snapshot()).to.deep.equal(before);
    });
  });

  describe('writes are rejected by the database and change nothing', () => {
    const attempts: [string, unknown, string[]][] = [
      ['INSERT', { sql: "INSERT INTO @{p} (id, version) VALUES ('x', 1)", using: P }, ['NOT_A_QUERY']],
      ['UPDATE', { sql: 'UPDATE @{p} SET @{p.age} = 0', using: P }, ['NOT_A_QUERY']],
      ['DELETE', { sql: 'DELETE FROM @{p}', using: P }, ['NOT_A_QUERY']],
      ['MERGE', { sql: 'MERGE INTO @{p} t USING @{p} s ON false WHEN NOT MATCHED THEN DO NOTHING', using: P }, ['NOT_A_QUERY']],
      ['CREATE TABLE', { sql: 'CREATE TABLE demo.evil (a int)' }, ['NOT_A_QUERY']],
      ['CREATE TABLE in public', { sql: 'CREATE TABLE public.evil (a int)' }, ['NOT_A_QUERY']],
      ['CREATE TEMP TABLE … AS', { sql: 'CREATE TEMP TABLE t AS SELECT 1' }, ['NOT_A_QUERY']],
      ['SELECT INTO', { sql: 'SELECT * INTO demo.evil FROM @{p}', using: P }, ['SQL_NOT_SUPPORTED', 'NOT_A_QUERY', 'SQL_SYNTAX_ERROR', 'READ_ONLY_VIOLATION']],
      ['DROP TABLE', { sql: 'DROP TABLE @{p}', using: P }, ['NOT_A_QUERY']],
      ['TRUNCATE', { sql: 'TRUNCATE @{p}', using: P }, ['NOT_A_QUERY']],
      ['ALTER TABLE', { sql: 'ALTER TABLE @{p} ADD COLUMN evil int', using: P }, ['NOT_A_QUERY']],
      ['GRANT', { sql: 'GRANT ALL ON @{p} TO PUBLIC', using: P }, ['NOT_A_QUERY']],
      ['a CTE with DELETE … RETURNING', { sql: 'WITH d AS (DELETE FROM @{p} RETURNING *) SELECT * FROM d', using: P }, ['READ_ONLY_VIOLATION']],
      ['a CTE followed by DELETE', { sql: 'WITH d AS (SELECT 1) DELETE FROM @{p}', using: P }, ['NOT_A_QUERY']],
      ['SELECT … FOR UPDATE', { sql: 'SELECT * FROM @{p} FOR UPDATE', using: P }, ['READ_ONLY_VIOLATION']],
      ['a function the admin created that INSERTs', { sql: 'SELECT demo.add_company()' }, ['READ_ONLY_VIOLATION']],
      ['a SECURITY DEFINER function that DELETEs', { sql: 'SELECT demo.add_company_definer()' }, ['READ_ONLY_VIOLATION']],
      ['a function that turns read-only off then DELETEs', { sql: 'SELECT demo.flip_and_write()' }, ['READ_ONLY_VIOLATION']],
      ['turning read-only off for the transaction', { sql: "SELECT set_config('transaction_read_only', 'off', false)" }, ['READ_ONLY_VIOLATION']],
      ['a large object created from a SELECT', { sql: 'SELECT lo_create(0)' }, ['READ_ONLY_VIOLATION']],
      ['lo_import of a server file', { sql: "SELECT pg_catalog.lo_import('/etc/hostname')" }, ['PERMISSION_DENIED']],
      ['pg_read_file', { sql: "SELECT pg_read_file('/etc/hostname')" }, ['PERMISSION_DENIED']],
      ['multiple statements', { sql: 'SELECT 1; DELETE FROM @{p}', using: P }, ['MULTIPLE_STATEMENTS']],
      ['multiple statements without arguments', { sql: 'SELECT 1; SELECT 2' }, ['MULTIPLE_STATEMENTS']],
      ['COPY … TO PROGRAM', { sql: "COPY @{p} TO PROGRAM 'touch /tmp/das-raw-sql-pwned'", using: P }, ['NOT_A_QUERY']],
      ['COPY … TO a file', { sql: "COPY (SELECT 1) TO '/tmp/das-raw-sql-pwned'" }, ['NOT_A_QUERY']],
      ['SET ROLE postgres', { sql: 'SET ROLE postgres' }, ['NOT_A_QUERY']],
      ['RESET ROLE', { sql: 'RESET ROLE' }, ['NOT_A_QUERY']],
      ['SET SESSION AUTHORIZATION', { sql: 'SET SESSION AUTHORIZATION postgres' }, ['NOT_A_QUERY']],
      ["set_config('role', …)", { sql: "SELECT set_config('role', 'postgres', false)" }, ['PERMISSION_DENIED']],
      ['COMMIT', { sql: 'COMMIT' }, ['NOT_A_QUERY']],
      ['DO block', { sql: 'DO $$ BEGIN DELETE FROM demo.demo_person; END $$' }, ['NOT_A_QUERY']],
      ['EXPLAIN ANALYZE DELETE', { sql: 'EXPLAIN ANALYZE DELETE FROM @{p}', using: P }, ['NOT_A_QUERY']],
      ['PREPARE', { sql: 'PREPARE x AS DELETE FROM demo.demo_person' }, ['NOT_A_QUERY']],
      ['LOCK', { sql: 'LOCK TABLE @{p}', using: P }, ['NOT_A_QUERY']],
      ['a leading comment before DELETE', { sql: '/* harmless */ -- really\n DELETE FROM @{p}', using: P }, ['NOT_A_QUERY']],
      ["reading another dataset's schema", { sql: 'SELECT * FROM other.other_secret' }, ['PERMISSION_DENIED']],
      ['reading the read-only credentials', { sql: 'SELECT * FROM das_internal.readonly_credentials' }, ['PERMISSION_DENIED']],
      // Used to answer 200, writing 20 MB of WAL that logical-decoding consumers receive.
      ['writing WAL with pg_logical_emit_message', { sql: "SELECT count(pg_logical_emit_message(false, 'x', repeat('x', 1000000))) FROM generate_series(1, 20)" }, ['PERMISSION_DENIED']],
    ];

    for (const [what, body, codes] of attempts) {
      it(`${what} → 4xx`, async () => {
        const before = await snapshot();
        const err = await rejected(body);
        expect(err.status, err.message).to.be.oneOf([400, 403]);
        expect(err.code, err.message).to.be.oneOf(codes);
        expect(err.details[0]).to.have.property('sqlState');
        expect(await snapshot()).to.deep.equal(before);
      });
    }

    it("set_config('default_transaction_read_only', 'off') does not outlive its query, and writes after it fail", async () => {
      const before = await snapshot();
      // This one is a harmless read: it changes a default for later transactions, then is rolled back.
      expect(await run({ sql: "SELECT set_config('default_transaction_read_only', 'off', false) AS v" })).to.deep.equal([{ v: 'off' }]);
      for (let i = 0; i < 6; i++) {
        const [row] = await run({ sql: "SELECT current_setting('default_transaction_read_only') AS v" });
        expect(row.v).to.equal('on');
        const err = await rejected({ sql: 'SELECT demo.add_company()' });
        expect(err.code).to.equal('READ_ONLY_VIOLATION');
      }
      expect(await snapshot()).to.deep.equal(before);
    });

    it('the other dataset cannot read this one either', async () => {
      const err = await executeRawQuery({ dataset: other, authkind: 'iam', body: { sql: 'SELECT * FROM demo.demo_person' }, driver, ctx: {} }).catch((e) => e);
      expect([err.status, err.code]).to.deep.equal([403, 'PERMISSION_DENIED']);
      expect(await executeRawQuery({ dataset: other, authkind: 'iam', body: { sql: 'SELECT @{s.value} AS v FROM @{s}', using: { s: 'other.Secret' } }, driver, ctx: {} })).to.deep.equal([
        { v: 'top secret' },
      ]);
    });
  });

  // How long each of these takes (refusals in well under a millisecond, the slowest accepted text in
  // about half a second) is measured by `npm run bench:rawsql-texts`, not asserted here.
  describe('SQL text that PostgreSQL would take long to parse', () => {
    it('400 SQL_TOO_LONG for a 400 KB text of nested comments: refused by the endpoint, before PostgreSQL (it used to run 60 s and more)', async () => {
      const err = await rejected({ sql: `SELECT 1 ${'/*'.repeat(100000)}${'*/'.repeat(100000)}` });
      expect([err.status, err.code, err.details[0].path]).to.deep.equal([400, 'SQL_TOO_LONG', '$.sql']);
      expect(err.message).to.include('at most 100000');
    });

    it('400 SQL_TOO_COMPLEX for a long run of operator characters within the length limit, naming its position', async () => {
      // Each took PostgreSQL seconds before the statement timeout could act (6 s for the first).
      const texts = [`SELECT 1 ${'/**/'.repeat(20000)}`, `SELECT 1 ${'/*'.repeat(20000)}${'*/'.repeat(20000)}`, `SELECT 1 ${'+'.repeat(20000)}1`, `SELECT 1 ${'/*+'.repeat(7000)}`];
      for (const sql of texts) {
        const err = await rejected({ sql });
        expect([err.status, err.code, err.details[0].path, err.details[0].position], sql.slice(0, 20)).to.deep.equal([400, 'SQL_TOO_COMPLEX', '$.sql', 10]);
      }
    });

    it('the longest runs the pre-check still accepts go on to PostgreSQL', async () => {
      const texts = [
        `SELECT 1 ${`${'/**/'.repeat(250)} `.repeat(99)}`,
        `SELECT 1 ${`${'/*'.repeat(500)} `.repeat(30)}${'*/ '.repeat(15000)}`,
        `SELECT 1 ${`${'+'.repeat(1000)} 1 `.repeat(95)}`,
      ];
      for (const sql of texts) {
        expect(sql.length).to.be.at.most(100000);
        // Rows, or PostgreSQL's own 400: never the pre-check's refusal.
        const err = await run({ sql }).then(
          () => undefined,
          (e: ApiError) => e,
        );
        if (err) expect([err.status, err.code], `${sql.slice(0, 20)}: ${err.message}`).to.satisfy(([status, code]: [number, string]) => status === 400 && !/^SQL_TOO_/.test(code));
      }
    });

    it('deeply nested parentheses end in a 400 from PostgreSQL', async () => {
      const err = await rejected({ sql: `SELECT ${'('.repeat(30000)}1${')'.repeat(30000)}` });
      expect(err.status, err.message).to.equal(400);
    });
  });

  it('fits the hooks of the HTTP app and of the PostgreSQL driver', () => {
    // What bootstrap wires: startDataPlane({ rawQuery: executeRawQuery, readOnly: new PostgresReadOnlyExecutor({ logger }) }).
    const wiring: { rawQuery: RawQueryHandler; readOnly: PostgresDriverOptions['readOnly'] } = { rawQuery: executeRawQuery, readOnly: new PostgresReadOnlyExecutor() };
    expect(wiring.rawQuery).to.equal(executeRawQuery);
  });

  describe('limits from the environment', () => {
    it('reads RAW_SQL_ROW_LIMIT, RAW_SQL_TIMEOUT_MS and RAW_SQL_MAX_BYTES, defaulting to 10000 rows, 15 s and 8 MiB', () => {
      expect(rawSqlLimits(dataPlaneSettings({}))).to.deep.equal({ rowLimit: 10000, timeoutMs: 15000, maxBytes: 8388608 });
      expect(rawSqlLimits(dataPlaneSettings({ RAW_SQL_ROW_LIMIT: '50', RAW_SQL_TIMEOUT_MS: '2500', RAW_SQL_MAX_BYTES: '1048576' }))).to.deep.equal({ rowLimit: 50, timeoutMs: 2500, maxBytes: 1048576 });
      expect(() => dataPlaneSettings({ RAW_SQL_ROW_LIMIT: '0' })).to.throw(/RAW_SQL_ROW_LIMIT/);
      expect(() => dataPlaneSettings({ RAW_SQL_TIMEOUT_MS: '1.5s' })).to.throw(/RAW_SQL_TIMEOUT_MS/);
    });
  });
});
