/**
 * The Snowflake test peer's user stage through the real snowflake-sdk: PUT from a buffer (the SDK
 * uploads to the peer's storage endpoint), COPY INTO from the staged gzip CSV with values that
 * round-trip (NULL vs '', quotes, commas, line breaks, unicode, numbers, booleans, timestamps),
 * PURGE, the query log, and the refusals (a file never PUT, options the peer does not speak).
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { testPostgresAdminUrl } from '../../../dataplane/test-support/postgres.js';
import { parseCsv } from './csv.js';
import { startSnowflakeTestPeer, type SnowflakeTestPeerHandle } from './peer.js';
import { connectSdk, destroy, exec, execError, type SdkConnection } from './sdk-client.js';

const csvValue = (v: unknown) => (v === null ? '' : `"${String(v).replace(/"/g, '""')}"`);
const csv = (rows: unknown[][]) => rows.map((r) => r.map(csvValue).join(',')).join('\n') + '\n';

const COPY = (file: string, extra = '') =>
  `COPY INTO T (N, D, S, B, TS) FROM '@~/load/${file}' FILE_FORMAT = (TYPE = CSV FIELD_OPTIONALLY_ENCLOSED_BY = '"' COMPRESSION = GZIP EMPTY_FIELD_AS_NULL = TRUE) FORCE = TRUE PURGE = TRUE ON_ERROR = ABORT_STATEMENT${extra}`;
const PUT = (file: string) => `PUT 'file://${file}' '@~/load/' AUTO_COMPRESS = FALSE SOURCE_COMPRESSION = GZIP OVERWRITE = TRUE`;

describe('Snowflake test peer: PUT and COPY INTO (through snowflake-sdk)', function () {
  this.timeout(30000);
  let peer: SnowflakeTestPeerHandle;
  let conn: SdkConnection;
  const database = `STAGE_${randomBytes(4).toString('hex').toUpperCase()}`;

  before(async () => {
    peer = await startSnowflakeTestPeer({ adminUrl: await testPostgresAdminUrl() });
    conn = await connectSdk(peer, { database, schema: 'PUBLIC', warehouse: 'WH_LOAD' });
    await exec(conn, 'CREATE TABLE T (N NUMBER(38,0), D NUMBER(10,2), S VARCHAR, B BOOLEAN, TS TIMESTAMP_TZ)');
  });

  after(async () => {
    if (conn) await destroy(conn).catch(() => undefined);
    await peer?.stop();
  });

  it('parses RFC-4180 CSV: unquoted empty is NULL, quoted "" is empty, doubled quotes, commas and line breaks inside quotes', () => {
    expect(parseCsv('1,,""\n"a,b","say ""hi""","x\ny"\r\n')).to.deep.equal([
      ['1', null, ''],
      ['a,b', 'say "hi"', 'x\ny'],
    ]);
    expect(() => parseCsv('"open')).to.throw(/not closed/);
  });

  it('loads a gzip CSV PUT from a buffer: values round-trip, PURGE removes the file, both statements are logged', async () => {
    const rows = [
      [1, '12.50', 'plain', 'TRUE', '2024-03-01T10:20:30.123Z'],
      [2, null, '', 'FALSE', null],
      [3, '-0.01', 'quote " comma , newline \n end', null, '2024-02-29T23:59:59.000+02:00'],
      [4, '3', 'unicode ✓ 日本 é', 'TRUE', '2024-01-01T00:00:00Z'],
      [5, '0', null, 'FALSE', '2024-01-01T00:00:00Z'],
    ];
    peer.clearQueries();
    const put = await exec(conn, PUT('1-5.csv.gz'), undefined, { fileStream: gzipSync(Buffer.from(csv(rows))) });
    expect(put.rows).to.deep.equal([]);
    expect(peer.stagedFiles()).to.include('load/1-5.csv.gz');
    const copied = await exec(conn, COPY('1-5.csv.gz'));
    expect(copied.rows[0]).to.include({ file: 'load/1-5.csv.gz', status: 'LOADED', rows_parsed: 5, rows_loaded: 5 });
    expect(peer.stagedFiles()).to.not.include('load/1-5.csv.gz');
    const logged = peer.queries().map((q) => ({ sql: q.sqlText.split(' ')[0], warehouse: q.warehouse, status: q.status }));
    expect(logged).to.deep.equal([
      { sql: 'PUT', warehouse: 'WH_LOAD', status: 'succeeded' },
      { sql: 'COPY', warehouse: 'WH_LOAD', status: 'succeeded' },
    ]);
    const { rows: back } = await exec(conn, 'SELECT N, D, S, S IS NULL AS SNULL, B, TS FROM T ORDER BY N');
    expect(back.map((r) => [r.N, r.D, r.S, r.SNULL, r.B])).to.deep.equal([
      [1, 12.5, 'plain', false, true],
      [2, null, '', false, false],
      [3, -0.01, 'quote " comma , newline \n end', false, null],
      [4, 3, 'unicode ✓ 日本 é', false, true],
      [5, 0, null, true, false],
    ]);
    expect(back[1].TS).to.equal(null);
    const { rows: times } = await exec(
      conn,
      "SELECT N FROM T WHERE (N = 1 AND TS = '2024-03-01T10:20:30.123Z'::TIMESTAMP_TZ) OR (N = 3 AND TS = '2024-02-29T21:59:59Z'::TIMESTAMP_TZ) ORDER BY N",
    );
    expect(times.map((r) => r.N)).to.deep.equal([1, 3]);
    // Purged: a second COPY INTO of the file fails.
    const again = await execError(conn, COPY('1-5.csv.gz'));
    expect(again.code).to.equal('091016');
    expect(again.message).to.match(/Remote file '@~\/load\/1-5.csv.gz' was not found/);
  });

  it('loads VARIANT values from JSON text', async () => {
    await exec(conn, 'CREATE TABLE V (ID VARCHAR, DOC VARIANT)');
    await exec(conn, `PUT 'file://v.csv.gz' '@~/load/' AUTO_COMPRESS = FALSE SOURCE_COMPRESSION = GZIP OVERWRITE = TRUE`, undefined, {
      fileStream: gzipSync(Buffer.from(csv([['a', JSON.stringify({ k: 'v "q"', n: [1, 2] })]]))),
    });
    await exec(conn, `COPY INTO V (ID, DOC) FROM '@~/load/v.csv.gz' FILE_FORMAT = (TYPE = CSV FIELD_OPTIONALLY_ENCLOSED_BY = '"' COMPRESSION = GZIP) FORCE = TRUE PURGE = TRUE`);
    const { rows } = await exec(conn, "SELECT DOC:k::VARCHAR AS K FROM V WHERE ID = 'a'");
    expect(rows[0].K).to.equal('v "q"');
  });

  it('refuses a COPY INTO of a file never PUT, and the whole file when one row does not fit (ON_ERROR = ABORT_STATEMENT)', async () => {
    const missing = await execError(conn, COPY('never.csv.gz'));
    expect(missing.code).to.equal('091016');
    await exec(conn, PUT('bad.csv.gz'), undefined, { fileStream: gzipSync(Buffer.from(csv([[10, '1', 'ok', 'TRUE', null], [11, 'not a number', 'x', 'TRUE', null]]))) });
    const bad = await execError(conn, COPY('bad.csv.gz'));
    expect(bad.code).to.be.a('string');
    const { rows } = await exec(conn, 'SELECT COUNT(*) AS C FROM T WHERE N >= 10');
    expect(rows[0].C).to.equal(0);
    await exec(conn, PUT('short.csv.gz'), undefined, { fileStream: gzipSync(Buffer.from('"1","2"\n')) });
    const short = await execError(conn, COPY('short.csv.gz'));
    expect(short.code).to.equal('100080');
  });

  it('refuses what it does not speak with a SQL compilation error', async () => {
    for (const sql of [
      COPY('x.csv.gz').replace('FORCE = TRUE', 'FORCE = FALSE'),
      COPY('x.csv.gz').replace('ON_ERROR = ABORT_STATEMENT', 'ON_ERROR = CONTINUE'),
      "COPY INTO T FROM '@~/load/x.csv.gz' FORCE = TRUE",
      COPY('x.csv.gz').replace("'@~/load/", "'@my_stage/"),
      COPY('x.csv.gz').replace('TYPE = CSV', 'TYPE = JSON'),
    ]) {
      const err = await execError(conn, sql);
      expect(err.code, sql).to.equal('001003');
    }
  });

  it('refuses an upload to a location no PUT granted, with a 404', async () => {
    const unknown = await fetch(`${peer.url}/sfpeer-stage/00/x.csv.gz`, { method: 'PUT', body: 'x' });
    expect(unknown.status).to.equal(404);
    expect(await unknown.json()).to.deep.equal({ error: 'no such upload location' });
  });
});
