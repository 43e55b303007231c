/**
 * The DynamoDB client of a dataset: its region and endpoint from `spec.location`, its credentials
 * from the Secret that `credentialsSecretRef` names (keys `accessKeyId` and `secretAccessKey`, files
 * under DAS_SECRETS_DIR as the operator mounts them; locally under `DATA_DIR/secrets`), or else
 * the AWS default chain (environment, web identity for IRSA through the data plane's
 * ServiceAccount, instance roles). The Secret files are read again when the SDK asks after
 * SECRET_RECHECK_MS, so a rotated key reaches new requests without a restart.
 */
import { readFileSync } from 'node:fs';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { CREDENTIALS_SECRET_KEYS, pathSegmentProblem, SECRET_RECHECK_MS, secretFilePath } from '../../../../model/secrets.js';
import type { DatasetConfig } from '../../../../model/types.js';
import { SecretNotMountedError } from '../postgres/connection.js';
import { defaultRegionOf, secretsDirOf, type DataPlaneSettings } from '../../../../model/settings/dataplane.js';

/** A dataset's client settings; equal settings share one client. */
export function clientKey(dataset: DatasetConfig, s: DataPlaneSettings): string {
  const { region, endpoint, credentialsSecretRef } = dataset.location;
  return JSON.stringify([region ?? defaultRegionOf(s), endpoint ?? '', credentialsSecretRef?.name ?? '']);
}

/** Reads the two keys of a credentials Secret; a missing or empty file is SecretNotMountedError (a 503). */
export function readCredentials(dataset: DatasetConfig, s: DataPlaneSettings): { accessKeyId: string; secretAccessKey: string } {
  const ref = dataset.location.credentialsSecretRef!;
  const problem = pathSegmentProblem(ref.name);
  if (problem) throw new SecretNotMountedError(`dataset ${dataset.id}: credentials secret ${String(ref.name)} cannot be read: the name ${problem}`);
  const dir = secretsDirOf(s);
  const [accessKeyId, secretAccessKey] = CREDENTIALS_SECRET_KEYS.map((key) => {
    const file = secretFilePath(dir, { name: ref.name, key });
    let text: string;
    try {
      text = readFileSync(file, 'utf8').trim();
    } catch {
      throw new SecretNotMountedError(`dataset ${dataset.id}: credentials secret ${ref.name} is not mounted: expected file ${file}`);
    }
    if (!text) throw new SecretNotMountedError(`dataset ${dataset.id}: key ${key} of credentials secret ${ref.name} is empty: file ${file}`);
    return text;
  });
  return { accessKeyId, secretAccessKey };
}

/** Region, endpoint, credentials and timeouts: the same for the tables and their streams. */
function clientConfig(dataset: DatasetConfig, s: DataPlaneSettings) {
  const { region, endpoint, credentialsSecretRef } = dataset.location;
  return {
    region: region ?? defaultRegionOf(s),
    ...(endpoint ? { endpoint } : {}),
    ...(credentialsSecretRef
      ? { credentials: async () => ({ ...readCredentials(dataset, s), expiration: new Date(Date.now() + SECRET_RECHECK_MS) }) }
      : {}),
    // A store that does not answer is a 503 within seconds, not a request hanging on retries.
    maxAttempts: 3,
    requestHandler: { connectionTimeout: 2000, requestTimeout: 10_000 },
  };
}

export function createClient(dataset: DatasetConfig, s: DataPlaneSettings): { raw: DynamoDBClient; doc: DynamoDBDocumentClient } {
  const raw = new DynamoDBClient(clientConfig(dataset, s));
  // Record numbers are JSON numbers (doubles): written as they are beyond 2^53, and read back as
  // numbers (the SDK would otherwise refuse them, or hand back BigInts no JSON can hold).
  const doc = DynamoDBDocumentClient.from(raw, {
    marshallOptions: { removeUndefinedValues: true, convertEmptyValues: false, allowImpreciseNumbers: true },
    unmarshallOptions: { wrapNumbers: (text: string) => Number(text) },
  });
  return { raw, doc };
}

/** The DynamoDB Streams client of a dataset (change feeds), configured like its tables' client. */
export function createStreamsClient(dataset: DatasetConfig, s: DataPlaneSettings): DynamoDBStreamsClient {
  // The feed backs off on throttling itself (change-feed.ts): one attempt per call.
  return new DynamoDBStreamsClient({ ...clientConfig(dataset, s), maxAttempts: 1 });
}
