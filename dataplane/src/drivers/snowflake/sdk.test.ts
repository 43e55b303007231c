import { expect } from 'chai';
import { createRequire } from 'node:module';
import { loadSnowflakeSdk } from './sdk.js';

describe('snowflake-sdk loader', () => {
  it('loads the SDK with its cloud platform detection disabled (nothing leaves the machine)', async () => {
    const sdk = await loadSnowflakeSdk();
    expect(sdk.createConnection).to.be.a('function');
    expect(process.env.SNOWFLAKE_DISABLE_PLATFORM_DETECTION).to.equal('true');
    // The SDK's own record of what it detected at load: 'disabled' means no probe was sent.
    const require = createRequire(import.meta.url);
    const detection = require('snowflake-sdk/dist/lib/telemetry/platform_detection.js') as { getDetectedPlatforms(): Promise<string[]> };
    expect(await detection.getDetectedPlatforms()).to.deep.equal(['disabled']);
  });
});
