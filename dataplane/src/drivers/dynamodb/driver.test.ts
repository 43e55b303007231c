import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { describeLocationDriver, suiteDataset } from '../../../test-support/driver-suite.js';
import { sharedDynamoDbLocal } from '../../../../e2e/peers/dynamodb/peer.js';
import { DynamoDbDriver, dynamodbCapabilities } from './driver.js';

let n = 0;

/** A driver on the shared DynamoDB Local, its credentials from a Secret directory as the operator mounts it. */
export async function dynamoDbUnderTest(sortBound?: number) {
  const peer = await sharedDynamoDbLocal();
  const secrets = mkdtempSync(join(tmpdir(), 'das-ddb-secrets-'));
  mkdirSync(join(secrets, 'ddb-credentials'));
  writeFileSync(join(secrets, 'ddb-credentials', 'accessKeyId'), `${peer.credentials.accessKeyId}\n`);
  writeFileSync(join(secrets, 'ddb-credentials', 'secretAccessKey'), peer.credentials.secretAccessKey);
  const driver = new DynamoDbDriver({ logger: pino({ level: 'silent' }), env: { DAS_SECRETS_DIR: secrets }, sortBound });
  const location = { endpoint: peer.endpoint, region: peer.region, tablePrefix: `t${process.pid}x${++n}-`, credentialsSecretRef: { name: 'ddb-credentials' } };
  return { driver, location };
}

describeLocationDriver('dynamodb', dynamodbCapabilities, async () => {
  const { driver, location } = await dynamoDbUnderTest();
  return { driver, dataset: suiteDataset('dynamodb', location), close: () => driver.close() };
});
