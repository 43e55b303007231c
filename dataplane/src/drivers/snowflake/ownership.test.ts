/**
 * The warehouse's ownership marker against the Snowflake test peer: a dataset that claims its
 * schema is named as its owner afterwards (what the data plane refuses another dataset on, 409
 * STORAGE_RETAINED, see dataplane/test/admin-retained-storage.test.ts); another dataset over the
 * same schema sees that owner; purge (deletionPolicy Delete) removes the marker with the data.
 */
import { expect } from 'chai';
import { ownershipProblem } from '../../config/ownership.js';
import { warehouseDataset } from '../../../test-support/snowflake-fixtures.js';
import { warehouseDriverUnderTest } from '../../../test-support/snowflake-peer.js';
import { SNOWFLAKE_FORMAT } from './table-format.js';

describe('warehouse driver: retained storage has an owner (Snowflake test peer)', function () {
  this.timeout(120_000);

  it('A claims its schema; B over the same schema sees A as owner until it adopts; purge drops the marker', async () => {
    const { driver, location } = await warehouseDriverUnderTest(SNOWFLAKE_FORMAT);
    const a = warehouseDataset('snowflake', { ...location, schema: 'RETAINED' });
    const b = { ...a, id: 'mallory' };
    expect(await driver.ownership.ownerOf(a)).to.equal(undefined);
    await driver.prepare(a);
    await driver.ownership.claim(a);
    expect(await driver.ownership.ownerOf(b)).to.equal('shop');
    expect(ownershipProblem(b, 'shop')).to.contain('dataset "shop"');
    expect(ownershipProblem({ ...b, adopt: 'shop' }, 'shop')).to.equal(undefined);
    await driver.ownership.claim(b); // adopting: the storage now belongs to b
    expect(await driver.ownership.ownerOf(a)).to.equal('mallory');
    await driver.purge(b);
    expect(await driver.ownership.ownerOf(a)).to.equal(undefined);
  });
});
