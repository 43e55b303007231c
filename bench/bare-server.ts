/**
 * The benchmark floor: a bare node:http + pg handler doing the same single-row read as
 * `GET /{dataset}/{schema}/{id}`, with the same pool size. No framework, no auth, no validation.
 */
import { createServer } from 'node:http';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.POOL_SIZE ?? 10) });
const text =
  'SELECT "id", "version", "created_at", "updated_at", "name", "email", "age", "address_street", "address_postcode", "employer_id" FROM "demo"."demo_person" WHERE "id" = $1';

const server = createServer(async (req, res) => {
  const id = decodeURIComponent((req.url ?? '').split('/')[3] ?? '');
  try {
    const { rows } = await pool.query({ name: 'read-person', text, values: [id] });
    if (!rows[0]) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
      return;
    }
    const r = rows[0];
    const body = JSON.stringify({ id: r.id, version: r.version, name: r.name, email: r.email, age: Number(r.age), address: { street: r.address_street, postcode: r.address_postcode } });
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  } catch (err) {
    res.writeHead(500).end(String(err));
  }
});
server.listen(Number(process.env.PORT), '127.0.0.1', () => console.log('listening'));
process.on('SIGTERM', () => server.close(() => pool.end().then(() => process.exit(0))));
