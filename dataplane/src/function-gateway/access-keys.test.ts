/** The function gateway's access keys: where the list comes from, and the secret read from its mounted file, re-read after rotation. */
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { accessKeyStore, accessKeysFromEnv, AccessKeyUnreadable } from './access-keys.js';
import { parseFunctionName } from './lambda-api.js';

const KEY = { name: 'etl-job', accessKeyId: 'AKIDETL0000000000001', secretRef: { name: 'lambda-keys', key: 'etl' } };

describe('function gateway: access keys', () => {
  it('DAS_ACCESS_KEYS (as the operator renders it) wins; otherwise the Environment in DAS_MANIFESTS; otherwise none', () => {
    expect(accessKeysFromEnv({ DAS_ACCESS_KEYS: JSON.stringify([KEY]), DAS_MANIFESTS: 'examples' })).to.deep.equal([KEY]);
    expect(accessKeysFromEnv({ DAS_MANIFESTS: 'examples' })).to.deep.equal([]);
    expect(accessKeysFromEnv({})).to.deep.equal([]);
    expect(() => accessKeysFromEnv({ DAS_MANIFESTS: 'examples', DAS_ENVIRONMENT: 'nope' })).to.throw(/no Environment "nope" in /);
  });

  it('refuses a DAS_ACCESS_KEYS it cannot use, naming the problem', () => {
    expect(() => accessKeysFromEnv({ DAS_ACCESS_KEYS: '{' })).to.throw('DAS_ACCESS_KEYS must be a JSON array of {name, accessKeyId, secretRef: {name, key}}');
    expect(() => accessKeysFromEnv({ DAS_ACCESS_KEYS: JSON.stringify([KEY, { ...KEY, name: 'other' }]) })).to.throw('DAS_ACCESS_KEYS[1].accessKeyId AKIDETL0000000000001 is listed twice');
    expect(() => accessKeysFromEnv({ DAS_ACCESS_KEYS: JSON.stringify([{ ...KEY, secretRef: { name: '..', key: 'k' } }]) })).to.throw(/^DAS_ACCESS_KEYS\[0\]\.secretRef: secret name/);
  });

  it('reads the secret from DAS_SECRETS_DIR/<name>/<key> (trimmed), and a rotated file after the recheck interval', () => {
    const root = mkdtempSync(join(tmpdir(), 'das-keys-'));
    mkdirSync(join(root, 'lambda-keys'));
    writeFileSync(join(root, 'lambda-keys', 'etl'), 'first\n');
    let now = 0;
    const store = accessKeyStore([KEY], { DAS_SECRETS_DIR: root }, () => now);
    expect(store.find('AKIDOTHER')).to.equal(undefined);
    const found = store.find(KEY.accessKeyId)!;
    expect(found.name).to.equal('etl-job');
    expect(found.secret()).to.equal('first');
    writeFileSync(join(root, 'lambda-keys', 'etl'), 'second');
    expect(found.secret(), 'cached within the recheck interval').to.equal('first');
    now += 2000;
    expect(found.secret()).to.equal('second');
    writeFileSync(join(root, 'lambda-keys', 'etl'), '\n');
    now += 2000;
    expect(() => found.secret()).to.throw(AccessKeyUnreadable, /is empty/);
  });
});

describe('function gateway: Lambda FunctionName', () => {
  it('takes a name, a partial ARN and an ARN, each with an optional qualifier', () => {
    expect(parseFunctionName('fn')).to.deep.equal({ name: 'fn' });
    expect(parseFunctionName('fn:$LATEST')).to.deep.equal({ name: 'fn', qualifier: '$LATEST' });
    expect(parseFunctionName('123456789012:function:fn')).to.deep.equal({ name: 'fn' });
    expect(parseFunctionName('arn:aws:lambda:us-east-1:123456789012:function:fn:prod')).to.deep.equal({ name: 'fn', qualifier: 'prod' });
    expect(parseFunctionName('arn:aws-us-gov:lambda:us-gov-west-1:123456789012:function:fn')).to.deep.equal({ name: 'fn' });
  });

  it('refuses anything else', () => {
    for (const bad of ['', 'a:b:c', 'arn:aws:s3:us-east-1:123456789012:function:fn', 'arn:aws:lambda:us-east-1:12:function:fn', 'fn/x', 'f'.repeat(171), 'fn:bad qualifier']) {
      expect(parseFunctionName(bad), bad).to.equal(undefined);
    }
  });
});
