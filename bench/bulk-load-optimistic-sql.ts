/**
 * Not part of the data plane: bench/bulk-load-statements.ts measures it against the statement the
 * PostgreSQL driver runs (applySql in dataplane/src/drivers/postgres/bulk-load.ts). Measured per
 * statement (2026-11-28) it cost PostgreSQL more (new rows 65 vs 48 µs a row, updates 95 vs 54), so
 * it was taken out of the driver and kept here until its plan is understood (docs/transactions.md).
 *
 * The optimistic write of a part's staged rows (bulk-load.ts): the same records, versions,
 * history rows and change-log rows as applySql's statement, for less of PostgreSQL's work a row.
 * applySql's `INSERT … ON CONFLICT` makes every row a speculative insertion, and takes the rows it
 * wrote back (`RETURNING` every column) to write their history. Here the ids that exist are
 * UPDATEd (`UPDATE … FROM` the staging table), the others plainly INSERTed, and the history and
 * change-log rows of the new ones are built from the staging table.
 *
 * In the driver it ran under a savepoint and stood only if nothing raced it: a concurrent write
 * that creates one of its new ids makes its INSERT fail (a unique violation), and one that deletes
 * an id it UPDATEs leaves that id unwritten (fewer rows written than staged). Either way the savepoint is
 * rolled back, nothing of it remains, and the part runs applySql's statement instead, which settles
 * each row against what is committed by then. An INSERT action takes the same way whenever a
 * staged id exists (its refusals are counted by applySql's). DELETE has no optimistic form.
 */
import type { LoadChunk } from '../dataplane/src/engine/contract.js';
import { quoteIdent as q, postgresNaming as naming } from '../dataplane/src/engine/sql/naming.js';
import { changeChannel, changesTable } from '../dataplane/src/drivers/postgres/change-log.js';
import type { TableLayout } from '../dataplane/src/drivers/postgres/sql.js';

/**
 * The optimistic statement for UPSERT and INSERT (undefined for DELETE). Creates (`f`: the staged
 * rows whose id has no record, with their next version; for INSERT every staged row) are inserted
 * into the live table (`i`) and the history (`h`) from the staging table; updates (`u`, UPSERT only)
 * answer their rows, as applySql's do. The change-log rows (`c`) follow the staged rows' order.
 * Answers the rows written. Params: $1 the record schema's name, $2 the NOTIFY channel.
 */
export function optimisticApplySql(layout: TableLayout, operation: LoadChunk['operation']): { text: string; values: unknown[] } | undefined {
  if (operation === 'DELETE') return undefined;
  const s = naming.system;
  const [id, version, created, updated] = [s.id, s.version, s.createdAt, s.updatedAt].map(q);
  const fields = layout.columns.filter((c) => c.field).map((c) => q(c.name));
  const all = layout.columns.map((c) => q(c.name)).join(', ');
  const nextVersion = `COALESCE((SELECT max(h.${version}) FROM ${layout.history} h WHERE h.${id} = st.${id}), 0) + 1`;
  // INSERT: a staged id that exists fails the plain INSERT, and applySql's statement counts the refusal.
  const absent = operation === 'UPSERT' ? ` WHERE NOT EXISTS (SELECT 1 FROM ${layout.table} x WHERE x.${id} = st.${id})` : '';
  const created_ = `f AS MATERIALIZED (SELECT st.das_row, st.${id}, ${nextVersion} AS ${version}${fields.map((f) => `, st.${f}`).join('')} FROM das_stage st${absent})`;
  const insert = `i AS (INSERT INTO ${layout.table} (${[id, version, created, updated, ...fields].join(', ')}) SELECT ${id}, ${version}, now(), now()${fields.map((f) => `, ${f}`).join('')} FROM f ORDER BY das_row)`;
  const fromCreated = `SELECT ${[id, version, 'now()', 'now()', ...fields].join(', ')} FROM f`;
  const update =
    operation === 'UPSERT'
      ? `u AS (UPDATE ${layout.table} t SET ${[`${version} = t.${version} + 1`, `${updated} = now()`, ...fields.map((f) => `${f} = st.${f}`)].join(', ')} ` +
        `FROM das_stage st WHERE t.${id} = st.${id} RETURNING ${layout.columns.map((c) => `t.${q(c.name)}`).join(', ')}, st.das_row), `
      : '';
  const history = `h AS (INSERT INTO ${layout.history} (${all}) ${fromCreated}${update ? ` UNION ALL SELECT ${all} FROM u` : ''})`;
  const written = `SELECT das_row, ${id}, ${version}, 'CREATE' AS op FROM f${update ? ` UNION ALL SELECT das_row, ${id}, ${version}, 'UPDATE' FROM u` : ''}`;
  const changes =
    `c AS (INSERT INTO ${changesTable(layout.dbSchema)} (schema_name, record_id, version, op) SELECT $1::text, l.${id}, l.${version}, l.op FROM (${written}) l ORDER BY l.das_row RETURNING seq), ` +
    `n AS (SELECT pg_notify($2::text, max(seq)::text) FROM c HAVING count(*) > 0)`;
  return {
    text: `WITH ${update}${created_}, ${insert}, ${history}, ${changes} SELECT (SELECT count(*) FROM c)::int AS written, (SELECT count(*) FROM n) AS notified, 0 AS rejected, NULL::json AS samples`,
    values: [layout.schemaName, changeChannel(layout.dbSchema)],
  };
}
