/**
 * The warehouse change log (docs/warehouse.md, "Change feed"): a standard table DAS_CHANGES in the
 * dataset's database schema (both kinds: it is updated and pruned, which Iceberg tables are not
 * made for), one row per record version written, and DAS_CHANGES_PRUNED, the highest position
 * pruned. Pure statements; the reader is change-feed.ts.
 *
 * Writers append (TX, N, SCHEMA_NAME, RECORD_ID, VERSION, OP, COMMITTED_AT) without a position,
 * in the transaction that writes the records: the request's BEGIN … COMMIT (snowflake's ATOMIC and
 * ATOMIC_ALL), else each table's own (QUORUM, EVENTUAL, background writes; every iceberg write).
 * Bulk-load chunks append insert-only (keyed by schema, id and version), so a re-run chunk
 * appends nothing twice.
 *
 * Positions are given late, by readers, as on PostgreSQL: a numbering transaction first updates
 * the one DAS_CHANGES_PRUNED row (Snowflake locks the table for that UPDATE until COMMIT, the peer's
 * PostgreSQL the row: numberings run one at a time), then, in a later statement (read committed:
 * it sees the previous numbering's commit), numbers every committed row without a position after
 * the highest position given or pruned, and commits. A row that commits late is numbered by a
 * later numbering, higher: a reader following its cursor skips nothing. Within one numbering rows
 * go by their write (its time, then its id) and action order, and then each record's positions are
 * dealt to its rows in version order, so a record's versions keep their order.
 */
import { quoteIdent as q } from '../../engine/sql/naming.js';
import type { ChangeOp } from '../../engine/contract.js';
import type { Statement } from './layout.js';

export const CHANGES_TABLE = 'DAS_CHANGES';
export const PRUNED_TABLE = 'DAS_CHANGES_PRUNED';

export const changesTable = (dbSchema: string) => `${q(dbSchema)}.${q(CHANGES_TABLE)}`;
export const prunedTable = (dbSchema: string) => `${q(dbSchema)}.${q(PRUNED_TABLE)}`;

/** DDL of the change log, idempotent (CREATE … IF NOT EXISTS, an insert-only MERGE of the pruned row). */
export function changeLogDdl(dbSchema: string): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${changesTable(dbSchema)} ("POS" NUMBER(38,0), "TX" VARCHAR NOT NULL, "N" NUMBER(38,0) NOT NULL, "SCHEMA_NAME" VARCHAR NOT NULL, "RECORD_ID" VARCHAR NOT NULL, "VERSION" NUMBER(38,0) NOT NULL, "OP" VARCHAR NOT NULL, "COMMITTED_AT" TIMESTAMP_TZ NOT NULL)`,
    `CREATE TABLE IF NOT EXISTS ${prunedTable(dbSchema)} ("ONE" NUMBER(38,0) NOT NULL, "THROUGH" NUMBER(38,0) NOT NULL, PRIMARY KEY ("ONE"))`,
    `MERGE INTO ${prunedTable(dbSchema)} AS T USING (SELECT 1 AS "ONE") AS S ON T."ONE" = S."ONE" WHEN NOT MATCHED THEN INSERT ("ONE", "THROUGH") VALUES (1, 0)`,
  ];
}

export function dropChangeLogSql(dbSchema: string): string[] {
  return [`DROP TABLE IF EXISTS ${changesTable(dbSchema)}`, `DROP TABLE IF EXISTS ${prunedTable(dbSchema)}`];
}

/** One version a write made. */
export interface ChangeRow {
  /** Its action's place in the write (the write's appends may be split by table). */
  n: number;
  schema: string;
  id: string;
  version: number;
  op: ChangeOp;
}

const COLUMNS = ['TX', 'N', 'SCHEMA_NAME', 'RECORD_ID', 'VERSION', 'OP', 'COMMITTED_AT'];
const insertColumns = COLUMNS.map((c) => q(c)).join(', ');
const insertOnly = (dbSchema: string, source: string) =>
  `MERGE INTO ${changesTable(dbSchema)} AS T USING (${source}) AS S ON T."SCHEMA_NAME" = S."SCHEMA_NAME" AND T."RECORD_ID" = S."RECORD_ID" AND T."VERSION" = S."VERSION" ` +
  `WHEN NOT MATCHED THEN INSERT (${insertColumns}) VALUES (${COLUMNS.map((c) => `S.${q(c)}`).join(', ')})`;

/**
 * Appends a write's changes (`tx` names the write, `at` its time; rows keep their action's place),
 * in the transaction that writes their records. A plain INSERT, not a MERGE: Snowflake's INSERTs
 * take no table lock, so writers of different tables do not queue on the change log (a version
 * is planned from committed rows and commits with its change row: none is appended twice).
 */
export function appendChangesSql(dbSchema: string, tx: string, at: string, rows: readonly ChangeRow[]): Statement {
  const tuple = '(?::VARCHAR, ?::NUMBER(38,0), ?::VARCHAR, ?::VARCHAR, ?::NUMBER(38,0), ?::VARCHAR, ?::TIMESTAMP_TZ)';
  const names = COLUMNS.map((c, i) => `COLUMN${i + 1} AS ${q(c)}`).join(', ');
  return {
    text: `INSERT INTO ${changesTable(dbSchema)} (${insertColumns}) SELECT ${names} FROM VALUES ${rows.map(() => tuple).join(', ')}`,
    binds: rows.flatMap((r) => [tx, r.n, r.schema, r.id, r.version, r.op, at]),
  };
}

/**
 * A bulk-load chunk's changes, from the history rows it wrote (their UPDATED_AT is the chunk's
 * time): a tombstone is a DELETE, a version after none or after a tombstone a CREATE, else an UPDATE.
 * Binds: the chunk's id, the schema name, the time (twice).
 */
export function appendChunkChangesSql(dbSchema: string, history: string, schema: string, tx: string, at: string, timeCast: string): Statement {
  const source =
    `SELECT ?::VARCHAR AS "TX", ROW_NUMBER() OVER (ORDER BY H."ID", H."VERSION") AS "N", ?::VARCHAR AS "SCHEMA_NAME", H."ID" AS "RECORD_ID", H."VERSION" AS "VERSION", ` +
    `CASE WHEN H."DELETED_AT" IS NOT NULL THEN 'DELETE' WHEN P."ID" IS NULL OR P."DELETED_AT" IS NOT NULL THEN 'CREATE' ELSE 'UPDATE' END AS "OP", ${timeCast} AS "COMMITTED_AT" ` +
    `FROM ${history} H LEFT JOIN ${history} P ON P."ID" = H."ID" AND P."VERSION" = H."VERSION" - 1 WHERE H."UPDATED_AT" = ${timeCast}`;
  return { text: insertOnly(dbSchema, source), binds: [tx, schema, at, at] };
}

/** A cursor is a position in decimal (as on PostgreSQL). */
export function parseCursor(cursor: string): bigint | undefined {
  return /^(0|[1-9][0-9]{0,18})$/.test(cursor) ? BigInt(cursor) : undefined;
}

/** What a poll asks first (one statement): rows without a position, rows after the cursor, and the pruned mark. */
export function pollSql(dbSchema: string, after: bigint): string {
  const t = changesTable(dbSchema);
  return `SELECT (SELECT COUNT(*) FROM ${t} WHERE "POS" IS NULL) AS "UNNUMBERED", (SELECT COUNT(*) FROM ${t} WHERE "POS" > ${after.toString()}) AS "AFTER", (SELECT "THROUGH" FROM ${prunedTable(dbSchema)}) AS "THROUGH"`;
}

/** The numbering transaction (module comment), as statements to run in order on one session. */
export function numberSql(dbSchema: string): string[] {
  const t = changesTable(dbSchema);
  const p = prunedTable(dbSchema);
  const ordered =
    `SELECT "TX", "N", "SCHEMA_NAME", "RECORD_ID", "VERSION", ROW_NUMBER() OVER (ORDER BY "L", "TX", "N") AS "K" ` +
    `FROM (SELECT "TX", "N", "SCHEMA_NAME", "RECORD_ID", "VERSION", MAX("COMMITTED_AT") OVER (PARTITION BY "TX") AS "L" FROM ${t} WHERE "POS" IS NULL) AS G`;
  // Each record's positions dealt to its rows in version order.
  const dealt =
    `SELECT A."TX", A."N", B."K" FROM (SELECT "TX", "N", "SCHEMA_NAME", "RECORD_ID", ROW_NUMBER() OVER (PARTITION BY "SCHEMA_NAME", "RECORD_ID" ORDER BY "VERSION") AS "R" FROM (${ordered}) AS O1) AS A ` +
    `JOIN (SELECT "SCHEMA_NAME", "RECORD_ID", "K", ROW_NUMBER() OVER (PARTITION BY "SCHEMA_NAME", "RECORD_ID" ORDER BY "K") AS "R" FROM (${ordered}) AS O2) AS B ` +
    `ON A."SCHEMA_NAME" = B."SCHEMA_NAME" AND A."RECORD_ID" = B."RECORD_ID" AND A."R" = B."R"`;
  const base = `(SELECT GREATEST(COALESCE((SELECT MAX("POS") FROM ${t}), 0), (SELECT "THROUGH" FROM ${p})) AS "BASE")`;
  return [
    'BEGIN',
    `UPDATE ${p} SET "THROUGH" = "THROUGH" WHERE "ONE" = 1`,
    `UPDATE ${t} SET "POS" = D."BASE" + D."K" FROM (SELECT X."TX", X."N", X."K", Y."BASE" FROM (${dealt}) AS X, ${base} AS Y) AS D WHERE ${t}."TX" = D."TX" AND ${t}."N" = D."N" AND ${t}."POS" IS NULL`,
    'COMMIT',
  ];
}

/** Up to `limit` changes after `after`, in position order. */
export function readSql(dbSchema: string, after: bigint, limit: number): string {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new Error(`not a page size: ${limit}`);
  return (
    `SELECT "POS", "SCHEMA_NAME", "RECORD_ID", "VERSION", "OP", "COMMITTED_AT" FROM ${changesTable(dbSchema)} ` +
    `WHERE "POS" > ${after.toString()} ORDER BY "POS" LIMIT ${limit}`
  );
}

/** The highest position (after numbering). */
export const headSql = (dbSchema: string) => `SELECT COALESCE(MAX("POS"), 0) AS "HEAD", (SELECT "THROUGH" FROM ${prunedTable(dbSchema)}) AS "THROUGH" FROM ${changesTable(dbSchema)}`;

/** Removes numbered changes older than the retention and remembers the highest position removed: statements for one session. */
export function pruneSql(dbSchema: string, before: string): Statement[] {
  const t = changesTable(dbSchema);
  return [
    { text: `UPDATE ${prunedTable(dbSchema)} SET "THROUGH" = GREATEST("THROUGH", COALESCE((SELECT MAX("POS") FROM ${t} WHERE "POS" IS NOT NULL AND "COMMITTED_AT" < ?::TIMESTAMP_TZ), 0)) WHERE "ONE" = 1`, binds: [before] },
    { text: `DELETE FROM ${t} WHERE "POS" IS NOT NULL AND "POS" <= (SELECT "THROUGH" FROM ${prunedTable(dbSchema)})`, binds: [] },
  ];
}
