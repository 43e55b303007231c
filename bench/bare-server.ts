/**
 * The benchmark floor: a bare node:http + pg handler doing the same single-row read as
 * `GET /{dataset}/{schema}/{id}`, with the same pool size. No framework, no auth, no validation.
 *
 * BARE_READ=pg (default) runs the read as pg's own Query (a named prepared statement: Bind,
 * Describe, Execute, Sync); BARE_READ=prepared runs it as the data plane's driver does
 * (PreparedRead: no Describe, columns known), which isolates the cost of everything else the data
 * plane does from the cost of the database round trip.
 */
import { createServer } from 'node:http';
import pg from 'pg';
import { PreparedRead } from '../dataplane/src/drivers/postgres/prepared-read.js';
import { columnParser } from '../dataplane/src/drivers/postgres/types.js';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.POOL_SIZE ?? 10) });
const text =
  'SELECT "id", "version", "created_at", "updated_at", "name", "email", "age", "address_street", "address_postcode", "employer_id" FROM "demo"."demo_person" WHERE "id" = $1';
const prepared = {
  name: 'read-person-prepared',
  text,
  parsers: ['text', 'integer', 'timestamp with time zone', 'timestamp with time zone', 'text', 'text', 'bigint', 'text', 'text', 'text'].map(columnParser),
};
const usePrepared = process.env.BARE_READ === 'prepared';

type Row = { id: string; version: number; name: string; email: string; age: unknown; address_street: string; address_postcode: string };

async function readPerson(id: string): Promise<Row | undefined> {
  if (!usePrepared) return (await pool.query({ name: 'read-person', text, values: [id] })).rows[0];
  const [r] = await PreparedRead.run(pool, prepared, [id]);
  return r && ({ id: r[0], version: r[1], name: r[4], email: r[5], age: r[6], address_street: r[7], address_postcode: r[8] } as Row);
}

const server = createServer(async (req, res) => {
  const id = decodeURIComponent((req.url ?? '').split('/')[3] ?? '');
  try {
    const r = await readPerson(id);
    if (!r) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
      return;
    }
    const body = JSON.stringify({ id: r.id, version: r.version, name: r.name, email: r.email, age: Number(r.age), address: { street: r.address_street, postcode: r.address_postcode } });
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  } catch (err) {
    res.writeHead(500).end(String(err));
  }
});
server.listen(Number(process.env.PORT), '127.0.0.1', () => console.log('listening'));
process.on('SIGTERM', () => server.close(() => pool.end().then(() => process.exit(0))));
