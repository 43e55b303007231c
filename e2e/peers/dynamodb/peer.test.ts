import { expect } from 'chai';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { sharedDynamoDbLocal } from './peer.js';

describe('DynamoDB Local test peer', function () {
  this.timeout(60_000);

  it('starts once per process, in memory, and answers on 127.0.0.1 with the one credential set', async () => {
    const peer = await sharedDynamoDbLocal();
    expect(await sharedDynamoDbLocal()).to.equal(peer);
    expect(peer.endpoint).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
    const client = new DynamoDBClient({ endpoint: peer.endpoint, region: peer.region, credentials: peer.credentials });
    try {
      const tables = await client.send(new ListTablesCommand({}));
      expect(tables.TableNames).to.be.an('array');
    } finally {
      client.destroy();
    }
  });
});
