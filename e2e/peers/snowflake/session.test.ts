/**
 * The Snowflake test peer's session behaviour through the real snowflake-sdk: roles (the read-only
 * role refused by PostgreSQL itself, reported as 003001), the query log (warehouse, role,
 * QUERY_TAG per statement and per session), asynchronous execution, key-pair login, token
 * renewal, heartbeat and logout, and the Iceberg settings record.
 */
import { expect } from 'chai';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { testPostgresAdminUrl } from '../../../dataplane/test-support/postgres.js';
import { startSnowflakeTestPeer, type SnowflakeTestPeerHandle } from './peer.js';
import { connectSdk, destroy, exec, execError, type SdkConnection } from './sdk-client.js';

describe('Snowflake test peer sessions (through snowflake-sdk)', function () {
  this.timeout(30000);
  let peer: SnowflakeTestPeerHandle;
  let writer: SdkConnection;
  const database = `SESS_${randomBytes(4).toString('hex').toUpperCase()}`;

  before(async () => {
    peer = await startSnowflakeTestPeer({ adminUrl: await testPostgresAdminUrl(), readOnlyRoles: ['AUDITOR'] });
    writer = await connectSdk(peer, { database, schema: 'APP', warehouse: 'LOAD_WH', role: 'SERVICE_WRITER' });
    await exec(writer, 'CREATE TABLE IF NOT EXISTS APP.ITEMS (ID NUMBER(38,0) NOT NULL, NAME VARCHAR)');
    await exec(writer, "INSERT INTO APP.ITEMS (ID, NAME) VALUES (1, 'one')");
  });

  after(async () => {
    if (writer) await destroy(writer).catch(() => undefined);
    await peer?.stop();
  });

  describe('roles', () => {
    for (const role of ['SERVICE_READONLY', 'AUDITOR', 'REPORTING_READONLY']) {
      it(`${role} may SELECT and is refused INSERT/UPDATE/DELETE/CREATE with 003001`, async () => {
        const reader = await connectSdk(peer, { database, schema: 'APP', role });
        try {
          expect((await exec(reader, 'SELECT ID, NAME FROM APP.ITEMS')).rows).to.deep.equal([{ ID: 1, NAME: 'one' }]);
          for (const sql of [
            "INSERT INTO APP.ITEMS (ID, NAME) VALUES (2, 'two')",
            "UPDATE APP.ITEMS SET NAME = 'x'",
            'DELETE FROM APP.ITEMS',
            'CREATE TABLE APP.NOPE (A NUMBER)',
            'CREATE SCHEMA NOPE',
            `MERGE INTO APP.ITEMS USING (SELECT 1 AS ID) S ON ITEMS.ID = S.ID WHEN MATCHED THEN DELETE`,
          ]) {
            const err = await execError(reader, sql);
            expect(err.code, sql).to.equal('003001');
            expect(err.message, sql).to.match(/^SQL access control error:\nInsufficient privileges/);
          }
        } finally {
          await destroy(reader);
        }
        expect((await exec(writer, 'SELECT COUNT(*) AS N FROM APP.ITEMS')).rows).to.deep.equal([{ N: 1 }]);
      });
    }

    it('USE ROLE switches a session between writer and read-only', async () => {
      const session = await connectSdk(peer, { database, schema: 'APP', role: 'SERVICE_WRITER' });
      try {
        await exec(session, 'USE ROLE SERVICE_READONLY');
        expect((await execError(session, "INSERT INTO ITEMS (ID) VALUES (5)")).code).to.equal('003001');
        expect((await exec(session, 'SELECT CURRENT_ROLE() AS R')).rows).to.deep.equal([{ R: 'SERVICE_READONLY' }]);
        await exec(session, 'USE ROLE SERVICE_WRITER');
        expect((await exec(session, 'DELETE FROM ITEMS WHERE ID = 5')).rows).to.deep.equal([{ 'number of rows deleted': 0 }]);
      } finally {
        await destroy(session);
      }
    });
  });

  describe('query log', () => {
    it('records warehouse, role, database, schema and QUERY_TAG per statement and per session', async () => {
      peer.clearQueries();
      await exec(writer, 'SELECT 1 AS A', [], { parameters: { QUERY_TAG: '{"request":"r1"}' } });
      await exec(writer, 'SELECT 2 AS A');
      await exec(writer, "ALTER SESSION SET QUERY_TAG = 'session-tag'");
      await exec(writer, 'SELECT 3 AS A');
      await exec(writer, 'SELECT 4 AS A', [], { parameters: { QUERY_TAG: 'statement-tag' } });
      await exec(writer, 'USE WAREHOUSE OTHER_WH');
      await exec(writer, 'ALTER SESSION UNSET QUERY_TAG');
      await exec(writer, 'SELECT 5 AS A');
      await exec(writer, 'USE WAREHOUSE LOAD_WH');
      const log = peer.queries().map((q) => ({ sql: q.sqlText, tag: q.queryTag, warehouse: q.warehouse, role: q.role, database: q.database, schema: q.schema, async: q.async }));
      const common = { role: 'SERVICE_WRITER', database, schema: 'APP', async: false };
      expect(log).to.deep.equal([
        { sql: 'SELECT 1 AS A', tag: '{"request":"r1"}', warehouse: 'LOAD_WH', ...common },
        { sql: 'SELECT 2 AS A', tag: null, warehouse: 'LOAD_WH', ...common },
        { sql: "ALTER SESSION SET QUERY_TAG = 'session-tag'", tag: null, warehouse: 'LOAD_WH', ...common },
        { sql: 'SELECT 3 AS A', tag: 'session-tag', warehouse: 'LOAD_WH', ...common },
        { sql: 'SELECT 4 AS A', tag: 'statement-tag', warehouse: 'LOAD_WH', ...common },
        { sql: 'USE WAREHOUSE OTHER_WH', tag: 'session-tag', warehouse: 'LOAD_WH', ...common },
        { sql: 'ALTER SESSION UNSET QUERY_TAG', tag: 'session-tag', warehouse: 'OTHER_WH', ...common },
        { sql: 'SELECT 5 AS A', tag: null, warehouse: 'OTHER_WH', ...common },
        { sql: 'USE WAREHOUSE LOAD_WH', tag: null, warehouse: 'OTHER_WH', ...common },
      ]);
      expect(peer.warehouses()).to.include.members(['LOAD_WH', 'OTHER_WH']);
    });

    it('records how each statement ended', async () => {
      peer.clearQueries();
      await exec(writer, 'SELECT 1 AS A');
      await execError(writer, 'SELECT * FROM APP.NOT_HERE');
      expect(peer.queries().map((q) => [q.status, q.errorCode])).to.deep.equal([
        ['succeeded', null],
        ['failed', '002003'],
      ]);
    });

    it('records whether a statement ran inside a transaction', async () => {
      peer.clearQueries();
      await exec(writer, 'BEGIN');
      await exec(writer, 'SELECT 1 AS A');
      await exec(writer, 'COMMIT');
      await exec(writer, 'SELECT 2 AS A');
      expect(peer.queries().map((q) => q.inTransaction)).to.deep.equal([false, true, true, false]);
    });
  });

  describe('asynchronous execution', () => {
    it('asyncExec returns a query id at once; getQueryStatus and getResultsFromQueryId follow it', async () => {
      const submitted = await new Promise<{ queryId: string }>((resolve, reject) => {
        writer.execute({
          sqlText: 'SELECT pg_sleep(0.3) IS NULL AS SLEPT, ?::VARCHAR AS V',
          binds: ['async'],
          asyncExec: true,
          complete: (err: Error | undefined, stmt: { getQueryId(): string }) => (err ? reject(err) : resolve({ queryId: stmt.getQueryId() })),
        });
      });
      expect(submitted.queryId).to.match(/^[0-9a-f-]{36}$/);
      expect(writer.isStillRunning(await writer.getQueryStatus(submitted.queryId))).to.equal(true);
      const statement = await writer.getResultsFromQueryId({ queryId: submitted.queryId });
      const rows: Record<string, unknown>[] = [];
      await new Promise<void>((resolve, reject) => {
        statement.streamRows().on('data', (r: Record<string, unknown>) => rows.push(r)).on('end', () => resolve()).on('error', reject);
      });
      expect(rows).to.deep.equal([{ SLEPT: false, V: 'async' }]);
      expect(await writer.getQueryStatus(submitted.queryId)).to.equal('SUCCESS');
      expect(peer.queries().find((q) => q.queryId === submitted.queryId)?.async).to.equal(true);
    });

    it('reports a failed asynchronous query as FAILED_WITH_ERROR with its Snowflake error', async () => {
      const queryId = await new Promise<string>((resolve, reject) => {
        writer.execute({
          sqlText: 'SELECT * FROM APP.NOT_THERE',
          asyncExec: true,
          complete: (err: Error | undefined, stmt: { getQueryId(): string }) => (err ? reject(err) : resolve(stmt.getQueryId())),
        });
      });
      const err = await writer.getResultsFromQueryId({ queryId }).then(
        () => undefined,
        (e: { code?: string; message: string }) => e,
      );
      expect(err?.code).to.equal('002003');
      expect(await writer.getQueryStatus(queryId)).to.equal('FAILED_WITH_ERROR');
    });
  });

  describe('authentication and session lifetime', () => {
    it('logs in with a key pair (SNOWFLAKE_JWT) against the registered public key, and refuses another key', async () => {
      const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      peer.registerPublicKey('svc_keypair', publicKey.export({ type: 'spki', format: 'pem' }).toString());
      const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
      const session = await connectSdk(peer, { username: 'svc_keypair', authenticator: 'SNOWFLAKE_JWT', privateKey: pem, database, schema: 'APP' });
      try {
        expect((await exec(session, 'SELECT COUNT(*) AS N FROM ITEMS')).rows).to.deep.equal([{ N: 1 }]);
      } finally {
        await destroy(session);
      }
      const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
      const err = await connectSdk(peer, { username: 'svc_keypair', authenticator: 'SNOWFLAKE_JWT', privateKey: other, database }).then(
        () => undefined,
        (e: { code?: string }) => e,
      );
      expect(err?.code).to.equal('390144');
    });

    it('renews an expired session token with the master token and carries on (same session, same transaction)', async () => {
      // A peer of its own whose session tokens last 1 s (the SDK renews only on its statement path).
      const shortLived = await startSnowflakeTestPeer({ adminUrl: await testPostgresAdminUrl(), sessionTokenValiditySeconds: 1 });
      const session = await connectSdk(shortLived, { database, schema: 'APP' });
      try {
        await exec(session, 'BEGIN');
        await exec(session, "INSERT INTO ITEMS (ID, NAME) VALUES (77, 'renewed')");
        await new Promise((r) => setTimeout(r, 1200));
        expect((await exec(session, 'SELECT NAME FROM ITEMS WHERE ID = 77')).rows).to.deep.equal([{ NAME: 'renewed' }]);
        await exec(session, 'ROLLBACK');
        expect(shortLived.peer.renewals).to.be.greaterThan(0);
        expect(shortLived.queries().map((q) => q.sessionId)).to.have.members([1, 1, 1, 1]);
      } finally {
        await destroy(session);
        await shortLived.stop();
      }
    });

    it('answers heartbeats, and after logout the session is gone (its open transaction rolled back)', async () => {
      const session = await connectSdk(peer, { database, schema: 'APP' });
      await session.heartbeatAsync();
      await exec(session, 'BEGIN');
      await exec(session, "INSERT INTO ITEMS (ID, NAME) VALUES (88, 'never')");
      await destroy(session);
      expect(session.isUp()).to.equal(false);
      expect((await exec(writer, 'SELECT COUNT(*) AS N FROM ITEMS WHERE ID = 88')).rows).to.deep.equal([{ N: 0 }]);
    });
  });

  describe('stopping', () => {
    it('stops at once even while a statement waits on a lock; the held transaction dies with it', async () => {
      const own = await startSnowflakeTestPeer({ adminUrl: await testPostgresAdminUrl() });
      const holder = await connectSdk(own, { database, schema: 'APP' });
      const waiter = await connectSdk(own, { database, schema: 'APP' });
      await exec(holder, 'BEGIN');
      await exec(holder, "UPDATE ITEMS SET NAME = 'held' WHERE ID = 1");
      // The SDK retries the lost request for seconds before it reports a network error: not awaited here.
      void exec(waiter, "UPDATE ITEMS SET NAME = 'waited' WHERE ID = 1").catch(() => undefined);
      await new Promise((r) => setTimeout(r, 200));
      const started = Date.now();
      await own.stop();
      expect(Date.now() - started).to.be.lessThan(3000);
      expect((await exec(writer, 'SELECT NAME FROM APP.ITEMS WHERE ID = 1')).rows).to.deep.equal([{ NAME: 'one' }]);
    });
  });

  describe('Iceberg tables', () => {
    it('creates CREATE ICEBERG TABLE as a plain table and records EXTERNAL_VOLUME, CATALOG and BASE_LOCATION', async () => {
      await exec(
        writer,
        "CREATE ICEBERG TABLE IF NOT EXISTS APP.EVENTS (ID NUMBER(38,0), KIND STRING) EXTERNAL_VOLUME = 'lake_vol' CATALOG = 'SNOWFLAKE' BASE_LOCATION = 'app/events'",
      );
      await exec(writer, 'ALTER ICEBERG TABLE APP.EVENTS ADD COLUMN AT TIMESTAMP_NTZ');
      await exec(writer, `MERGE INTO APP.EVENTS USING (SELECT COLUMN1 AS ID, COLUMN2 AS KIND FROM VALUES (1, 'a')) AS S ON EVENTS.ID = S.ID WHEN NOT MATCHED THEN INSERT (ID, KIND) VALUES (S.ID, S.KIND)`);
      expect(await peer.icebergTables(database)).to.deep.equal([{ schema: 'APP', table: 'EVENTS', externalVolume: 'lake_vol', catalog: 'SNOWFLAKE', baseLocation: 'app/events' }]);
      const { rows } = await exec(writer, "SELECT TABLE_NAME, IS_ICEBERG FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = 'APP' ORDER BY TABLE_NAME");
      expect(rows).to.deep.equal([
        { TABLE_NAME: 'EVENTS', IS_ICEBERG: 'YES' },
        { TABLE_NAME: 'ITEMS', IS_ICEBERG: 'NO' },
      ]);
      const columns = await exec(writer, "SELECT COLUMN_NAME, DATA_TYPE FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_NAME = 'EVENTS' ORDER BY ORDINAL_POSITION");
      expect(columns.rows.map((r) => `${r.COLUMN_NAME}:${r.DATA_TYPE}`)).to.deep.equal(['ID:NUMBER', 'KIND:TEXT', 'AT:TIMESTAMP_NTZ']);
    });
  });
});
