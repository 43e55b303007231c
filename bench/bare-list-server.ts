/**
 * The list benchmark's floor: a bare node:http + pg handler answering a page of demo.Person with
 * the same keyset SELECT the data plane's PostgreSQL driver runs (list-sql.ts, the same filter,
 * sort and LIMIT n+1), with the same pool size. No framework, no auth, no validation; the next
 * position is handed out as plain base64url JSON, not a signed token.
 *
 *   GET /?after=<base64url JSON of the keyset position>   (no `after`: the first page)
 *
 * LIST_FILTER and LIST_SORT (the bench's filter and sort), LIST_LIMIT (100), POOL_SIZE (10).
 */
import { createServer } from 'node:http';
import { resolve } from 'node:path';
import pg from 'pg';
import { compileFilter } from '../model/filter.js';
import { loadManifests } from '../model/manifests.js';
import { renderDatasetConfig } from '../model/render.js';
import { compileSort } from '../model/sort.js';
import { listSql } from '../dataplane/src/drivers/postgres/list-sql.js';
import { tableLayout } from '../dataplane/src/drivers/postgres/sql.js';

const ROOT = resolve(import.meta.dirname, '..');
const demo = loadManifests(resolve(ROOT, 'examples')).datasets.find((d) => d.metadata.name === 'demo');
if (!demo) throw new Error('examples/ has no demo dataset');
const dataset = renderDatasetConfig(demo);
const schema = dataset.schemas['demo.Person'];
const layout = tableLayout(dataset, 'demo.Person', schema);
const filter = compileFilter(process.env.LIST_FILTER ?? 'age >= 30', schema);
const sort = compileSort(process.env.LIST_SORT ?? 'name', schema);
const LIMIT = Number(process.env.LIST_LIMIT ?? 100);
const columns = sort.map((key) => (key.field.system ? key.field.system : key.field.path.join('_')));

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.POOL_SIZE ?? 10) });

type Row = { id: string; version: number; name: string | null; email: string | null; age: string | null; address_street: string | null; address_postcode: string | null; employer_id: string | null };

const server = createServer(async (req, res) => {
  try {
    const token = new URL(req.url ?? '/', 'http://x').searchParams.get('after');
    const after = token ? (JSON.parse(Buffer.from(token, 'base64url').toString()) as unknown[]) : undefined;
    const { rows } = await pool.query<Row>(listSql(layout, { filter, sort, limit: LIMIT + 1, after }));
    const page = rows.slice(0, LIMIT);
    const items = page.map((r) => ({
      id: r.id,
      version: r.version,
      name: r.name,
      email: r.email,
      age: r.age === null ? null : Number(r.age),
      address: { street: r.address_street, postcode: r.address_postcode },
      ...(r.employer_id ? { employer: { id: r.employer_id } } : {}),
    }));
    const last = page.at(-1) as Record<string, unknown> | undefined;
    const nextToken = rows.length > LIMIT && last ? Buffer.from(JSON.stringify(columns.map((c) => last[c]))).toString('base64url') : undefined;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ items, ...(nextToken ? { nextToken } : {}) }));
  } catch (err) {
    res.writeHead(500).end(String(err));
  }
});
server.listen(Number(process.env.PORT), '127.0.0.1', () => console.log('listening'));
process.on('SIGTERM', () => server.close(() => pool.end().then(() => process.exit(0))));
