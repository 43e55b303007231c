/**
 * The credentials of the S3 client for `s3://` locations. With the Environment's
 * `spec.bulkLoad.s3.credentialsSecretRef`, the Secret's files under DAS_SECRETS_DIR (the operator
 * mounts it at `<root>/<name>/{accessKeyId,secretAccessKey,sessionToken}`; locally
 * `DATA_DIR/secrets/<name>/…`), read again at most every RECHECK_MS, so a rotated key (the
 * kubelet rewrites mounted Secrets in place) reaches the next request without a restart.
 * Without it, `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`, else the AWS default chain (IRSA).
 */
import { readFileSync } from 'node:fs';
import type { S3ClientConfig } from '@aws-sdk/client-s3';
import { secretsDirOf, type DataPlaneSettings } from '../../../model/settings/dataplane.js';
import { CREDENTIALS_SECRET_KEYS, SESSION_TOKEN_SECRET_KEY, pathSegmentProblem, secretFilePath } from '../../../model/secrets.js';
import { SourceError } from './sources.js';

interface AwsCredentialIdentity {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** As for the connection Secrets (model/secrets.ts SECRET_RECHECK_MS). */
export const RECHECK_MS = 2000;

/**
 * Reads the Secret's files. A missing or empty access key is a SourceError naming the file (the
 * transaction fails saying so); a missing session token means long-lived keys.
 */
export function readS3Credentials(name: string, s: DataPlaneSettings): AwsCredentialIdentity {
  const problem = pathSegmentProblem(name);
  if (problem) throw new SourceError('SOURCE_UNREADABLE', `the S3 credentials secret ${JSON.stringify(name)} cannot be read: the name ${problem}`);
  const dir = secretsDirOf(s);
  const read = (key: string): string | undefined => {
    try {
      return readFileSync(secretFilePath(dir, { name, key }), 'utf8').trim() || undefined;
    } catch {
      return undefined;
    }
  };
  const [accessKeyId, secretAccessKey] = CREDENTIALS_SECRET_KEYS.map((key) => {
    const value = read(key);
    if (!value) throw new SourceError('SOURCE_UNREADABLE', `the S3 credentials secret ${name} is not mounted or its key ${key} is empty: expected file ${secretFilePath(dir, { name, key })}`);
    return value;
  });
  const sessionToken = read(SESSION_TOKEN_SECRET_KEY);
  return { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) };
}

/** The `credentials` option of the S3 client: the Secret's files, else AWS_*, else undefined (the SDK's default chain). */
export function s3Credentials(s: DataPlaneSettings, secretRef?: { name: string }): S3ClientConfig['credentials'] {
  if (secretRef) {
    // An expiration this close makes the SDK ask again on every request: the files are re-read.
    return async () => ({ ...readS3Credentials(secretRef.name, s), expiration: new Date(Date.now() + RECHECK_MS) });
  }
  if (s.AWS_ACCESS_KEY_ID && s.AWS_SECRET_ACCESS_KEY) {
    return { accessKeyId: s.AWS_ACCESS_KEY_ID, secretAccessKey: s.AWS_SECRET_ACCESS_KEY, ...(s.AWS_SESSION_TOKEN ? { sessionToken: s.AWS_SESSION_TOKEN } : {}) };
  }
  return undefined;
}
