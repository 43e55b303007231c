/**
 * The owner of a PostgreSQL storage area (a database schema): one row in `<schema>."das$owner"`,
 * naming the dataset whose data the schema holds. A dataset deleted with `deletionPolicy: Retain`
 * leaves it behind with its data; `purge` (deletionPolicy Delete) drops it with the rest.
 */
import type pg from 'pg';
import type { DatasetConfig } from '../../../../model/types.js';
import type { StorageOwnership } from '../../engine/contract.js';
import { quoteIdent as q } from '../../engine/sql/naming.js';
import { outageOf } from './outage.js';
import { databaseSchemaOf } from './sql.js';

export const OWNER_TABLE = 'das$owner';

/** The SQL of the marker (pure): its DDL, its read and its write, for a database schema. */
export function ownershipSql(dbSchema: string) {
  const table = `${q(dbSchema)}.${q(OWNER_TABLE)}`;
  return {
    exists: { text: 'SELECT to_regclass($1) IS NOT NULL AS present', values: [table] },
    create: [`CREATE SCHEMA IF NOT EXISTS ${q(dbSchema)}`, `CREATE TABLE IF NOT EXISTS ${table} (singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton), dataset text NOT NULL, claimed_at timestamptz NOT NULL DEFAULT now())`],
    read: `SELECT dataset FROM ${table}`,
    write: `INSERT INTO ${table} (dataset) VALUES ($1) ON CONFLICT (singleton) DO UPDATE SET dataset = EXCLUDED.dataset, claimed_at = now()`,
    drop: `DROP TABLE IF EXISTS ${table}`,
  };
}

export class PostgresOwnership implements StorageOwnership {
  constructor(private readonly pool: (dataset: DatasetConfig) => pg.Pool) {}

  async ownerOf(dataset: DatasetConfig): Promise<string | undefined> {
    const sql = ownershipSql(databaseSchemaOf(dataset));
    const pool = this.pool(dataset);
    try {
      const { rows } = await pool.query<{ present: boolean }>(sql.exists);
      if (!rows[0]?.present) return undefined;
      return (await pool.query<{ dataset: string }>(sql.read)).rows[0]?.dataset;
    } catch (err) {
      throw outageOf(err) ?? err; // unreachable: the dataset waits and is prepared again, as for any outage
    }
  }

  async claim(dataset: DatasetConfig): Promise<void> {
    const sql = ownershipSql(databaseSchemaOf(dataset));
    const pool = this.pool(dataset);
    for (const statement of sql.create) await pool.query(statement);
    await pool.query(sql.write, [dataset.id]);
  }
}
