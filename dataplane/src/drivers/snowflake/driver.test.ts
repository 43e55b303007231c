import { describeLocationDriver, suiteDataset } from '../../../test-support/driver-suite.js';
import { warehouseCapabilities } from './driver.js';
import { warehouseDriverUnderTest } from '../../../test-support/snowflake-peer.js';
import { ICEBERG_FORMAT, SNOWFLAKE_FORMAT } from './table-format.js';

describeLocationDriver('snowflake (snowflake-sdk against the test peer)', warehouseCapabilities(SNOWFLAKE_FORMAT), async () => {
  const { driver, location } = await warehouseDriverUnderTest(SNOWFLAKE_FORMAT);
  return { driver, dataset: suiteDataset('snowflake', location), close: () => driver.close() };
});

describeLocationDriver('iceberg (snowflake-sdk against the test peer)', warehouseCapabilities(ICEBERG_FORMAT), async () => {
  const { driver, location } = await warehouseDriverUnderTest(ICEBERG_FORMAT);
  return { driver, dataset: suiteDataset('iceberg', { ...location, externalVolume: 'SUITE_VOLUME', baseLocation: 'suite/tables' }), close: () => driver.close() };
});
