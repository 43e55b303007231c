/**
 * Expanding several links reads the link fields' targets at once (one readMany per field, all in
 * flight together), and the records come out the same as reading them one after another.
 */
import { expect } from 'chai';
import pino from 'pino';
import { renderDatasetConfig } from '../../../model/render.js';
import { ConfigStore } from '../config/store.js';
import type { LocationDriver } from './contract.js';
import { PostgresDriver } from '../drivers/postgres/driver.js';
import { freshDatabase } from '../../test-support/postgres.js';
import { RecordEngine } from './engine.js';
import { dataPlaneSettings } from '../../../model/settings/dataplane.js';

const dataset = renderDatasetConfig({
  apiVersion: 'dataaccess.dev/v1alpha1',
  kind: 'Dataset',
  metadata: { name: 'expand', generation: 1 },
  spec: {
    environment: 'local',
    location: { kind: 'postgres' },
    schemas: {
      'x.Company': { properties: { name: { type: 'string' } } },
      'x.School': { properties: { name: { type: 'string' } } },
      'x.Person': {
        properties: {
          name: { type: 'string' },
          employer: { type: 'link', schema: 'x.Company' },
          home: { type: 'object', properties: { school: { type: 'link', schema: 'x.School' } } },
          mentor: { type: 'link', schema: 'x.Person' },
        },
      },
    },
  },
});

describe('record engine: expand reads the link fields concurrently', function () {
  this.timeout(60000);
  let driver: PostgresDriver;
  let engine: RecordEngine;
  let inFlight = 0;
  let most = 0;
  let calls = 0;

  before(async () => {
    driver = new PostgresDriver({ logger: pino({ level: 'silent' }), settings: dataPlaneSettings({ DATABASE_URL: await freshDatabase() }) });
    expect((await driver.prepare(dataset)).refused).to.deep.equal([]);
    // The real driver, with its readMany watched: how many run at the same time.
    const watched: LocationDriver = Object.create(driver);
    watched.readMany = async (...args) => {
      calls++;
      most = Math.max(most, ++inFlight);
      try {
        return await driver.readMany(...args);
      } finally {
        inFlight--;
      }
    };
    engine = new RecordEngine(new ConfigStore({ prepare: async () => undefined }), () => watched, pino({ level: 'silent' }));
    const results = await driver.write(
      dataset,
      [
        { op: 'create', schema: 'x.Company', id: 'acme', data: { name: 'Acme' } },
        { op: 'create', schema: 'x.School', id: 'oak', data: { name: 'Oak' } },
        { op: 'create', schema: 'x.Person', id: 'mia', data: { name: 'Mia' } },
        { op: 'create', schema: 'x.Person', id: 'ada', data: { name: 'Ada', employer: { id: 'acme' }, home: { school: { id: 'oak' } }, mentor: { id: 'mia' } } },
        { op: 'create', schema: 'x.Person', id: 'bo', data: { name: 'Bo', employer: { id: 'gone' } } },
      ],
      'ATOMIC',
    );
    expect(results.every((r) => r.ok)).to.equal(true);
  });
  after(async () => driver?.close());
  beforeEach(() => {
    most = 0;
    calls = 0;
  });

  it('starts one read per link field before any of them answers', async () => {
    const record = await engine.read(dataset, { schema: 'x.Person', id: 'ada', expand: ['employer', 'home.school', 'mentor'] });
    expect(calls).to.equal(3);
    expect(most).to.equal(3);
    expect(record).to.deep.equal({
      id: 'ada',
      version: 1,
      name: 'Ada',
      employer: { id: 'acme', version: 1, name: 'Acme' },
      home: { school: { id: 'oak', version: 1, name: 'Oak' } },
      mentor: { id: 'mia', version: 1, name: 'Mia' },
    });
  });

  it('leaves a link whose target is missing, or unset, as it was', async () => {
    const record = await engine.read(dataset, { schema: 'x.Person', id: 'bo', expand: ['employer', 'home.school'] });
    expect(record).to.deep.equal({ id: 'bo', version: 1, name: 'Bo', employer: { id: 'gone' } });
  });

  it('expands the same way with a projection', async () => {
    const record = await engine.read(dataset, { schema: 'x.Person', id: 'ada', expand: ['employer', 'mentor'], projection: ['employer.name', 'mentor'] });
    expect(record).to.deep.equal({ id: 'ada', version: 1, employer: { name: 'Acme' }, mentor: { id: 'mia', version: 1, name: 'Mia' } });
  });
});
