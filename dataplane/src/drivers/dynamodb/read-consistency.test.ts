/**
 * The read's consistency reaches DynamoDB: QUORUM and stronger (and the default) read with
 * ConsistentRead, EVENTUAL and ASYNC without. Checked on the requests the driver sends to
 * DynamoDB Local, and end to end from the record engine with the dataset's default.
 */
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { expect } from 'chai';
import pino from 'pino';
import type { Consistency } from '../../../../model/types.js';
import { suiteDataset } from '../../../test-support/driver-suite.js';
import { dynamoDbUnderTest } from '../../../test-support/dynamodb.js';
import { ConfigStore } from '../../config/store.js';
import { RecordEngine } from '../../engine/engine.js';
import type { DynamoDbDriver } from './driver.js';

describe('DynamoDB driver: the read consistency (on DynamoDB Local)', function () {
  this.timeout(60_000);
  let driver: DynamoDbDriver;
  let dataset: ReturnType<typeof suiteDataset>;
  const sent: { name: string; consistentRead?: boolean }[] = [];
  const send = DynamoDBDocumentClient.prototype.send;

  before(async () => {
    const t = await dynamoDbUnderTest();
    driver = t.driver;
    dataset = suiteDataset('dynamodb', t.location);
    await driver.prepare(dataset);
    const [created] = await driver.write(dataset, [{ op: 'create', schema: 'suite.Company', id: 'fresh', data: { name: 'F' } }], 'QUORUM');
    expect(created.ok).to.equal(true);
    // Watch what the document client sends, then pass it on unchanged.
    DynamoDBDocumentClient.prototype.send = function (this: DynamoDBDocumentClient, command: any, ...rest: any[]) {
      sent.push({ name: command.constructor.name, consistentRead: command.input?.ConsistentRead });
      return (send as any).call(this, command, ...rest);
    } as typeof send;
  });
  after(async () => {
    DynamoDBDocumentClient.prototype.send = send;
    await driver?.close();
  });
  beforeEach(() => (sent.length = 0));

  const reads = () => sent.filter((c) => c.name === 'GetCommand').map((c) => c.consistentRead);

  for (const [level, consistent] of [
    [undefined, true],
    ['ATOMIC_ALL', true],
    ['ATOMIC', true],
    ['QUORUM', true],
    ['EVENTUAL', false],
    ['ASYNC', false],
  ] as [Consistency | undefined, boolean][]) {
    it(`reads ${consistent ? 'with' : 'without'} ConsistentRead at ${level ?? 'no level given'}, current and past versions alike`, async () => {
      expect((await driver.read(dataset, { schema: 'suite.Company', id: 'fresh', consistency: level }))?.data).to.deep.equal({ name: 'F' });
      expect((await driver.read(dataset, { schema: 'suite.Company', id: 'fresh', version: 1, consistency: level }))?.version).to.equal(1);
      expect(reads()).to.deep.equal([consistent, consistent]);
    });
  }

  it("the engine passes the request's level, or the dataset's default (QUORUM on DynamoDB)", async () => {
    const engine = new RecordEngine(new ConfigStore({ prepare: async () => undefined }), () => driver, pino({ level: 'silent' }));
    expect(dataset.location.defaultConsistency).to.equal('QUORUM');
    await engine.read(dataset, { schema: 'suite.Company', id: 'fresh', expand: [] });
    await engine.read(dataset, { schema: 'suite.Company', id: 'fresh', expand: [], consistency: 'EVENTUAL' });
    expect(reads()).to.deep.equal([true, false]);
  });
});
