/**
 * The owner of a warehouse storage area (a database schema): one row in `<schema>."DAS$OWNER"`,
 * naming the dataset whose data the schema holds. A dataset deleted with `deletionPolicy: Retain`
 * leaves it behind with its data; `purge` (deletionPolicy Delete) drops it with the rest.
 */
import type { DatasetConfig } from '../../../../model/types.js';
import type { StorageOwnership } from '../../engine/contract.js';
import { quoteIdent as q } from '../../engine/sql/naming.js';
import { isMissingObject, outageOf } from './errors.js';
import type { Session } from './sessions.js';

export const OWNER_TABLE = 'DAS$OWNER';

/** The SQL of the marker (pure), for a database schema. */
export function warehouseOwnershipSql(dbSchema: string) {
  const table = `${q(dbSchema)}.${q(OWNER_TABLE)}`;
  return {
    create: [`CREATE SCHEMA IF NOT EXISTS ${q(dbSchema)}`, `CREATE TABLE IF NOT EXISTS ${table} ("DATASET" VARCHAR NOT NULL)`],
    read: `SELECT "DATASET" FROM ${table}`,
    // One row: replaced as a whole (the warehouse has no singleton constraint to upsert on).
    write: [`DELETE FROM ${table}`, `INSERT INTO ${table} ("DATASET") VALUES (?)`],
    drop: `DROP TABLE IF EXISTS ${table}`,
  };
}

export class WarehouseOwnership implements StorageOwnership {
  constructor(
    private readonly withSession: <T>(dataset: DatasetConfig, fn: (session: Session) => Promise<T>) => Promise<T>,
    private readonly dbSchema: (dataset: DatasetConfig) => string,
  ) {}

  async ownerOf(dataset: DatasetConfig): Promise<string | undefined> {
    const sql = warehouseOwnershipSql(this.dbSchema(dataset));
    try {
      return await this.withSession(dataset, async (session) => {
        try {
          const { rows } = await session.exec(sql.read);
          const first = (rows as unknown[][])[0]?.[0];
          return typeof first === 'string' ? first : undefined;
        } catch (err) {
          if (isMissingObject(err)) return undefined; // no marker: new storage, or storage from before it
          throw err;
        }
      });
    } catch (err) {
      throw outageOf(err) ?? err;
    }
  }

  async claim(dataset: DatasetConfig): Promise<void> {
    const sql = warehouseOwnershipSql(this.dbSchema(dataset));
    try {
      await this.withSession(dataset, async (session) => {
        for (const statement of sql.create) await session.exec(statement);
        await session.exec(sql.write[0]);
        await session.exec(sql.write[1], { binds: [dataset.id] });
      });
    } catch (err) {
      throw outageOf(err) ?? err;
    }
  }
}
