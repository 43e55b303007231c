/**
 * The Snowflake test peer through the real snowflake-sdk: login, binds and the values the SDK
 * hands back, case folding, DDL and INFORMATION_SCHEMA, DML counts, MERGE, transactions and the
 * refusals. One peer (on the shared test PostgreSQL) and one Snowflake database per run.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { testPostgresAdminUrl } from '../../../dataplane/test-support/postgres.js';
import { startSnowflakeTestPeer, type SnowflakeTestPeerHandle } from './peer.js';
import { connectSdk, destroy, exec, execError, type SdkConnection } from './sdk-client.js';

describe('Snowflake test peer (through snowflake-sdk)', function () {
  this.timeout(30000);
  let peer: SnowflakeTestPeerHandle;
  let conn: SdkConnection;
  const database = `PEER_${randomBytes(4).toString('hex').toUpperCase()}`;

  before(async () => {
    peer = await startSnowflakeTestPeer({ adminUrl: await testPostgresAdminUrl() });
    conn = await connectSdk(peer, { database, schema: 'APP', warehouse: 'WH_TEST' });
  });

  after(async () => {
    if (conn) await destroy(conn).catch(() => undefined);
    await peer?.stop();
  });

  describe('login', () => {
    it('listens on 127.0.0.1 only', () => {
      expect(peer.host).to.equal('127.0.0.1');
      expect(peer.url).to.equal(`http://127.0.0.1:${peer.port}`);
    });

    it('refuses a wrong password with 390100', async () => {
      const err = await connectSdk(peer, { database, password: 'not-das' }).then(
        () => undefined,
        (e: { code?: string; message: string }) => e,
      );
      expect(err?.code).to.equal('390100');
      expect(err?.message).to.match(/Incorrect username or password/);
    });

    it('refuses an unknown user with 390100', async () => {
      const err = await connectSdk(peer, { database, username: 'mallory', password: 'das' }).then(
        () => undefined,
        (e: { code?: string }) => e,
      );
      expect(err?.code).to.equal('390100');
    });
  });

  describe('binds and result values', () => {
    it('hands back numbers, strings, booleans, dates, timestamps, null and VARIANT as the SDK converts them', async () => {
      const { rows, statement } = await exec(
        conn,
        `SELECT ?::NUMBER(38,0) AS n, ?::NUMBER(10,2) AS dec, ?::FLOAT AS f, ?::VARCHAR AS s, ?::BOOLEAN AS b,
                ?::DATE AS d, ?::TIMESTAMP_TZ AS tz, ?::TIMESTAMP_NTZ AS ntz, ? AS nothing, PARSE_JSON(?) AS v`,
        [42, '12.50', 1.25, "it's", true, '2024-02-29', '2024-03-01T10:20:30.123Z', '2024-03-01 10:20:30.5', null, '{"a":[1,"x",null]}'],
      );
      const row = rows[0];
      expect(row.N).to.equal(42);
      expect(row.DEC).to.equal(12.5);
      expect(row.F).to.equal(1.25);
      expect(row.S).to.equal("it's");
      expect(row.B).to.equal(true);
      expect((row.D as Date).toISOString()).to.equal('2024-02-29T00:00:00.000Z');
      expect((row.TZ as Date).toISOString()).to.equal('2024-03-01T10:20:30.123Z');
      expect((row.NTZ as Date).toISOString()).to.equal('2024-03-01T10:20:30.500Z');
      expect(row.NOTHING).to.equal(null);
      expect(row.V).to.deep.equal({ a: [1, 'x', null] });
      const types = Object.fromEntries(statement.getColumns().map((c) => [c.getName(), c.getType()]));
      expect(types).to.include({ N: 'fixed', DEC: 'fixed', F: 'real', S: 'text', B: 'boolean', D: 'date', NTZ: 'timestamp_ntz', V: 'variant' });
    });

    it('takes :N binds as well as ?', async () => {
      const { rows } = await exec(conn, 'SELECT :2::VARCHAR AS second, :1::NUMBER AS first', [7, 'b']);
      expect(rows).to.deep.equal([{ SECOND: 'b', FIRST: 7 }]);
    });

    it('reports a missing bind with Snowflake error 002049', async () => {
      const err = await execError(conn, 'SELECT ?::NUMBER AS a, ?::NUMBER AS b', [1]);
      expect(err.code).to.equal('002049');
    });

    it('reads strings with doubled quotes, backslash escapes, $$ quoting and both comment styles', async () => {
      const { rows } = await exec(conn, "SELECT 'a''b' AS q, 'c\\\\d\\n' AS e, $$it's$$ AS dollar -- a comment\n // another\n /* and a block */");
      expect(rows).to.deep.equal([{ Q: "a'b", E: 'c\\d\n', DOLLAR: "it's" }]);
    });
  });

  describe('names', () => {
    it('returns unquoted aliases upper case and quoted ones as written', async () => {
      const { rows } = await exec(conn, 'SELECT 1 AS lower_alias, 2 AS "Mixed", 3 AS "UPPER", 4 AS "lower"');
      expect(Object.keys(rows[0])).to.deep.equal(['LOWER_ALIAS', 'Mixed', 'UPPER', 'lower']);
    });

    it('folds unquoted table and column names to upper case ("ID" and id are one column)', async () => {
      await exec(conn, 'CREATE TABLE IF NOT EXISTS folding (id NUMBER, "Name" VARCHAR)');
      await exec(conn, 'INSERT INTO "FOLDING" ("ID", "Name") VALUES (1, ?)', ['x']);
      const { rows } = await exec(conn, 'SELECT Id, "Name" FROM Folding');
      expect(rows).to.deep.equal([{ ID: 1, Name: 'x' }]);
      const err = await execError(conn, 'SELECT "name" FROM FOLDING');
      expect(err.code).to.equal('000904');
    });
  });

  describe('DDL and INFORMATION_SCHEMA', () => {
    before(async () => {
      await exec(conn, 'CREATE SCHEMA IF NOT EXISTS CAT');
      await exec(
        conn,
        `CREATE TABLE IF NOT EXISTS CAT.EVERY_TYPE (
           ID NUMBER(38,0) NOT NULL, AMOUNT NUMBER(12,3), COUNT_ INTEGER, RATIO FLOAT, LABEL VARCHAR(20), NOTE STRING, BODY TEXT,
           FLAG BOOLEAN, DAY DATE, AT_NTZ TIMESTAMP_NTZ(9), AT_TZ TIMESTAMP_TZ, AT_LTZ TIMESTAMP_LTZ, DOC VARIANT, OBJ OBJECT, ARR ARRAY,
           PRIMARY KEY (ID))`,
      );
      await exec(conn, 'ALTER TABLE CAT.EVERY_TYPE ADD COLUMN EXTRA DOUBLE');
    });

    it('answers INFORMATION_SCHEMA.COLUMNS in Snowflake spelling', async () => {
      const { rows } = await exec(
        conn,
        'SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE, NUMERIC_PRECISION, NUMERIC_SCALE FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = ? ORDER BY ORDINAL_POSITION',
        ['CAT'],
      );
      expect(rows.map((r) => `${r.TABLE_NAME}.${r.COLUMN_NAME}:${r.DATA_TYPE}`)).to.deep.equal([
        'EVERY_TYPE.ID:NUMBER',
        'EVERY_TYPE.AMOUNT:NUMBER',
        'EVERY_TYPE.COUNT_:NUMBER',
        'EVERY_TYPE.RATIO:FLOAT',
        'EVERY_TYPE.LABEL:TEXT',
        'EVERY_TYPE.NOTE:TEXT',
        'EVERY_TYPE.BODY:TEXT',
        'EVERY_TYPE.FLAG:BOOLEAN',
        'EVERY_TYPE.DAY:DATE',
        'EVERY_TYPE.AT_NTZ:TIMESTAMP_NTZ',
        'EVERY_TYPE.AT_TZ:TIMESTAMP_TZ',
        'EVERY_TYPE.AT_LTZ:TIMESTAMP_LTZ',
        'EVERY_TYPE.DOC:VARIANT',
        'EVERY_TYPE.OBJ:OBJECT',
        'EVERY_TYPE.ARR:ARRAY',
        'EVERY_TYPE.EXTRA:FLOAT',
      ]);
      expect(rows[0]).to.include({ NUMERIC_PRECISION: 38, NUMERIC_SCALE: 0 });
      expect(rows[1]).to.include({ NUMERIC_PRECISION: 12, NUMERIC_SCALE: 3 });
      expect(rows[3]).to.include({ NUMERIC_PRECISION: null });
    });

    it('answers INFORMATION_SCHEMA.TABLES, also database-qualified', async () => {
      const { rows } = await exec(conn, `SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE FROM ${database}.INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = 'CAT'`);
      expect(rows).to.deep.equal([{ TABLE_SCHEMA: 'CAT', TABLE_NAME: 'EVERY_TYPE', TABLE_TYPE: 'BASE TABLE' }]);
    });

    it('round-trips a value of every type through a table', async () => {
      await exec(
        conn,
        `INSERT INTO CAT.EVERY_TYPE (ID, AMOUNT, COUNT_, RATIO, LABEL, NOTE, BODY, FLAG, DAY, AT_NTZ, AT_TZ, AT_LTZ, DOC, OBJ, ARR)
         SELECT ?::NUMBER(38,0), ?::NUMBER(12,3), ?::NUMBER(38,0), ?::FLOAT, ?::VARCHAR, ?::VARCHAR, ?::VARCHAR, ?::BOOLEAN, ?::DATE,
                ?::TIMESTAMP_NTZ, ?::TIMESTAMP_TZ, ?::TIMESTAMP_TZ, PARSE_JSON(?), PARSE_JSON(?), PARSE_JSON(?)`,
        [1, '1.5', 3, 0.5, 'label', 'note', 'body', false, '1969-12-31', '1969-12-31 23:59:59.25', '2000-01-01T00:00:00Z', '2000-01-01T00:00:00Z', '"s"', '{"k":1}', '[1,2]'],
      );
      const { rows, statement } = await exec(conn, 'SELECT * FROM CAT.EVERY_TYPE WHERE ID = ?', [1]);
      const row = rows[0];
      expect(row).to.include({ ID: 1, AMOUNT: 1.5, COUNT_: 3, RATIO: 0.5, LABEL: 'label', NOTE: 'note', BODY: 'body', FLAG: false, DOC: 's', EXTRA: null });
      expect(row.OBJ).to.deep.equal({ k: 1 });
      expect(row.ARR).to.deep.equal([1, 2]);
      expect((row.DAY as Date).toISOString()).to.equal('1969-12-31T00:00:00.000Z');
      expect((row.AT_NTZ as Date).toISOString()).to.equal('1969-12-31T23:59:59.250Z');
      expect((row.AT_TZ as Date).toISOString()).to.equal('2000-01-01T00:00:00.000Z');
      expect((row.AT_LTZ as Date).toISOString()).to.equal('2000-01-01T00:00:00.000Z');
      const types = Object.fromEntries(statement.getColumns().map((c) => [c.getName(), c.getType()]));
      expect(types).to.include({ AT_TZ: 'timestamp_tz', AT_LTZ: 'timestamp_ltz', DOC: 'variant', OBJ: 'object', ARR: 'array' });
    });

    it('truncates, also IF EXISTS of a missing table; a column added twice is 002002', async () => {
      await exec(conn, 'CREATE TABLE IF NOT EXISTS CAT.TRUNC (A INT)');
      await exec(conn, 'INSERT INTO CAT.TRUNC (A) VALUES (1)');
      await exec(conn, 'TRUNCATE TABLE IF EXISTS CAT.TRUNC');
      expect((await exec(conn, 'SELECT COUNT(*) AS N FROM CAT.TRUNC')).rows).to.deep.equal([{ N: 0 }]);
      expect((await exec(conn, 'TRUNCATE TABLE IF EXISTS CAT.NEVER_THERE')).rows).to.deep.equal([{ status: 'Statement executed successfully.' }]);
      expect((await execError(conn, 'TRUNCATE TABLE CAT.NEVER_THERE')).code).to.equal('002003');
      expect((await execError(conn, 'ALTER TABLE CAT.TRUNC ADD COLUMN A INT')).code).to.equal('002002');
    });

    it('CREATE OR REPLACE TABLE replaces, TRANSIENT is a plain table', async () => {
      await exec(conn, 'CREATE OR REPLACE TRANSIENT TABLE CAT.REPLACED (A INT)');
      await exec(conn, 'INSERT INTO CAT.REPLACED (A) VALUES (1)');
      expect((await exec(conn, 'CREATE OR REPLACE TABLE CAT.REPLACED (B VARCHAR)')).rows).to.deep.equal([{ status: 'Table REPLACED successfully created.' }]);
      expect((await exec(conn, 'SELECT * FROM CAT.REPLACED')).statement.getColumns().map((c) => c.getName())).to.deep.equal(['B']);
    });

    it('drops tables and schemas', async () => {
      await exec(conn, 'CREATE SCHEMA IF NOT EXISTS DOOMED');
      await exec(conn, 'CREATE TABLE IF NOT EXISTS DOOMED.T (A INT)');
      expect((await exec(conn, 'DROP TABLE IF EXISTS DOOMED.T')).rows).to.deep.equal([{ status: 'T successfully dropped.' }]);
      await exec(conn, 'DROP SCHEMA IF EXISTS DOOMED CASCADE');
      const err = await execError(conn, 'SELECT * FROM DOOMED.T');
      expect(err.code).to.equal('002003');
    });
  });

  describe('writes', () => {
    before(async () => {
      await exec(conn, 'CREATE TABLE IF NOT EXISTS APP.PEOPLE (ID NUMBER(38,0) NOT NULL, NAME VARCHAR, AGE NUMBER(38,0), PRIMARY KEY (ID))');
    });

    it('counts INSERT, UPDATE and DELETE as Snowflake does, with getNumUpdatedRows()', async () => {
      const insert = await exec(conn, 'INSERT INTO APP.PEOPLE (ID, NAME, AGE) VALUES (?, ?, ?), (?, ?, ?), (3, \'c\', 30)', [1, 'a', 10, 2, 'b', 20]);
      expect(insert.rows).to.deep.equal([{ 'number of rows inserted': 3 }]);
      expect(insert.statement.getNumUpdatedRows()).to.equal(3);
      const update = await exec(conn, 'UPDATE APP.PEOPLE P SET P.AGE = P.AGE + 1 WHERE ID IN (1, 2)');
      expect(update.rows).to.deep.equal([{ 'number of rows updated': 2, 'number of multi-joined rows updated': 0 }]);
      expect(update.statement.getNumUpdatedRows()).to.equal(2);
      const del = await exec(conn, 'DELETE FROM APP.PEOPLE WHERE ID = ?', [3]);
      expect(del.rows).to.deep.equal([{ 'number of rows deleted': 1 }]);
      expect(del.statement.getNumUpdatedRows()).to.equal(1);
      const select = await exec(conn, 'SELECT ID, AGE FROM APP.PEOPLE ORDER BY ID');
      expect(select.rows).to.deep.equal([{ ID: 1, AGE: 11 }, { ID: 2, AGE: 21 }]);
      expect(select.statement.getNumUpdatedRows()).to.equal(-1);
    });

    it('runs MERGE … USING (SELECT … FROM VALUES …) and reports a count per clause kind', async () => {
      const merge = await exec(
        conn,
        `MERGE INTO APP.PEOPLE USING (SELECT COLUMN1 AS ID, COLUMN2 AS NAME, COLUMN3 AS GONE FROM VALUES (?::NUMBER(38,0), ?::VARCHAR, ?::BOOLEAN), (?::NUMBER(38,0), ?::VARCHAR, ?::BOOLEAN), (?::NUMBER(38,0), ?::VARCHAR, ?::BOOLEAN)) AS S
         ON PEOPLE.ID = S.ID
         WHEN MATCHED AND S.GONE THEN DELETE
         WHEN MATCHED THEN UPDATE SET PEOPLE.NAME = S.NAME
         WHEN NOT MATCHED THEN INSERT (ID, NAME) VALUES (S.ID, S.NAME)`,
        [1, 'a2', false, 2, 'b', true, 9, 'new', false],
      );
      expect(merge.rows).to.deep.equal([{ 'number of rows inserted': 1, 'number of rows updated': 1, 'number of rows deleted': 1 }]);
      expect(merge.statement.getNumUpdatedRows()).to.equal(3);
      const { rows } = await exec(conn, 'SELECT ID, NAME FROM APP.PEOPLE ORDER BY ID');
      expect(rows).to.deep.equal([{ ID: 1, NAME: 'a2' }, { ID: 9, NAME: 'new' }]);
    });

    it('reports only the clause kinds a MERGE has', async () => {
      const merge = await exec(conn, `MERGE INTO APP.PEOPLE T USING (SELECT 1 AS ID) S ON T.ID = S.ID WHEN MATCHED THEN UPDATE SET T.AGE = 50`);
      expect(merge.rows).to.deep.equal([{ 'number of rows updated': 1 }]);
    });

    it('runs MERGEs on one table one at a time, as Snowflake does: the second sees what the first committed', async () => {
      await exec(conn, 'CREATE TABLE IF NOT EXISTS APP.COUNTERS (ID NUMBER(38,0) NOT NULL, N NUMBER(38,0), PRIMARY KEY (ID))');
      const upsert = `MERGE INTO APP.COUNTERS T USING (SELECT ?::NUMBER(38,0) AS ID) S ON T.ID = S.ID
        WHEN MATCHED THEN UPDATE SET T.N = T.N + 1 WHEN NOT MATCHED THEN INSERT (ID, N) VALUES (S.ID, 1)`;
      const other = await connectSdk(peer, { database, schema: 'APP' });
      try {
        await exec(conn, 'BEGIN');
        expect((await exec(conn, upsert, [1])).rows).to.deep.equal([{ 'number of rows inserted': 1, 'number of rows updated': 0 }]);
        let settled = false;
        const second = exec(other, upsert, [1]).finally(() => (settled = true));
        await new Promise((r) => setTimeout(r, 300));
        expect(settled, 'the second MERGE waits for the first transaction').to.equal(false);
        await exec(conn, 'COMMIT');
        expect((await second).rows).to.deep.equal([{ 'number of rows inserted': 0, 'number of rows updated': 1 }]);
        expect((await exec(conn, 'SELECT ID, N FROM APP.COUNTERS')).rows).to.deep.equal([{ ID: 1, N: 2 }]);
      } finally {
        await exec(conn, 'ROLLBACK').catch(() => undefined);
        await destroy(other);
      }
    });

    it('names VALUES columns COLUMN1…n', async () => {
      const { rows } = await exec(conn, "SELECT * FROM VALUES (1, 'x'), (2, 'y') ORDER BY COLUMN1 DESC");
      expect(rows).to.deep.equal([{ COLUMN1: 2, COLUMN2: 'y' }, { COLUMN1: 1, COLUMN2: 'x' }]);
    });

    it('runs an array binding (binds: [[…], […]]) once per row and counts them all', async () => {
      const insert = await exec(conn, 'INSERT INTO APP.PEOPLE (ID, NAME) VALUES (?, ?)', [
        [201, 'x'],
        [202, null],
      ]);
      expect(insert.rows).to.deep.equal([{ 'number of rows inserted': 2 }]);
      expect((await exec(conn, 'SELECT ID, NAME FROM APP.PEOPLE WHERE ID > 200 ORDER BY ID')).rows).to.deep.equal([
        { ID: 201, NAME: 'x' },
        { ID: 202, NAME: null },
      ]);
      await exec(conn, 'DELETE FROM APP.PEOPLE WHERE ID > 200');
      const err = await execError(conn, 'INSERT INTO APP.PEOPLE (ID, NAME) VALUES (?, ?)', [
        [203, 'kept?'],
        [null, 'no id'],
      ]);
      expect(err.code).to.equal('100072');
      expect((await exec(conn, 'SELECT COUNT(*) AS N FROM APP.PEOPLE WHERE ID > 200')).rows, 'all rows or none').to.deep.equal([{ N: 0 }]);
    });

    it('refuses a MERGE whose source matches one target row twice with 100090', async () => {
      const err = await execError(
        conn,
        "MERGE INTO APP.PEOPLE T USING (SELECT 1 AS ID UNION ALL SELECT 1) S ON T.ID = S.ID WHEN MATCHED THEN UPDATE SET T.NAME = 'twice'",
      );
      expect([err.code, err.sqlState]).to.deep.equal(['100090', '42P18']);
    });

    it('refuses values that do not read as their type with the code Snowflake uses for the type', async () => {
      const cases: [string, string][] = [
        ["SELECT 'abc'::NUMBER AS V", '100038'],
        ["SELECT 'maybe'::BOOLEAN AS V", '100037'],
        ["SELECT '2024-13-45'::DATE AS V", '100040'],
        ["SELECT 'soon'::TIMESTAMP_TZ AS V", '100035'],
        ["SELECT PARSE_JSON('{nope') AS V", '100069'],
      ];
      for (const [sql, code] of cases) expect((await execError(conn, sql)).code, sql).to.equal(code);
      expect((await execError(conn, "SELECT 'abc'::NUMBER AS V")).message).to.equal("Numeric value 'abc' is not recognized");
    });

    it('refuses NULL into a NOT NULL column with 100072', async () => {
      const err = await execError(conn, 'INSERT INTO APP.PEOPLE (ID, NAME) VALUES (NULL, ?)', ['x']);
      expect(err.code).to.equal('100072');
    });

    it('reports a missing table with 002003 / 42S02', async () => {
      const err = await execError(conn, 'SELECT * FROM APP.NO_SUCH_TABLE');
      expect(err.code).to.equal('002003');
      expect(err.sqlState).to.equal('42S02');
      expect(err.message).to.equal("SQL compilation error:\nObject 'APP.NO_SUCH_TABLE' does not exist or not authorized.");
    });
  });

  describe('queries the driver contract lists', () => {
    before(async () => {
      await exec(conn, 'CREATE TABLE IF NOT EXISTS APP.ORDERS (ID NUMBER(38,0), PERSON NUMBER(38,0), TOTAL NUMBER(10,2), NOTE VARCHAR, AT TIMESTAMP_TZ)');
      await exec(conn, 'CREATE TABLE IF NOT EXISTS APP.BUYERS (ID NUMBER(38,0), NAME VARCHAR)');
      await exec(conn, "INSERT INTO APP.BUYERS (ID, NAME) VALUES (1, 'Ann'), (2, 'bob'), (3, NULL)");
      await exec(conn, "INSERT INTO APP.ORDERS (ID, PERSON, TOTAL, NOTE) VALUES (10, 1, 5.50, 'first'), (11, 1, 7.25, NULL), (12, 2, 1.00, 'Rush')");
    });

    it('joins, groups, filters and orders as Snowflake does', async () => {
      const { rows } = await exec(
        conn,
        `SELECT B.NAME AS WHO, COUNT(*) AS N, MAX(O.TOTAL) AS TOP, COALESCE(MAX(O.NOTE), 'none') AS NOTE,
                CASE WHEN COUNT(O.ID) > 1 THEN 'many' ELSE 'few' END AS KIND
         FROM APP.BUYERS AS B LEFT JOIN APP.ORDERS O ON O.PERSON = B.ID
         WHERE (B.NAME ILIKE ? OR B.NAME LIKE 'b%' OR B.NAME IS NULL) AND NOT (B.ID IN (?, ?)) AND B.ID <> 99
           AND B.ID <= (SELECT MAX(ID) FROM APP.BUYERS)
         GROUP BY B.NAME ORDER BY WHO ASC NULLS FIRST LIMIT 10`,
        ['a%', 7, 8],
      );
      expect(rows).to.deep.equal([
        { WHO: null, N: 1, TOP: null, NOTE: 'none', KIND: 'few' },
        { WHO: 'Ann', N: 2, TOP: 7.25, NOTE: 'first', KIND: 'many' },
        { WHO: 'bob', N: 1, TOP: 1, NOTE: 'Rush', KIND: 'few' },
      ]);
    });

    it('answers UNION ALL and CURRENT_TIMESTAMP()', async () => {
      const { rows } = await exec(conn, "SELECT 'a' AS K, CURRENT_TIMESTAMP() AS T UNION ALL SELECT 'b', CURRENT_TIMESTAMP() ORDER BY K DESC");
      expect(rows.map((r) => r.K)).to.deep.equal(['b', 'a']);
      expect(Math.abs((rows[0].T as Date).getTime() - Date.now())).to.be.lessThan(60000);
    });

    it('answers the Snowflake functions and VARIANT paths the peer spells for PostgreSQL', async () => {
      await exec(conn, 'CREATE TABLE IF NOT EXISTS APP.DOCS (ID NUMBER(38,0), DOC VARIANT)');
      await exec(conn, 'INSERT INTO APP.DOCS (ID, DOC) SELECT 1, PARSE_JSON(?)', ['{"name":"Ann","tags":["a","b"],"n":7,"Nested":{"k":true}}']);
      const { rows } = await exec(
        conn,
        `SELECT DOC:name::VARCHAR AS NAME, DOC:tags[1]::VARCHAR AS SECOND, DOC:n::NUMBER + 1 AS N, DOC:Nested.k AS K, ARRAY_SIZE(DOC:tags) AS TAGS,
                IFF(DOC:n::NUMBER > 5, 'big', 'small') AS SIZE, NVL(DOC:missing::VARCHAR, 'none') AS MISSING,
                OBJECT_CONSTRUCT('id', ID, 'gone', NULL) AS OBJ, ARRAY_CONSTRUCT(1, 2) AS ARR, TO_VARCHAR(ID) AS TEXT_ID
         FROM APP.DOCS D WHERE D.DOC:name::VARCHAR = ?`,
        ['Ann'],
      );
      expect(rows).to.deep.equal([{ NAME: 'Ann', SECOND: 'b', N: 8, K: true, TAGS: 2, SIZE: 'big', MISSING: 'none', OBJ: { id: 1 }, ARR: [1, 2], TEXT_ID: '1' }]);
    });

    it('lists schemas in INFORMATION_SCHEMA.SCHEMATA', async () => {
      const { rows } = await exec(conn, "SELECT SCHEMA_NAME FROM INFORMATION_SCHEMA.SCHEMATA WHERE SCHEMA_NAME IN ('APP', 'PUBLIC') ORDER BY 1");
      expect(rows).to.deep.equal([{ SCHEMA_NAME: 'APP' }, { SCHEMA_NAME: 'PUBLIC' }]);
    });
  });

  describe('HTTP', () => {
    it('answers an unknown route 404, a body that is not JSON 400, and a query without a session 390104, all as JSON', async () => {
      const unknown = await fetch(`${peer.url}/nowhere`);
      expect(unknown.status).to.equal(404);
      expect(((await unknown.json()) as { message: string }).message).to.match(/no route GET \/nowhere/);
      const notJson = await fetch(`${peer.url}/session/v1/login-request`, { method: 'POST', body: '{nope', headers: { 'content-type': 'application/json' } });
      expect(notJson.status).to.equal(400);
      expect(await notJson.json()).to.deep.include({ success: false, message: 'request body ($): not valid JSON' });
      const noSession = await fetch(`${peer.url}/queries/v1/query-request`, { method: 'POST', body: JSON.stringify({ sqlText: 'SELECT 1' }) });
      expect(noSession.status).to.equal(200);
      expect(await noSession.json()).to.deep.include({ success: false, code: '390104' });
    });
  });

  describe('transactions', () => {
    it('keeps BEGIN … ROLLBACK across statements of one session, and a failed statement does not end it', async () => {
      await exec(conn, 'CREATE TABLE IF NOT EXISTS APP.TXN (ID NUMBER)');
      await exec(conn, 'BEGIN TRANSACTION');
      await exec(conn, 'INSERT INTO APP.TXN (ID) VALUES (1)');
      await execError(conn, 'SELECT * FROM APP.MISSING');
      await exec(conn, 'INSERT INTO APP.TXN (ID) VALUES (2)');
      const other = await connectSdk(peer, { database, schema: 'APP' });
      try {
        expect((await exec(other, 'SELECT COUNT(*) AS N FROM APP.TXN')).rows).to.deep.equal([{ N: 0 }]);
        expect((await exec(conn, 'SELECT COUNT(*) AS N FROM APP.TXN')).rows).to.deep.equal([{ N: 2 }]);
        await exec(conn, 'ROLLBACK');
        expect((await exec(conn, 'SELECT COUNT(*) AS N FROM APP.TXN')).rows).to.deep.equal([{ N: 0 }]);
        await exec(conn, 'START TRANSACTION');
        await exec(conn, 'INSERT INTO APP.TXN (ID) VALUES (3)');
        await exec(conn, 'COMMIT');
        expect((await exec(other, 'SELECT ID FROM TXN')).rows).to.deep.equal([{ ID: 3 }]);
      } finally {
        await destroy(other);
      }
    });
  });

  describe('refusals (what Snowflake refuses)', () => {
    const refused: [string, string, string][] = [
      ['RETURNING', "INSERT INTO APP.PEOPLE (ID) VALUES (100) RETURNING ID", '001003'],
      ['ON CONFLICT', 'INSERT INTO APP.PEOPLE (ID) VALUES (1) ON CONFLICT (ID) DO NOTHING', '001003'],
      ['FOR UPDATE', 'SELECT * FROM APP.PEOPLE FOR UPDATE', '001003'],
      ['FOR SHARE', 'SELECT * FROM APP.PEOPLE FOR SHARE', '001003'],
      ['$1 placeholders', 'SELECT * FROM APP.PEOPLE WHERE ID = $1', '001003'],
      ['DISTINCT ON', 'SELECT DISTINCT ON (ID) ID FROM APP.PEOPLE', '001003'],
      ['jsonb', "SELECT '{}'::jsonb AS j", '002040'],
      ['serial', 'CREATE TABLE APP.S (ID SERIAL)', '002040'],
      ['bigserial', 'CREATE TABLE APP.S (ID BIGSERIAL)', '002040'],
      ['text[]', 'CREATE TABLE APP.S (TAGS TEXT[])', '001003'],
      ['int4', 'SELECT CAST(1 AS INT4) AS I', '002040'],
    ];
    for (const [what, sql, code] of refused) {
      it(`refuses ${what} with ${code}`, async () => {
        const err = await execError(conn, sql, []);
        expect(err.code).to.equal(code);
      });
    }

    it('refuses more than one statement in one request with 000008', async () => {
      const err = await execError(conn, 'SELECT 1; SELECT 2');
      expect(err.code).to.equal('000008');
      expect(err.message).to.equal('Actual statement count 2 did not match the desired statement count 1.');
    });

    it('accepts one statement with a trailing semicolon', async () => {
      expect((await exec(conn, 'SELECT 1 AS ONE;')).rows).to.deep.equal([{ ONE: 1 }]);
    });

    it('refuses a syntax error with 001003', async () => {
      const err = await execError(conn, 'SELEC 1');
      expect(err.code).to.equal('001003');
      expect(err.sqlState).to.equal('42000');
    });
  });
});
