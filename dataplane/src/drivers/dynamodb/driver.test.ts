import { describeLocationDriver, suiteDataset } from '../../../test-support/driver-suite.js';
import { dynamoDbUnderTest } from '../../../test-support/dynamodb.js';
import { dynamodbCapabilities } from './driver.js';

describeLocationDriver('dynamodb', dynamodbCapabilities, async () => {
  const { driver, location } = await dynamoDbUnderTest();
  return { driver, dataset: suiteDataset('dynamodb', location), close: () => driver.close() };
});
