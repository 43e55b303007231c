/** Pure unit tests of the Snowflake test peer's SQL translation (no database). */
import { expect } from 'chai';
import { SnowflakeSqlError } from './errors.js';
import { lex } from './lexer.js';
import { encodeValue, parseTimestamp } from './results.js';
import { foldName, translate, type Translated } from './translate.js';

const ctx = { database: 'DB', schema: 'PUBLIC', warehouse: 'WH', role: 'SYSADMIN' };
const sql = (text: string): string => {
  const t = translate(text, ctx);
  if (t.kind !== 'sql') throw new Error(`not SQL: ${t.kind}`);
  return t.sql;
};
const refusal = (text: string): SnowflakeSqlError => {
  try {
    translate(text, ctx);
  } catch (err) {
    if (err instanceof SnowflakeSqlError) return err;
    throw err;
  }
  throw new Error(`expected ${text} to be refused`);
};

describe('Snowflake test peer: translate (pure)', () => {
  describe('lexer', () => {
    it("decodes '' and backslash escapes, $$ strings and \"identifiers\", and drops all three comment styles", () => {
      const tokens = lex(`SELECT 'a''b\\tc' , $$x'y$$ , "Q""x" -- one\n // two\n /* three */ ?`);
      expect(tokens.map((t) => [t.kind, t.text])).to.deep.equal([
        ['ident', 'SELECT'],
        ['string', "a'b\tc"],
        ['punct', ','],
        ['string', "x'y"],
        ['punct', ','],
        ['qident', 'Q"x'],
        ['bind', '?'],
      ]);
    });

    it('refuses an unterminated string or comment as a syntax error', () => {
      expect(refusal("SELECT 'abc").code).to.equal('001003');
      expect(refusal('SELECT 1 /* open').code).to.equal('001003');
    });
  });

  describe('names', () => {
    it('passes unquoted identifiers through and case-swaps quoted ones', () => {
      expect(sql('SELECT a AS x, "Mixed", "UPPER" FROM s.t')).to.equal('SELECT a AS x , "mIXED" , "upper" FROM s.t');
    });

    it('folds names as Snowflake does', () => {
      expect(foldName('das_db')).to.equal('DAS_DB');
      expect(foldName('"Mixed"')).to.equal('Mixed');
    });

    it('maps INFORMATION_SCHEMA to the peer views and drops the current database qualifier', () => {
      expect(sql('SELECT TABLE_NAME FROM DB.INFORMATION_SCHEMA.COLUMNS')).to.equal('SELECT TABLE_NAME FROM sf_peer.COLUMNS');
      expect(sql('SELECT * FROM db.s.t')).to.equal('SELECT * FROM s.t');
      expect(sql('SELECT * FROM OTHER.s.t')).to.equal('SELECT * FROM OTHER.s.t');
    });
  });

  describe('binds, literals and functions', () => {
    it('numbers ? binds and keeps :N binds', () => {
      const t = translate('SELECT ?, ?::NUMBER(38,0), :1', ctx) as Extract<Translated, { kind: 'sql' }>;
      expect(t.sql).to.equal('SELECT $1 , $2::numeric(38,0) , $1');
      expect(t.paramCount).to.equal(2);
    });

    it("re-quotes string literals for PostgreSQL (standard strings: backslashes are literal there)", () => {
      expect(sql("SELECT 'it''s \\\\ here'")).to.equal("SELECT 'it''s \\ here'");
    });

    it('rewrites PARSE_JSON, CURRENT_TIMESTAMP() and the context functions', () => {
      expect(sql('SELECT PARSE_JSON(?), CURRENT_TIMESTAMP(), CURRENT_WAREHOUSE(), CURRENT_ROLE()')).to.equal(
        "SELECT ( $1 )::jsonb , CURRENT_TIMESTAMP , 'WH'::text , 'SYSADMIN'::text",
      );
    });

    it('spells IFF, NVL, IFNULL, ZEROIFNULL, TO_VARCHAR(x) and the JSON constructors in PostgreSQL', () => {
      expect(sql('SELECT IFF(A > 1, NVL(B, 0), IFNULL(C, ?)), ZEROIFNULL(D), TO_VARCHAR(E), TO_CHAR(F, \'YYYY\')')).to.equal(
        "SELECT (CASE WHEN A > 1 THEN COALESCE( B , 0 ) ELSE COALESCE( C , $1 ) END) , COALESCE( D , 0) , ( E )::text , TO_CHAR ( F , 'YYYY' )",
      );
      expect(sql("SELECT OBJECT_CONSTRUCT('a', 1), ARRAY_CONSTRUCT(1, 2), ARRAY_SIZE(X)")).to.equal(
        "SELECT jsonb_strip_nulls(jsonb_build_object( 'a' , 1 )) , jsonb_build_array( 1 , 2 ) , jsonb_array_length( X )",
      );
    });

    it('reads VARIANT paths: DOC:a.b[0], T.DOC["k"], and the text at a path when a cast follows', () => {
      expect(sql('SELECT DOC:a.b[0], T.DOC:"Mixed Key", DOC:n::NUMBER FROM T')).to.equal(
        `SELECT ( DOC #> '{"a","b","0"}' ) , ( T.DOC #> '{"Mixed Key"}' ) , ( DOC #>> '{"n"}' )::numeric(38,0) FROM T`,
      );
      expect(sql("SELECT DOC['k'] FROM T")).to.equal(`SELECT ( DOC #> '{"k"}' ) FROM T`);
    });

    it('turns FROM VALUES into a derived table with columns column1…n', () => {
      expect(sql("SELECT COLUMN1 FROM VALUES (1, 'a'), (2, 'b') WHERE COLUMN1 > 1")).to.equal(
        "SELECT COLUMN1 FROM ( VALUES ( 1 , 'a' ) , ( 2 , 'b' ) ) AS sf_values(column1, column2) WHERE COLUMN1 > 1",
      );
      expect(sql('SELECT * FROM VALUES (1) AS v')).to.equal('SELECT * FROM ( VALUES ( 1 ) ) AS v (column1)');
      expect(sql('SELECT * FROM VALUES (1, 2) v (a, b)')).to.equal('SELECT * FROM ( VALUES ( 1 , 2 ) ) v ( a , b )');
    });
  });

  describe('types', () => {
    const cases: [string, string][] = [
      ['NUMBER(10,2)', 'numeric(10,2)'],
      ['NUMBER', 'numeric(38,0)'],
      ['INTEGER', 'numeric(38,0)'],
      ['BIGINT', 'numeric(38,0)'],
      ['FLOAT', 'double precision'],
      ['DOUBLE PRECISION', 'double precision'],
      ['VARCHAR', 'text'],
      ['VARCHAR(10)', 'varchar(10)'],
      ['STRING', 'text'],
      ['TEXT', 'text'],
      ['BOOLEAN', 'boolean'],
      ['DATE', 'date'],
      ['TIMESTAMP_NTZ(9)', 'timestamp'],
      ['TIMESTAMP_TZ', 'sf_peer.timestamp_tz'],
      ['TIMESTAMP_LTZ', 'sf_peer.timestamp_ltz'],
      ['VARIANT', 'sf_peer.variant'],
      ['OBJECT', 'sf_peer.object'],
      ['ARRAY', 'sf_peer."array"'],
    ];
    for (const [snowflake, postgres] of cases) {
      it(`${snowflake} → ${postgres}`, () => {
        expect(sql(`SELECT CAST(? AS ${snowflake})`)).to.equal(`SELECT CAST ( $1 AS ${postgres} )`);
        expect(sql(`CREATE TABLE T (C ${snowflake} NOT NULL)`)).to.equal(`CREATE TABLE T ( C ${postgres} NOT NULL )`);
      });
    }

    it('turns CREATE OR REPLACE [TRANSIENT] TABLE into a drop and a create', () => {
      expect(translate('CREATE OR REPLACE TRANSIENT TABLE DB.S."T" (A INT)', ctx)).to.deep.include({
        sql: 'CREATE TABLE S."t" ( A numeric(38,0) )',
        replaceTable: 'S."t"',
      });
    });

    it('maps ALTER TABLE … ADD COLUMN types, several columns too', () => {
      expect(sql('ALTER TABLE S.T ADD COLUMN A VARIANT, B NUMBER(5,1)')).to.equal('ALTER TABLE S.T ADD COLUMN A sf_peer.variant , ADD COLUMN B numeric(5,1)');
    });

    it('refuses PostgreSQL-only type names', () => {
      for (const type of ['jsonb', 'json', 'serial', 'bigserial', 'uuid', 'int4', 'bytea']) {
        expect(refusal(`CREATE TABLE T (C ${type})`).code, type).to.equal('002040');
      }
      expect(refusal('SELECT ?::text[]').code).to.equal('001003');
    });
  });

  describe('statements', () => {
    it('creates an ICEBERG table as a plain table and records its three settings', () => {
      const t = translate(
        "CREATE ICEBERG TABLE IF NOT EXISTS S.T (ID NUMBER(38,0), NAME STRING) EXTERNAL_VOLUME = 'vol' CATALOG = 'SNOWFLAKE' BASE_LOCATION = 'a/b'",
        ctx,
      );
      expect(t).to.deep.include({
        kind: 'sql',
        category: 'ddl',
        sql: 'CREATE TABLE IF NOT EXISTS S.T ( ID numeric(38,0) , NAME text )',
        iceberg: { schema: 'S', table: 'T', settings: { externalVolume: 'vol', catalog: 'SNOWFLAKE', baseLocation: 'a/b' } },
      });
      expect(sql('ALTER ICEBERG TABLE S.T ADD COLUMN X STRING')).to.equal('ALTER TABLE S.T ADD COLUMN X text');
    });

    it('adds RETURNING merge_action() to MERGE and lists its clause kinds; drops SET qualifiers', () => {
      const t = translate('MERGE INTO S.T USING (SELECT 1 AS ID) AS X ON T.ID = X.ID WHEN NOT MATCHED THEN INSERT (ID) VALUES (X.ID) WHEN MATCHED THEN UPDATE SET T.ID = X.ID', ctx);
      expect(t).to.deep.include({
        sql: 'MERGE INTO S.T USING ( SELECT 1 AS ID ) AS X ON T.ID = X.ID WHEN NOT MATCHED THEN INSERT ( ID ) VALUES ( X.ID ) WHEN MATCHED THEN UPDATE SET ID = X.ID RETURNING merge_action()',
        mergeKinds: ['inserted', 'updated'],
      });
      expect(sql('UPDATE S.T A SET A.X = 1, A.Y = A.X WHERE A.Z = 2')).to.equal('UPDATE S.T A SET X = 1 , Y = A.X WHERE A.Z = 2');
    });

    it('names the table an UPDATE, DELETE or MERGE writes (the peer locks it)', () => {
      const target = (text: string) => (translate(text, ctx) as Extract<Translated, { kind: 'sql' }>).target;
      expect(target('UPDATE S.T SET A = 1')).to.equal('S.T');
      expect(target('DELETE FROM DB.S."Tab" WHERE A = 1')).to.equal('S."tAB"');
      expect(target('MERGE INTO T USING (SELECT 1 AS A) S ON T.A = S.A WHEN MATCHED THEN DELETE')).to.equal('T');
      expect(target('INSERT INTO S.T (A) VALUES (1)')).to.equal(undefined);
      expect(target('SELECT 1')).to.equal(undefined);
    });

    it('recognises transaction control, USE and ALTER SESSION', () => {
      expect(translate('BEGIN', ctx)).to.deep.equal({ kind: 'begin' });
      expect(translate('begin transaction', ctx)).to.deep.equal({ kind: 'begin' });
      expect(translate('START TRANSACTION', ctx)).to.deep.equal({ kind: 'begin' });
      expect(translate('COMMIT', ctx)).to.deep.equal({ kind: 'commit' });
      expect(translate('ROLLBACK', ctx)).to.deep.equal({ kind: 'rollback' });
      expect(translate('USE WAREHOUSE wh2', ctx)).to.deep.equal({ kind: 'use', object: 'WAREHOUSE', name: 'WH2' });
      expect(translate('USE ROLE "Reader"', ctx)).to.deep.equal({ kind: 'use', object: 'ROLE', name: 'Reader' });
      expect(translate("ALTER SESSION SET QUERY_TAG = '{\"a\":1}'", ctx)).to.deep.equal({ kind: 'alterSession', set: { QUERY_TAG: '{"a":1}' }, unset: [] });
      expect(translate('ALTER SESSION UNSET QUERY_TAG', ctx)).to.deep.equal({ kind: 'alterSession', set: {}, unset: ['QUERY_TAG'] });
    });

    it('refuses what Snowflake refuses', () => {
      expect(refusal('DELETE FROM T RETURNING *').message).to.equal("SQL compilation error:\nsyntax error line 1 at position 14 unexpected 'RETURNING'.");
      expect(refusal('INSERT INTO T VALUES (1) ON CONFLICT DO NOTHING').code).to.equal('001003');
      expect(refusal('SELECT * FROM T FOR UPDATE').code).to.equal('001003');
      expect(refusal('SELECT * FROM T WHERE A = $1').code).to.equal('001003');
      expect(refusal('SELECT DISTINCT ON (A) A FROM T').code).to.equal('001003');
      const many = refusal('SELECT 1; SELECT 2; SELECT 3;');
      expect([many.code, many.sqlState, many.message]).to.deep.equal(['000008', '0A000', 'Actual statement count 3 did not match the desired statement count 1.']);
      expect(refusal('  -- nothing\n').code).to.equal('000900');
    });

    it('keeps RETURNING inside a string literal or quoted name', () => {
      expect(sql("SELECT 'RETURNING' AS \"RETURNING\"")).to.equal("SELECT 'RETURNING' AS \"returning\"");
    });
  });

  describe('result encodings', () => {
    it('encodes values as snowflake-sdk decodes them', () => {
      expect(encodeValue('boolean', 't')).to.equal('1');
      expect(encodeValue('boolean', 'f')).to.equal('0');
      expect(encodeValue('date', '1970-01-02')).to.equal('1');
      expect(encodeValue('date', '1969-12-31')).to.equal('-1');
      expect(encodeValue('timestamp_ntz', '1970-01-01 00:00:01.5')).to.equal('1.500000000');
      expect(encodeValue('timestamp_ntz', '1969-12-31 23:59:59.25')).to.equal('-0.750000000');
      expect(encodeValue('timestamp_tz', '2000-01-01 00:00:00+00')).to.equal('946684800.000000000 1440');
      expect(encodeValue('time', '01:00:00.5')).to.equal('3600.500000000');
      expect(encodeValue('binary', '\\x0aff')).to.equal('0AFF');
      expect(encodeValue('fixed', null)).to.equal(null);
      expect(parseTimestamp('2000-01-01 02:00:00+02')?.nanos).to.equal(946684800_000_000_000n);
    });
  });
});
