/**
 * The owner of a dataset's DynamoDB tables: one item in `<tablePrefix><dataset>_das-owner`
 * (tables.ts, ownerTable), naming the dataset whose data the tables under `<tablePrefix><dataset>_`
 * hold. A dataset deleted with `deletionPolicy: Retain` leaves it behind with its tables; purge
 * (deletionPolicy Delete) drops it with the rest.
 */
import { CreateTableCommand, DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DatasetConfig } from '../../../../model/types.js';
import type { StorageOwnership } from '../../engine/contract.js';
import { A, ownerTable } from './tables.js';

const OWNER_KEY = { [A.id]: 'owner' };

export interface OwnershipStore {
  client(dataset: DatasetConfig): { raw: DynamoDBClient; doc: DynamoDBDocumentClient };
  untilActive(raw: DynamoDBClient, table: string): Promise<void>;
  /** The driver's mapping of SDK errors to store outcomes (an unreachable store is retried). */
  failure(err: unknown): unknown;
}

export class DynamoDbOwnership implements StorageOwnership {
  constructor(private readonly store: OwnershipStore) {}

  async ownerOf(dataset: DatasetConfig): Promise<string | undefined> {
    try {
      const { Item } = await this.store.client(dataset).doc.send(new GetCommand({ TableName: ownerTable(dataset), Key: OWNER_KEY, ConsistentRead: true }));
      return Item?.dataset as string | undefined;
    } catch (err) {
      if ((err as Error).name === 'ResourceNotFoundException') return undefined; // new (or pre-marker) storage
      throw this.store.failure(err);
    }
  }

  async claim(dataset: DatasetConfig): Promise<void> {
    const { raw, doc } = this.store.client(dataset);
    const table = ownerTable(dataset);
    try {
      try {
        await raw.send(new CreateTableCommand({ TableName: table, KeySchema: [{ AttributeName: A.id, KeyType: 'HASH' }], AttributeDefinitions: [{ AttributeName: A.id, AttributeType: 'S' }], BillingMode: 'PAY_PER_REQUEST' }));
      } catch (err) {
        if ((err as Error).name !== 'ResourceInUseException') throw err; // it exists (another replica, or a retained marker being adopted)
      }
      await this.store.untilActive(raw, table);
      await doc.send(new PutCommand({ TableName: table, Item: { ...OWNER_KEY, dataset: dataset.id, claimedAt: new Date().toISOString() } }));
    } catch (err) {
      throw this.store.failure(err);
    }
  }

  /** Drops the marker (deletionPolicy Delete); the table's name when it was there. */
  async drop(dataset: DatasetConfig): Promise<string | undefined> {
    const table = ownerTable(dataset);
    try {
      await this.store.client(dataset).raw.send(new DeleteTableCommand({ TableName: table }));
      return table;
    } catch (err) {
      if ((err as Error).name === 'ResourceNotFoundException') return undefined;
      throw err;
    }
  }
}
