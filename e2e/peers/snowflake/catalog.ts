/**
 * TEST PEER ONLY. The PostgreSQL objects behind the Snowflake test peer's databases, schemas and
 * roles, created on first use from the admin URL:
 * - Snowflake database D is PostgreSQL database `sf_<swapCase(D)>` (collation C: Snowflake compares
 *   and sorts strings by code point), holding a `sf_peer` schema with the type domains the
 *   translator uses, the record of Iceberg tables, and INFORMATION_SCHEMA views that answer in
 *   Snowflake's spelling (upper-case names as stored, Snowflake type names).
 * - Snowflake schema S is PostgreSQL schema swapCase(S) (so PUBLIC is public).
 * - A read-only role is a PostgreSQL role holding pg_read_all_data: a session runs under it
 *   with SET ROLE and PostgreSQL itself refuses its writes and DDL. A writer role's session runs
 *   as the database owner (the admin user): it may do everything in the database.
 */
import pg from 'pg';
import { swapCase } from './errors.js';
import { PEER_SCHEMA } from './translate.js';

const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const UPPER = LOWER.toUpperCase();

const BOOTSTRAP_SQL = `
CREATE SCHEMA ${PEER_SCHEMA};
GRANT USAGE ON SCHEMA ${PEER_SCHEMA} TO PUBLIC;
CREATE DOMAIN ${PEER_SCHEMA}.variant AS jsonb;
CREATE DOMAIN ${PEER_SCHEMA}.object AS jsonb;
CREATE DOMAIN ${PEER_SCHEMA}."array" AS jsonb;
CREATE DOMAIN ${PEER_SCHEMA}.timestamp_ltz AS timestamptz;
CREATE DOMAIN ${PEER_SCHEMA}.timestamp_tz AS timestamptz;
CREATE FUNCTION ${PEER_SCHEMA}.swapcase(s text) RETURNS text LANGUAGE sql IMMUTABLE
  AS $$ SELECT translate(s, '${LOWER}${UPPER}', '${UPPER}${LOWER}') $$;
CREATE TABLE ${PEER_SCHEMA}.iceberg_tables (
  table_schema text NOT NULL, table_name text NOT NULL,
  external_volume text, catalog text, base_location text,
  PRIMARY KEY (table_schema, table_name));
CREATE VIEW ${PEER_SCHEMA}.columns AS
SELECT ${PEER_SCHEMA}.swapcase(substr(current_database(), 4)) AS table_catalog,
  ${PEER_SCHEMA}.swapcase(c.table_schema::text) AS table_schema,
  ${PEER_SCHEMA}.swapcase(c.table_name::text) AS table_name,
  ${PEER_SCHEMA}.swapcase(c.column_name::text) AS column_name,
  c.ordinal_position::numeric(38,0) AS ordinal_position,
  c.column_default::text AS column_default,
  c.is_nullable::text AS is_nullable,
  CASE WHEN c.domain_schema = '${PEER_SCHEMA}' THEN upper(c.domain_name::text)
    ELSE CASE c.data_type::text
      WHEN 'numeric' THEN 'NUMBER' WHEN 'integer' THEN 'NUMBER' WHEN 'bigint' THEN 'NUMBER' WHEN 'smallint' THEN 'NUMBER'
      WHEN 'double precision' THEN 'FLOAT' WHEN 'real' THEN 'FLOAT'
      WHEN 'text' THEN 'TEXT' WHEN 'character varying' THEN 'TEXT' WHEN 'character' THEN 'TEXT'
      WHEN 'boolean' THEN 'BOOLEAN' WHEN 'date' THEN 'DATE' WHEN 'time without time zone' THEN 'TIME'
      WHEN 'timestamp without time zone' THEN 'TIMESTAMP_NTZ' WHEN 'timestamp with time zone' THEN 'TIMESTAMP_TZ'
      WHEN 'bytea' THEN 'BINARY' WHEN 'jsonb' THEN 'VARIANT' ELSE upper(c.data_type::text) END
  END AS data_type,
  CASE WHEN c.data_type IN ('text', 'character varying', 'character') THEN coalesce(c.character_maximum_length, 16777216)::numeric(38,0) END AS character_maximum_length,
  CASE WHEN c.data_type = 'numeric' THEN coalesce(c.numeric_precision, 38)::numeric(38,0)
       WHEN c.data_type IN ('integer', 'bigint', 'smallint') THEN 38::numeric(38,0) END AS numeric_precision,
  CASE WHEN c.data_type = 'numeric' THEN coalesce(c.numeric_scale, 0)::numeric(38,0)
       WHEN c.data_type IN ('integer', 'bigint', 'smallint') THEN 0::numeric(38,0) END AS numeric_scale,
  CASE WHEN c.data_type LIKE 'time%' THEN 9::numeric(38,0) END AS datetime_precision
FROM information_schema.columns c
WHERE c.table_schema NOT IN ('pg_catalog', 'information_schema', '${PEER_SCHEMA}') AND c.table_schema NOT LIKE 'pg\\_%';
CREATE VIEW ${PEER_SCHEMA}.tables AS
SELECT ${PEER_SCHEMA}.swapcase(substr(current_database(), 4)) AS table_catalog,
  ${PEER_SCHEMA}.swapcase(t.table_schema::text) AS table_schema,
  ${PEER_SCHEMA}.swapcase(t.table_name::text) AS table_name,
  t.table_type::text AS table_type,
  CASE WHEN i.table_name IS NULL THEN 'NO' ELSE 'YES' END AS is_iceberg
FROM information_schema.tables t
LEFT JOIN ${PEER_SCHEMA}.iceberg_tables i
  ON i.table_schema = ${PEER_SCHEMA}.swapcase(t.table_schema::text) AND i.table_name = ${PEER_SCHEMA}.swapcase(t.table_name::text)
WHERE t.table_schema NOT IN ('pg_catalog', 'information_schema', '${PEER_SCHEMA}') AND t.table_schema NOT LIKE 'pg\\_%';
CREATE VIEW ${PEER_SCHEMA}.schemata AS
SELECT ${PEER_SCHEMA}.swapcase(substr(current_database(), 4)) AS catalog_name,
  ${PEER_SCHEMA}.swapcase(nspname::text) AS schema_name
FROM pg_namespace WHERE nspname NOT IN ('pg_catalog', 'information_schema', '${PEER_SCHEMA}') AND nspname NOT LIKE 'pg\\_%';
GRANT SELECT ON ALL TABLES IN SCHEMA ${PEER_SCHEMA} TO PUBLIC;
`;

export function pgDatabaseName(snowflakeDatabase: string): string {
  return `sf_${swapCase(snowflakeDatabase)}`;
}

export function pgRoleName(snowflakeRole: string): string {
  return `sf_role_${swapCase(snowflakeRole)}`;
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

export function databaseUrl(adminUrl: string, pgDatabase: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${encodeURIComponent(pgDatabase)}`;
  return url.toString();
}

/** Creates databases, schemas and roles on first use; one creation at a time per name. */
export class PeerCatalog {
  private readonly databases = new Map<string, Promise<void>>();
  private readonly roles = new Map<string, Promise<void>>();

  constructor(
    private readonly adminUrl: string,
    private readonly isReadOnlyRole: (role: string) => boolean,
  ) {}

  private async admin<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = new pg.Client({ connectionString: url });
    client.on('error', () => undefined);
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  ensureDatabase(snowflakeDatabase: string): Promise<void> {
    const name = pgDatabaseName(snowflakeDatabase);
    let creating = this.databases.get(name);
    if (!creating) {
      creating = this.createDatabase(name);
      this.databases.set(name, creating);
      creating.catch(() => this.databases.delete(name));
    }
    return creating;
  }

  /**
   * Several peers (test processes) may share one PostgreSQL: a database another one is creating
   * right now is taken as created, and the bootstrap runs under an advisory lock, once.
   */
  private async createDatabase(name: string): Promise<void> {
    await this.admin(this.adminUrl, async (client) => {
      const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      if (exists.rowCount) return;
      await client.query(`CREATE DATABASE ${quote(name)} TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C'`).catch((err: { code?: string }) => {
        if (err.code !== '42P04' && err.code !== '23505') throw err;
      });
    });
    await this.admin(databaseUrl(this.adminUrl, name), async (client) => {
      await client.query('BEGIN');
      try {
        await client.query("SELECT pg_advisory_xact_lock(hashtext('sf_peer_bootstrap'))");
        const bootstrapped = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [PEER_SCHEMA]);
        if (!bootstrapped.rowCount) await client.query(BOOTSTRAP_SQL);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      }
    });
  }

  /** Creates the schema if missing, as the admin user, inside the session's own database. */
  async ensureSchema(client: pg.Client, snowflakeSchema: string): Promise<void> {
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${quote(swapCase(snowflakeSchema))}`).catch((err: { code?: string }) => {
      // Two sessions creating the same schema at once: the loser sees a unique violation.
      if (err.code !== '23505' && err.code !== '42P06') throw err;
    });
  }

  /** Creates the PostgreSQL role behind a read-only Snowflake role (writer roles need none). */
  ensureRole(snowflakeRole: string): Promise<void> {
    if (!this.isReadOnlyRole(snowflakeRole)) return Promise.resolve();
    const name = pgRoleName(snowflakeRole);
    let creating = this.roles.get(name);
    if (!creating) {
      // Roles are cluster-wide: peers sharing one PostgreSQL create them one at a time.
      creating = this.admin(this.adminUrl, async (client) => {
        await client.query('BEGIN');
        try {
          await client.query("SELECT pg_advisory_xact_lock(hashtext('sf_peer_roles'))");
          const exists = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [name]);
          if (!exists.rowCount) {
            await client.query(`CREATE ROLE ${quote(name)} NOLOGIN`);
            await client.query(`GRANT pg_read_all_data TO ${quote(name)}`);
          }
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw err;
        }
      });
      this.roles.set(name, creating);
      creating.catch(() => this.roles.delete(name));
    }
    return creating;
  }
}

export { quote as quoteIdent };
