/**
 * DynamoDB's ownership marker on DynamoDB Local: table names carry `<tablePrefix><dataset>_`, so a
 * dataset deleted with Retain leaves tables another dataset reaches by spelling the same names
 * (prefix `a-` with id `b-c`, prefix `a-b-` with id `c`). The marker table sits under the same
 * names, so that dataset sees the old owner (the data plane refuses it, 409 STORAGE_RETAINED);
 * adopting claims it; purge (deletionPolicy Delete) drops it with the tables.
 */
import { expect } from 'chai';
import { ownershipProblem } from '../../config/ownership.js';
import { dynamoDbUnderTest } from '../../../test-support/dynamodb.js';
import { suiteDataset } from '../../../test-support/driver-suite.js';
import { ownerTable, schemaTables } from './tables.js';

describe('DynamoDB driver: retained tables have an owner (DynamoDB Local)', function () {
  this.timeout(120_000);

  it('prefix a- with id b-c and prefix a-b- with id c share table names: the second sees the first as owner until it adopts; purge drops the marker', async () => {
    const { driver, location } = await dynamoDbUnderTest();
    const base = suiteDataset('dynamodb', location);
    const old = { ...base, id: 'b-c', location: { ...base.location, tablePrefix: `${location.tablePrefix}a-` } };
    const claimant = { ...base, id: 'c', location: { ...base.location, tablePrefix: `${location.tablePrefix}a-b-` } };
    const schema = Object.keys(base.schemas)[0];
    expect(schemaTables(claimant, schema)).to.deep.equal(schemaTables(old, schema));
    expect(ownerTable(claimant)).to.equal(ownerTable(old));

    expect(await driver.ownership.ownerOf(old)).to.equal(undefined);
    await driver.prepare(old);
    await driver.ownership.claim(old);
    expect(await driver.ownership.ownerOf(old)).to.equal('b-c');
    expect(await driver.ownership.ownerOf(claimant)).to.equal('b-c');
    expect(ownershipProblem(claimant, 'b-c')).to.contain('dataset "b-c"');
    expect(ownershipProblem({ ...claimant, adopt: 'b-c' }, 'b-c')).to.equal(undefined);

    await driver.ownership.claim(claimant); // adopting: the tables now belong to c
    expect(await driver.ownership.ownerOf(old)).to.equal('c');
    const dropped = await driver.purge(claimant);
    expect(dropped).to.include(ownerTable(claimant));
    expect(await driver.ownership.ownerOf(old)).to.equal(undefined);
  });
});
