/** Which credentials the S3 client for s3:// locations gets: the Environment's Secret files, else AWS_*, else the SDK's default chain. */
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readS3Credentials, s3Credentials } from './s3-credentials.js';
import { dataPlaneSettings } from '../../../model/settings/dataplane.js';

describe('bulk-load S3 credentials', () => {
  it('without a Secret: AWS_* when both keys are set (with the session token), else nothing (the default chain)', () => {
    expect(s3Credentials(dataPlaneSettings({}))).to.equal(undefined);
    expect(s3Credentials(dataPlaneSettings({ AWS_ACCESS_KEY_ID: 'a' }))).to.equal(undefined);
    expect(s3Credentials(dataPlaneSettings({ AWS_ACCESS_KEY_ID: 'a', AWS_SECRET_ACCESS_KEY: 'b' }))).to.deep.equal({ accessKeyId: 'a', secretAccessKey: 'b' });
    expect(s3Credentials(dataPlaneSettings({ AWS_ACCESS_KEY_ID: 'a', AWS_SECRET_ACCESS_KEY: 'b', AWS_SESSION_TOKEN: 't' }))).to.deep.equal({ accessKeyId: 'a', secretAccessKey: 'b', sessionToken: 't' });
  });

  it('with a Secret: its files under DAS_SECRETS_DIR (else DATA_DIR/secrets) win over AWS_*, re-read on every call, trimmed', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'das-s3c-'));
    const dir = join(dataDir, 'secrets', 'loader');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'accessKeyId'), 'AKID1\n');
    writeFileSync(join(dir, 'secretAccessKey'), 'S1');
    const env = { DATA_DIR: dataDir, AWS_ACCESS_KEY_ID: 'env', AWS_SECRET_ACCESS_KEY: 'env' };
    const provider = s3Credentials(dataPlaneSettings(env), { name: 'loader' }) as () => Promise<{ accessKeyId: string; sessionToken?: string; expiration: Date }>;
    const first = await provider();
    expect(first).to.include({ accessKeyId: 'AKID1', secretAccessKey: 'S1' });
    expect(first).to.not.have.property('sessionToken');
    expect(first.expiration.getTime() - Date.now()).to.be.within(0, 2000);
    writeFileSync(join(dir, 'accessKeyId'), 'AKID2');
    writeFileSync(join(dir, 'sessionToken'), 'T2');
    expect(await provider()).to.include({ accessKeyId: 'AKID2', sessionToken: 'T2' });
    expect(readS3Credentials('loader', dataPlaneSettings({ DAS_SECRETS_DIR: join(dataDir, 'secrets') }))).to.deep.equal({ accessKeyId: 'AKID2', secretAccessKey: 'S1', sessionToken: 'T2' });
  });

  it('a missing or empty key, or a name that is not a file name, says what is wrong', () => {
    const root = mkdtempSync(join(tmpdir(), 'das-s3c-'));
    mkdirSync(join(root, 'loader'));
    writeFileSync(join(root, 'loader', 'accessKeyId'), 'AKID');
    writeFileSync(join(root, 'loader', 'secretAccessKey'), '  \n');
    const env = { DAS_SECRETS_DIR: root };
    expect(() => readS3Credentials('loader', dataPlaneSettings(env))).to.throw(`the S3 credentials secret loader is not mounted or its key secretAccessKey is empty: expected file ${join(root, 'loader', 'secretAccessKey')}`);
    expect(() => readS3Credentials('absent', dataPlaneSettings(env))).to.throw(/secret absent is not mounted or its key accessKeyId is empty/);
    expect(() => readS3Credentials('..', dataPlaneSettings(env))).to.throw(/cannot be read: the name "\.\." is not a file name/);
  });
});
