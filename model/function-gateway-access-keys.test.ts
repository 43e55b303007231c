/**
 * `spec.functionGateway.accessKeys` of an Environment: the Lambda Invoke API's SigV4 keys. Each
 * names a principal, an access key id (unique: it selects the key) and the Secret key holding the
 * secret; anything else is refused with the JSON path of the bad field.
 */
import { expect } from 'chai';
import { loadManifests } from './manifests.js';
import type { EnvironmentSpec } from './types.js';
import { checkEnvironmentSpec } from './validate.js';

const base = loadManifests('examples').environments.find((e) => e.metadata.name === 'local')!.spec;
const problems = (accessKeys: unknown): string[] => checkEnvironmentSpec({ ...base, functionGateway: { accessKeys } } as EnvironmentSpec).map((p) => `${p.path} ${p.message}`);
const key = (accessKeyId: string, name = 'etl-job') => ({ name, accessKeyId, secretRef: { name: 'lambda-keys', key: accessKeyId.toLowerCase() } });

describe('model: spec.functionGateway.accessKeys', () => {
  it('takes keys with trust network (no invokers needed), several for one principal (rotation)', () => {
    expect(problems([key('AKIDETL0000000000001'), key('AKIDETL0000000000002')])).to.deep.equal([]);
  });

  it('refuses a repeated access key id, a missing secretRef, an id SigV4 cannot carry and an invalid Secret name', () => {
    expect(problems([key('AKIDETL0000000000001'), key('AKIDETL0000000000001', 'other')])).to.deep.equal(['$.spec.functionGateway.accessKeys[1].accessKeyId duplicate access key id "AKIDETL0000000000001"']);
    expect(problems([{ name: 'a', accessKeyId: 'AKID1' }])).to.deep.equal(['$.spec.functionGateway.accessKeys[0] missing required property "secretRef"']);
    expect(problems([{ ...key('AKID1'), accessKeyId: 'AKID/1' }])[0]).to.match(/^\$\.spec\.functionGateway\.accessKeys\[0\]\.accessKeyId /);
    expect(problems([{ ...key('AKID1'), secretRef: { name: 'Bad_Name', key: 'k' } }])[0]).to.match(/^\$\.spec\.functionGateway\.accessKeys\[0\]\.secretRef\.name /);
  });
});
