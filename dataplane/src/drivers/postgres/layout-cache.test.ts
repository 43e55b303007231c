import { expect } from 'chai';
import pino from 'pino';
import { renderDatasetConfig } from '../../../../model/render.js';
import type { DatasetConfig } from '../../../../model/types.js';
import { freshDatabase } from '../../../test-support/postgres.js';
import { PostgresDriver } from './driver.js';
import { LayoutCache } from './layout-cache.js';
import { tableLayout } from './sql.js';
import { dataPlaneSettings } from '../../../../model/settings/dataplane.js';

const config = (name: string, generation: number): DatasetConfig =>
  renderDatasetConfig({
    apiVersion: 'dataaccess.dev/v1alpha1',
    kind: 'Dataset',
    metadata: { name, generation },
    spec: {
      environment: 'local',
      location: { kind: 'postgres' },
      schemas: { 'lc.Company': { properties: { name: { type: 'string' } } }, 'lc.Person': { properties: { name: { type: 'string' } } } },
    },
  });
const build = (dataset: DatasetConfig, schema: string) => () => tableLayout(dataset, schema, dataset.schemas[schema]);

describe('postgres driver: the layout cache holds the current generation only', function () {
  this.timeout(60000);

  it('keeps one generation per dataset: after 50 generations, only the latest one\'s layouts', () => {
    const cache = new LayoutCache();
    for (let generation = 1; generation <= 50; generation++) {
      for (const name of ['a', 'b']) {
        const dataset = config(name, generation);
        for (const schema of ['lc.Company', 'lc.Person']) cache.get(dataset, schema, build(dataset, schema));
      }
    }
    expect(cache.size).to.equal(4);
    expect([cache.generationOf('a'), cache.generationOf('b')]).to.deep.equal([50, 50]);
  });

  it('reuses a layout within a generation, and builds anew for another one', () => {
    const cache = new LayoutCache();
    const g1 = config('a', 1);
    const first = cache.get(g1, 'lc.Person', build(g1, 'lc.Person'));
    expect(cache.get(g1, 'lc.Person', () => expect.fail('built twice'))).to.equal(first);
    const g2 = config('a', 2);
    expect(cache.get(g2, 'lc.Person', build(g2, 'lc.Person'))).not.to.equal(first);
    expect(cache.size).to.equal(1);
  });

  it('follows a Dataset created again (its generation counts from 1 anew), and forgets a purged one', () => {
    const cache = new LayoutCache();
    const late = config('a', 7);
    cache.get(late, 'lc.Person', build(late, 'lc.Person'));
    const anew = config('a', 1);
    const layout = cache.get(anew, 'lc.Person', build(anew, 'lc.Person'));
    expect(cache.generationOf('a')).to.equal(1);
    expect(cache.get(anew, 'lc.Person', () => expect.fail('built twice'))).to.equal(layout);
    cache.forget('a');
    expect(cache.size).to.equal(0);
  });

  it('in the driver: reads through 50 config generations leave the latest generation\'s layouts', async () => {
    const driver = new PostgresDriver({ logger: pino({ level: 'silent' }), settings: dataPlaneSettings({ DATABASE_URL: await freshDatabase() }) });
    try {
      expect((await driver.prepare(config('lc', 1))).refused).to.deep.equal([]);
      for (let generation = 1; generation <= 50; generation++) {
        const dataset = config('lc', generation);
        await driver.write(dataset, [{ op: 'create', schema: 'lc.Person', id: `p${generation}`, data: { name: 'P' } }], 'ATOMIC');
        expect(await driver.read(dataset, { schema: 'lc.Company', id: 'none' })).to.equal(undefined);
      }
      expect(driver.layouts.size).to.equal(2);
      expect(driver.layouts.generationOf('lc')).to.equal(50);
    } finally {
      await driver.close();
    }
  });
});
