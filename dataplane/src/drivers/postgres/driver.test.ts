import pino from 'pino';
import { describeLocationDriver, suiteDataset } from '../../../test-support/driver-suite.js';
import { freshDatabase } from '../../../test-support/postgres.js';
import { PostgresDriver, postgresCapabilities } from './driver.js';
import { dataPlaneSettings } from '../../../../model/settings/dataplane.js';

describeLocationDriver('postgres', postgresCapabilities({ rawSql: false }), async () => {
  const driver = new PostgresDriver({ logger: pino({ level: 'silent' }), settings: dataPlaneSettings({ DATABASE_URL: await freshDatabase() }) });
  return { driver, dataset: suiteDataset('postgres'), close: () => driver.close() };
});
