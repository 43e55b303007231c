/**
 * The one thing that differs between the two warehouse kinds: the table format. Snowflake's own
 * tables take a BEGIN … COMMIT across a request's tables and Snowflake's types; Iceberg tables on
 * the warehouse are made with CREATE ICEBERG TABLE on an external volume, hold Iceberg's types, and
 * are atomic per table: one MERGE per table per request, each table's statements (with its change
 * rows) committed in a transaction of their own, never one across tables. The driver reads these
 * facts instead of testing the kind's name.
 */
import type { DatasetConfig, LocationKind } from '../../../../model/types.js';
import type { ColumnKind } from '../../engine/sql/dialect.js';

export interface TableFormat {
  readonly kind: Extract<LocationKind, 'snowflake' | 'iceberg'>;
  /** Column types in DDL and bind casts (Snowflake's type names). */
  readonly columnTypes: Readonly<Record<ColumnKind, string>>;
  /** Atomic writes run in one BEGIN … COMMIT across their tables; without, each table commits in a transaction of its own. */
  readonly transactions: boolean;
  /** `CREATE TABLE IF NOT EXISTS` or `CREATE ICEBERG TABLE IF NOT EXISTS`, and what follows the columns. */
  createTable(dataset: DatasetConfig, qualifiedTable: string, tableName: string, columnsSql: string, keySql: string): string;
  /** `ALTER TABLE` or `ALTER ICEBERG TABLE`. */
  readonly alterTable: string;
}

export const SNOWFLAKE_FORMAT: TableFormat = {
  kind: 'snowflake',
  columnTypes: {
    string: 'VARCHAR',
    integer: 'NUMBER(38,0)',
    number: 'FLOAT',
    boolean: 'BOOLEAN',
    date: 'DATE',
    timestamp: 'TIMESTAMP_TZ',
    link: 'VARCHAR',
    id: 'VARCHAR',
    version: 'NUMBER(38,0)',
    time: 'TIMESTAMP_TZ',
  },
  transactions: true,
  // PRIMARY KEY is declared for readers and tools; Snowflake does not enforce it and the driver never relies on it.
  createTable: (_dataset, table, _name, columns, key) => `CREATE TABLE IF NOT EXISTS ${table} (${columns}, ${key})`,
  alterTable: 'ALTER TABLE',
};

/**
 * Iceberg's types as Snowflake spells them for Iceberg tables: `long` is NUMBER(19,0), `int`
 * NUMBER(10,0), `string` STRING, `double` FLOAT, and `timestamptz` TIMESTAMP_LTZ(6) — Iceberg has
 * no TIMESTAMP_TZ (it stores the instant, not the offset, which is all a record keeps anyway).
 */
export const ICEBERG_FORMAT: TableFormat = {
  kind: 'iceberg',
  columnTypes: {
    string: 'STRING',
    integer: 'NUMBER(19,0)',
    number: 'FLOAT',
    boolean: 'BOOLEAN',
    date: 'DATE',
    timestamp: 'TIMESTAMP_LTZ(6)',
    link: 'STRING',
    id: 'STRING',
    version: 'NUMBER(10,0)',
    time: 'TIMESTAMP_LTZ(6)',
  },
  transactions: false,
  // No key clause: constraints are not part of the Iceberg table format.
  createTable: (dataset, table, name, columns) => {
    const { externalVolume, baseLocation, catalog } = dataset.location;
    // All three are validated as unquoted identifiers / plain paths by the model; quotes are doubled anyway.
    const literal = (text: string) => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
    const base = `${(baseLocation ?? '').replace(/\/+$/, '')}/${name}`;
    return `CREATE ICEBERG TABLE IF NOT EXISTS ${table} (${columns}) EXTERNAL_VOLUME = ${literal(externalVolume ?? '')} CATALOG = ${literal(catalog ?? 'SNOWFLAKE')} BASE_LOCATION = ${literal(base)}`;
  },
  alterTable: 'ALTER ICEBERG TABLE',
};
