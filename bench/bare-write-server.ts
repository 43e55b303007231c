/**
 * The write floor: a bare node:http + pg handler doing, for `POST /{dataset}` with a create or a
 * batch of creates, the statements the PostgreSQL driver runs for an ATOMIC write of several
 * actions, in one transaction on one pooled connection (drivers/postgres/driver.ts
 * `writeAtomically`). It does so for a single create too, as issue 31 defines this yardstick
 * ("the same statements in one transaction"), although the driver now writes one action as a
 * single statement with its change inline (one round trip, not four): for a create, the ratio
 * against this handler includes that saving, not only the cost of the data plane's layers.
 *
 *   BEGIN
 *   per record: INSERT into the table with its version, copying the row into the history table
 *               in the same statement (sql.ts `insertSql` without the inline change CTEs)
 *   the change-log rows of all records, one statement, with the NOTIFY (change-log.ts `appendChangesSql`)
 *   COMMIT
 *
 * The texts are written out by hand, as a developer on pg would, for the example's demo.Person;
 * values bound, unnamed statements as the driver's writes are. No auth, no validation beyond
 * what the database does.
 */
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.POOL_SIZE ?? 10) });
const cols = '"id", "version", "created_at", "updated_at", "name", "email", "age", "address_street", "address_postcode", "employer_id"';
const insert =
  `WITH w AS (INSERT INTO "demo"."demo_person" (${cols}) VALUES ($1, COALESCE((SELECT max("version") FROM "demo"."demo_person_history" WHERE "id" = $1), 0) + 1, now(), now(), $2, $3, $4, $5, $6, $7) RETURNING ${cols}), ` +
  `h AS (INSERT INTO "demo"."demo_person_history" (${cols}) SELECT ${cols} FROM w) SELECT ${cols} FROM w`;
const appendChanges =
  `WITH c AS (INSERT INTO "demo"."das$changes" (schema_name, record_id, version, op) ` +
  `SELECT u.s, u.i, u.v, u.o FROM unnest($1::text[], $2::text[], $3::int[], $4::text[]) WITH ORDINALITY AS u(s, i, v, o, n) ORDER BY u.n RETURNING seq), ` +
  `n AS (SELECT pg_notify($5::text, max(seq)::text) FROM c HAVING count(*) > 0) ` +
  `SELECT count(*)::int AS appended FROM c, (SELECT count(*) FROM n) x`;
const channel = `das_changes_${createHash('sha256').update('demo').digest('hex').slice(0, 24)}`;

interface Person {
  name?: string;
  email?: string;
  age?: number;
  address?: { street?: string; postcode?: string };
  employer?: { id?: string };
}
type Create = { id: string; data: Person };

async function createAll(creates: Create[]): Promise<Record<string, unknown>[]> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const records: Record<string, unknown>[] = [];
    for (const { id, data } of creates) {
      const { rows } = await client.query({
        text: insert,
        values: [id, data.name ?? null, data.email ?? null, data.age ?? null, data.address?.street ?? null, data.address?.postcode ?? null, data.employer?.id ?? null],
        rowMode: 'array',
      });
      const r = rows[0];
      records.push({ id: r[0], version: r[1], createdAt: r[2], updatedAt: r[3], name: r[4], email: r[5], age: Number(r[6]), address: { street: r[7], postcode: r[8] } });
    }
    await client.query(appendChanges, [creates.map(() => 'demo.Person'), records.map((r) => r.id), records.map((r) => r.version), creates.map(() => 'CREATE'), channel]);
    await client.query('COMMIT');
    client.release();
    return records;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    client.release(true);
    throw err;
  }
}

const server = createServer((req, res) => {
  if (req.method !== 'POST') {
    res.writeHead(404).end();
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', async () => {
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      if (body.create) {
        const [record] = await createAll([body.create]);
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(record));
        return;
      }
      const names = Object.keys(body.batch.actions);
      const records = await createAll(names.map((n) => body.batch.actions[n].create));
      const results: Record<string, unknown> = {};
      names.forEach((n, i) => (results[n] = { record: records[i] }));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ results }));
    } catch (err) {
      res.writeHead(500).end(String(err));
    }
  });
});
server.listen(Number(process.env.PORT), '127.0.0.1', () => console.log('listening'));
process.on('SIGTERM', () => server.close(() => pool.end().then(() => process.exit(0))));
