/**
 * Subscriptions on a DynamoDB dataset (DynamoDB Local's Streams): two replicas on one store, a
 * subscriber on one, writes through the other (test-support/feed-replicas.ts); and a table from
 * before change feeds gets its stream from the additive schema path.
 */
import { expect } from 'chai';
import { CreateTableCommand, DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { createClient } from '../src/drivers/dynamodb/client.js';
import { decodePosition, encodePosition } from '../src/drivers/dynamodb/stream-cursor.js';
import { schemaTables } from '../src/drivers/dynamodb/tables.js';
import { dynamoDbSecrets, dynamoDbTransactionManifests, dynamoDbUnderTest } from '../test-support/dynamodb.js';
import { describeFeedAcrossReplicas, startReplicaPair } from '../test-support/feed-replicas.js';
import { suiteDataset } from '../test-support/driver-suite.js';
import { dataPlaneSettings } from '../../model/settings/dataplane.js';

describeFeedAcrossReplicas('DynamoDB (Streams on DynamoDB Local)', async () => {
  const secrets = await dynamoDbSecrets();
  const manifests = await dynamoDbTransactionManifests(secrets.name);
  const { a, b, imports } = await startReplicaPair(manifests, 'das-ddb-feed-', { DAS_SECRETS_DIR: secrets.dir, DAS_BULK_POLL_MS: '100', DAS_DYNAMODB_STREAM_READ_MS: '200' });
  return {
    a,
    b,
    imports,
    batchOrdered: false,
    // A stream keeps 24 hours: the same cursor a day older.
    expire: async (cursor) => {
      const p = decodePosition(cursor)!;
      return encodePosition({ ...p, time: p.time - 25 * 3600_000, since: p.since - 25 * 3600_000 });
    },
    stop: async () => {
      await a.stop();
      await b.stop();
    },
  };
});

describe('DynamoDB change feed: streams on tables from before it', function () {
  this.timeout(60_000);
  it('prepare enables NEW_AND_OLD_IMAGES on an existing records table without a stream (the additive schema path)', async () => {
    const { driver, location } = await dynamoDbUnderTest();
    const dataset = suiteDataset('dynamodb', location);
    const secrets = await dynamoDbSecrets();
    const { raw } = createClient(dataset, dataPlaneSettings({ DAS_SECRETS_DIR: secrets.dir }));
    try {
      const table = schemaTables(dataset, 'suite.Company').records;
      await raw.send(new CreateTableCommand({ TableName: table, KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }], AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }], BillingMode: 'PAY_PER_REQUEST' }));
      const report = await driver.prepare(dataset);
      expect(report.applied).to.include(`UpdateTable ${table}: stream NEW_AND_OLD_IMAGES`);
      expect(report.refused).to.deep.equal([]);
      const spec = (await raw.send(new DescribeTableCommand({ TableName: table }))).Table?.StreamSpecification;
      expect(spec).to.deep.include({ StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' });
      expect((await driver.prepare(dataset)).applied, 'nothing the second time').to.deep.equal([]);
    } finally {
      raw.destroy();
      await driver.close();
    }
  });
});
