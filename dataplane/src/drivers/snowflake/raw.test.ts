/**
 * Raw SQL on the warehouse: the rewriter with Snowflake's lexical rules and `?` binds (pure), and
 * the read-only executor's bounds against the test peer (row limit, result budget, duplicate names).
 */
import { expect } from 'chai';
import pino from 'pino';
import { parseRawSqlRequest } from '../../engine/sql/raw-request.js';
import { rewriteRawSql } from '../../engine/sql/raw-rewrite.js';
import { suiteDataset } from '../../../test-support/driver-suite.js';
import { StoreError } from '../../engine/contract.js';
import { SnowflakeDriver } from './driver.js';
import { warehouseSqlDialect } from './dialect.js';

import { warehouseDriverUnderTest } from '../../../test-support/snowflake-peer.js';
import { SNOWFLAKE_FORMAT } from './table-format.js';
import { warehouseDataset } from '../../../test-support/snowflake-fixtures.js';

const snowflakeRawDialect = warehouseSqlDialect(SNOWFLAKE_FORMAT);

const rewrite = (body: unknown) => {
  const dataset = warehouseDataset();
  const request = parseRawSqlRequest(body, dataset);
  return rewriteRawSql(request.sql, request.using, request.arguments, dataset, snowflakeRawDialect);
};

describe('raw SQL on the warehouse', () => {
  describe('rewriting with Snowflake\'s rules (pure)', () => {
    it('tokens become upper-case quoted names; each argument use its own cast `?` bind', () => {
      const out = rewrite({
        sql: 'SELECT @{o.address.city}, @{o.customer.id}, @{o.id} FROM @{o} WHERE @{o.count} > ${n} OR @{o.count} < ${n} AND @{o.paid} = ${paid}',
        using: { o: 'shop.Order' },
        arguments: { n: { value: 3, type: 'integer' }, paid: { value: true, type: 'boolean' } },
      });
      expect(out.text).to.equal('SELECT "ADDRESS_CITY", "CUSTOMER_ID", "ID" FROM "SHOP"."SHOP_ORDER" WHERE "COUNT" > (?::NUMBER(10,0)) OR "COUNT" < (?::NUMBER(10,0)) AND "PAID" = (?::BOOLEAN)');
      expect(out.values).to.deep.equal(['3', '3', 'true']);
    });

    it('skips \'…\' strings with backslash escapes, $$…$$ strings, -- and // comments, non-nested block comments', () => {
      const sql = "SELECT 'it\\'s ${a}', $$ ${b} $$, /* ${c} /* */ ${d} -- ${e}\n// ${f}\n, ${g}";
      const out = rewrite({ sql, arguments: { d: { value: 'D', type: 'string' }, g: { value: { k: 1 }, type: 'json' } } });
      expect(out.text).to.equal("SELECT 'it\\'s ${a}', $$ ${b} $$, /* ${c} /* */ (?::VARCHAR) -- ${e}\n// ${f}\n, (PARSE_JSON(?))");
      expect(out.values).to.deep.equal(['D', '{"k":1}']);
    });
  });

  describe('the read-only executor (against the test peer)', function () {
    this.timeout(60_000);
    let driver: SnowflakeDriver;
    let dataset: ReturnType<typeof suiteDataset>;
    const refusal = async (promise: Promise<unknown>) => {
      try {
        await promise;
      } catch (err) {
        if (err instanceof StoreError && err.failure.kind === 'query-refused') return err.failure;
        throw err;
      }
      throw new Error('expected a refusal');
    };
    const options = { rowLimit: 1000, timeoutMs: 10_000 };

    before(async () => {
      const t = await warehouseDriverUnderTest(SNOWFLAKE_FORMAT, { logger: pino({ level: 'silent' }) });
      driver = t.driver;
      dataset = suiteDataset('snowflake', t.location);
      await driver.prepare(dataset);
      const ops = Array.from({ length: 5 }, (_, i) => ({ op: 'create' as const, schema: 'suite.Person', id: `p${i}`, data: { name: `P${i}`, born: '2000-01-0' + (i + 1), seen: '2024-05-01T10:00:00+02:00', age: i } }));
      await driver.write(dataset, ops, 'ATOMIC');
    });
    after(async () => driver?.close());

    it('answers rows with the warehouse\'s names and JSON values (dates, timestamps in UTC)', async () => {
      const rows = await driver.rawQuery(dataset, { text: 'SELECT "ID" AS id, "BORN", "SEEN", "AGE" FROM "SUITE"."SUITE_PERSON" WHERE "ID" = ?', values: ['p1'] }, options);
      expect(rows).to.deep.equal([{ ID: 'p1', BORN: '2000-01-02', SEEN: '2024-05-01T08:00:00.000Z', AGE: 1 }]);
    });

    it('refuses more rows than the row limit, a result over the budget, and duplicate column names (400s)', async () => {
      expect(await refusal(driver.rawQuery(dataset, { text: 'SELECT "ID" FROM "SUITE"."SUITE_PERSON"', values: [] }, { ...options, rowLimit: 4 }))).to.deep.include({ problem: 'invalid', code: 'ROW_LIMIT_EXCEEDED' });
      expect(await driver.rawQuery(dataset, { text: 'SELECT "ID" FROM "SUITE"."SUITE_PERSON"', values: [] }, { ...options, rowLimit: 5 })).to.have.length(5);
      expect(await refusal(driver.rawQuery(dataset, { text: 'SELECT "ID", "NAME" FROM "SUITE"."SUITE_PERSON"', values: [] }, { ...options, maxBytes: 60 }))).to.deep.include({ code: 'RESULT_TOO_LARGE' });
      expect(await refusal(driver.rawQuery(dataset, { text: 'SELECT "ID", "NAME" AS id FROM "SUITE"."SUITE_PERSON"', values: [] }, options))).to.deep.include({ code: 'DUPLICATE_COLUMN_NAMES' });
    });

    it('a query past the time limit is a 400 QUERY_TIMEOUT soon after it, even if the warehouse does not stop it', async () => {
      // The peer does not enforce STATEMENT_TIMEOUT_IN_SECONDS and lets PostgreSQL's pg_sleep through
      // (on Snowflake: SYSTEM$WAIT); the data plane's own cancel answers.
      const started = Date.now();
      expect(await refusal(driver.rawQuery(dataset, { text: 'SELECT pg_sleep(6) IS NULL AS slept', values: [] }, { ...options, timeoutMs: 500 }))).to.deep.include({ problem: 'invalid', code: 'QUERY_TIMEOUT' });
      expect(Date.now() - started).to.be.within(2000, 4500);
      // The next query gets a working session.
      expect(await driver.rawQuery(dataset, { text: 'SELECT 1 AS one', values: [] }, options)).to.deep.equal([{ ONE: 1 }]);
    });

    it('a syntax error and an unknown table are 400s with the warehouse\'s message', async () => {
      expect(await refusal(driver.rawQuery(dataset, { text: 'SELEC 1', values: [] }, options))).to.deep.include({ problem: 'invalid', code: 'SQL_SYNTAX_ERROR' });
      expect(await refusal(driver.rawQuery(dataset, { text: 'SELECT * FROM "SUITE"."NOPE"', values: [] }, options))).to.deep.include({ problem: 'invalid', code: 'UNDEFINED_TABLE' });
    });
  });
});
