/**
 * A DynamoDB driver for tests, on the test process's one DynamoDB Local (e2e/peers/dynamodb): each
 * call gets its own table prefix, so suites never see each other's tables, and reads its
 * credentials from a Secret directory laid out as the operator mounts it.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { sharedDynamoDbLocal } from '../../e2e/peers/dynamodb/peer.js';
import { DynamoDbDriver } from '../src/drivers/dynamodb/driver.js';
import { demoManifestsAt } from './transactions.js';
import { dataPlaneSettings } from '../../model/settings/dataplane.js';

let n = 0;

/** The Secret directory (DAS_SECRETS_DIR) with the peer's keys as Secret `ddb-credentials`. */
export async function dynamoDbSecrets(): Promise<{ dir: string; name: string }> {
  const peer = await sharedDynamoDbLocal();
  const dir = mkdtempSync(join(tmpdir(), 'das-ddb-secrets-'));
  mkdirSync(join(dir, 'ddb-credentials'));
  writeFileSync(join(dir, 'ddb-credentials', 'accessKeyId'), `${peer.credentials.accessKeyId}\n`);
  writeFileSync(join(dir, 'ddb-credentials', 'secretAccessKey'), peer.credentials.secretAccessKey);
  return { dir, name: 'ddb-credentials' };
}

/** `spec.location` fields of a dataset on the shared peer, with a fresh table prefix. */
export async function dynamoDbLocation(secretName = 'ddb-credentials') {
  const peer = await sharedDynamoDbLocal();
  return { endpoint: peer.endpoint, region: peer.region, tablePrefix: `t${process.pid}x${++n}-`, credentialsSecretRef: { name: secretName } };
}

export async function dynamoDbUnderTest(sortBound?: number) {
  const secrets = await dynamoDbSecrets();
  const driver = new DynamoDbDriver({ logger: pino({ level: 'silent' }), settings: dataPlaneSettings({ DAS_SECRETS_DIR: secrets.dir }), sortBound });
  return { driver, location: await dynamoDbLocation(secrets.name) };
}
/** transactionManifests() with the demo dataset on DynamoDB (its SQL query and raw SQL left out: DynamoDB has none). */
export async function dynamoDbTransactionManifests(secretName: string): Promise<string> {
  return demoManifestsAt({ kind: 'dynamodb', ...(await dynamoDbLocation(secretName)) });
}
