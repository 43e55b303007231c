/** Where the S3 client for s3:// locations goes: the Environment's spec.bulkLoad.s3 first, then the process environment. */
import { expect } from 'chai';
import { s3Options } from './sources.js';
import { dataPlaneSettings } from '../../../model/settings/dataplane.js';

describe('bulk-load S3 settings', () => {
  it('AWS S3 by default; DAS_S3_ENDPOINT and AWS_REGION from the process; path style with an endpoint', () => {
    expect(s3Options(dataPlaneSettings({}))).to.deep.equal({ region: 'us-east-1' });
    expect(s3Options(dataPlaneSettings({ AWS_REGION: 'eu-west-1' }))).to.deep.equal({ region: 'eu-west-1' });
    expect(s3Options(dataPlaneSettings({ DAS_S3_ENDPOINT: 'http://127.0.0.1:4568' }))).to.deep.equal({ region: 'us-east-1', endpoint: 'http://127.0.0.1:4568', forcePathStyle: true });
    expect(s3Options(dataPlaneSettings({ DAS_S3_ENDPOINT: 'http://minio:9000', DAS_S3_FORCE_PATH_STYLE: 'false' }))).to.deep.include({ forcePathStyle: false });
  });

  it("the Environment's settings win over the process's", () => {
    const env = { DAS_S3_ENDPOINT: 'http://127.0.0.1:4568', AWS_REGION: 'eu-west-1' };
    expect(s3Options(dataPlaneSettings(env), { endpoint: 'https://s3.example.net', region: 'ap-south-1', forcePathStyle: false })).to.deep.equal({
      region: 'ap-south-1',
      endpoint: 'https://s3.example.net',
      forcePathStyle: false,
    });
    expect(s3Options(dataPlaneSettings(env), { region: 'ap-south-1' })).to.deep.equal({ region: 'ap-south-1', endpoint: 'http://127.0.0.1:4568', forcePathStyle: true });
  });
});
