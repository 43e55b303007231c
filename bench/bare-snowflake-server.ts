/**
 * The warehouse benchmark's floor: a bare node:http handler sending the data plane's own statements
 * (the pure builders in dataplane/src/drivers/snowflake/) directly with snowflake-sdk on a pool of
 * logged-in connections — no framework, auth, validation, planning or engine.
 *
 *   GET  /{dataset}/{schema}/{id}  the select by id
 *   POST /{dataset}                a batch of creates: BEGIN, the current-rows SELECT, the record
 *                                  table's MERGE, the history MERGE, COMMIT (what the data plane
 *                                  sends for an ATOMIC batch of creates of one schema)
 *
 * SF_ACCESS_URL, SF_DATABASE, SF_SCHEMA, SF_WAREHOUSE, SF_ROLE, SF_USER, SF_PASSWORD, DAS_MANIFESTS
 * (the dataset's manifest, for the table layout), PORT, POOL (8).
 */
import { createServer } from 'node:http';
import { loadManifests } from '../model/manifests.js';
import { renderDatasetConfig } from '../model/render.js';
import { loadSnowflakeSdk } from '../dataplane/src/drivers/snowflake/sdk.js';
import { warehouseLayout, selectByIdSql, type Statement, type WarehouseLayout } from '../dataplane/src/drivers/snowflake/layout.js';
import { SNOWFLAKE_FORMAT } from '../dataplane/src/drivers/snowflake/table-format.js';
import { currentRowsSql, historyMergeSql, liveMergeSql } from '../dataplane/src/drivers/snowflake/write-sql.js';
import type { PlannedRow } from '../dataplane/src/drivers/snowflake/write-plan.js';

const sdk = await loadSnowflakeSdk();
type Connection = ReturnType<typeof sdk.createConnection>;

const dataset = renderDatasetConfig(loadManifests(process.env.DAS_MANIFESTS!).datasets[0]);
const layouts = new Map<string, WarehouseLayout>(Object.entries(dataset.schemas).map(([name, schema]) => [name, warehouseLayout(dataset, name, schema, SNOWFLAKE_FORMAT)]));

const connect = () =>
  new Promise<Connection>((resolve, reject) => {
    const connection = sdk.createConnection({
      account: 'bench',
      accessUrl: process.env.SF_ACCESS_URL,
      username: process.env.SF_USER ?? 'das',
      password: process.env.SF_PASSWORD ?? 'das',
      database: process.env.SF_DATABASE,
      schema: process.env.SF_SCHEMA,
      warehouse: process.env.SF_WAREHOUSE,
      role: process.env.SF_ROLE,
    } as never);
    connection.connect((err) => (err ? reject(err) : resolve(connection)));
  });

const idle: Connection[] = await Promise.all(Array.from({ length: Number(process.env.POOL ?? 8) }, connect));
const waiting: ((c: Connection) => void)[] = [];
const acquire = () => new Promise<Connection>((resolve) => (idle.length ? resolve(idle.pop()!) : waiting.push(resolve)));
const release = (c: Connection) => (waiting.length ? waiting.shift()!(c) : idle.push(c));

const exec = (c: Connection, statement: Statement | string) =>
  new Promise<unknown[]>((resolve, reject) => {
    const { text, binds } = typeof statement === 'string' ? { text: statement, binds: [] } : statement;
    c.execute({ sqlText: text, binds: binds as never, rowMode: 'array' as never, complete: (err, _stmt, rows) => (err ? reject(err) : resolve(rows ?? [])) });
  });

type Create = { create: { schema: string; id: string; data: Record<string, unknown> } };

const server = createServer((req, res) => {
  const send = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  const parts = (req.url ?? '').split('/').map(decodeURIComponent);
  if (req.method === 'GET') {
    const layout = layouts.get(parts[2]);
    if (!layout) return send(404, { error: 'no such schema' });
    void (async () => {
      const c = await acquire();
      try {
        const [row] = (await exec(c, selectByIdSql(layout, parts[3]))) as unknown[][];
        if (!row) return send(404, { error: 'not found' });
        send(200, Object.fromEntries(layout.columns.map((col, i) => [col.name, row[i]])));
      } catch (err) {
        send(503, { error: (err as Error).message });
      } finally {
        release(c);
      }
    })();
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    void (async () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { batch: { actions: Record<string, Create> } };
      const creates = Object.values(body.batch.actions).map((a) => a.create);
      const layout = layouts.get(creates[0].schema)!;
      const now = new Date().toISOString();
      const rows: PlannedRow[] = creates.map((c) => ({ id: c.id, version: 1, createdAt: now, updatedAt: now, values: layout.fields.map((f) => c.data[f.path.join('.')] ?? null) }));
      const c = await acquire();
      try {
        await exec(c, 'BEGIN');
        await exec(c, currentRowsSql(layout, rows.map((r) => r.id)));
        await exec(c, liveMergeSql(layout, rows.map((row) => ({ kind: 'insert' as const, row }))));
        await exec(c, historyMergeSql(layout, rows.map((row) => ({ row }))));
        await exec(c, 'COMMIT');
        send(200, Object.fromEntries(Object.keys(body.batch.actions).map((name, i) => [name, { id: rows[i].id, version: 1 }])));
      } catch (err) {
        await exec(c, 'ROLLBACK').catch(() => undefined);
        send(503, { error: (err as Error).message });
      } finally {
        release(c);
      }
    })();
  });
});
server.listen(Number(process.env.PORT), '127.0.0.1');
