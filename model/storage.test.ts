/** Datasets' storage boundaries (model/storage.ts): the one overlap rule the admin API, the data plane and the operator apply. */
import { expect } from 'chai';
import { firstOverlap, reservedStorageProblems, storageOverlap, type StorageClaim } from './storage.js';
import { checkDatasetSpec } from './validate.js';
import type { LocationSpec } from './types.js';

const claim = (id: string, location: Partial<LocationSpec> & Pick<LocationSpec, 'kind'>): StorageClaim => ({ id, location: location as LocationSpec });
const warehouse = { account: 'acme', warehouse: 'WH', connectionSecretRef: { name: 'login', key: 'login' } };

describe('storage boundaries (model/storage.ts)', () => {
  it('PostgreSQL: the same schema overlaps, named or by default, whatever the connection', () => {
    const demo = claim('demo', { kind: 'postgres', databaseSchema: 'demo' });
    expect(storageOverlap(claim('evil', { kind: 'postgres', databaseSchema: 'demo', connectionSecretRef: { name: 'other', key: 'url' } }), demo)).to.equal(
      'its PostgreSQL schema "demo" (spec.location.databaseSchema) is dataset "demo"\'s',
    );
    // A dataset named "demo" without databaseSchema uses schema demo too.
    expect(storageOverlap(claim('copy', { kind: 'postgres', databaseSchema: 'demo' }), claim('demo', { kind: 'postgres' }))).to.contain('dataset "demo"');
    expect(storageOverlap(claim('my-data', { kind: 'postgres' }), claim('other', { kind: 'postgres', databaseSchema: 'my_data' }))).to.contain('"my_data"');
    expect(storageOverlap(claim('demo2', { kind: 'postgres', databaseSchema: 'demo2' }), demo)).to.equal(undefined);
    // One dataset never overlaps itself (an update of its own config).
    expect(storageOverlap(demo, demo)).to.equal(undefined);
  });

  it('the warehouse: the same database.schema overlaps, case-insensitively, across snowflake and iceberg', () => {
    const sales = claim('sales', { kind: 'snowflake', ...warehouse, database: 'SALES', schema: 'SALES' });
    expect(storageOverlap(claim('x', { kind: 'snowflake', ...warehouse, database: 'sales', schema: 'Sales' }), sales)).to.contain('"SALES.SALES"');
    expect(storageOverlap(claim('x', { kind: 'iceberg', ...warehouse, database: 'SALES', schema: 'SALES', externalVolume: 'V', baseLocation: 'x' }), sales)).to.contain('dataset "sales"');
    expect(storageOverlap(claim('x', { kind: 'snowflake', ...warehouse, database: 'SALES', schema: 'OTHER' }), sales)).to.equal(undefined);
    expect(storageOverlap(claim('x', { kind: 'snowflake', ...warehouse, database: 'OTHER', schema: 'SALES' }), sales)).to.equal(undefined);
    // Without `schema`, the dataset id (upper case) is the schema.
    expect(storageOverlap(claim('sales', { kind: 'snowflake', ...warehouse, database: 'SALES' }), claim('y', { kind: 'snowflake', ...warehouse, database: 'SALES', schema: 'SALES' }))).to.contain('dataset "y"');
    // A PostgreSQL schema of the same name is another store.
    expect(storageOverlap(claim('x', { kind: 'postgres', databaseSchema: 'sales' }), sales)).to.equal(undefined);
  });

  it('Iceberg: one base location under another on the same volume overlaps; a sibling path does not', () => {
    const lake = (id: string, schema: string, volume: string, baseLocation: string) => claim(id, { kind: 'iceberg', ...warehouse, database: 'LAKE', schema, externalVolume: volume, baseLocation });
    const events = lake('events', 'EVENTS', 'LAKE_VOL', 'lake/events');
    expect(storageOverlap(lake('x', 'X', 'lake_vol', 'lake/events/'), events)).to.contain('Iceberg base location');
    expect(storageOverlap(lake('x', 'X', 'LAKE_VOL', 'lake'), events)).to.contain('overlaps dataset "events"\'s');
    expect(storageOverlap(lake('x', 'X', 'LAKE_VOL', 'lake/events2'), events)).to.equal(undefined);
    // Spelled differently, the same files.
    expect(storageOverlap(lake('x', 'X', 'LAKE_VOL', './lake//other/../events/'), events)).to.contain('Iceberg base location');
    expect(storageOverlap(lake('x', 'X', 'LAKE_VOL', '/lake/events/sub'), events)).to.contain('Iceberg base location');
    expect(storageOverlap(lake('x', 'X', 'OTHER_VOL', 'lake/events'), events)).to.equal(undefined);
  });

  it('DynamoDB: tables are <tablePrefix><dataset>_<schema>, so names under one another\'s <tablePrefix><dataset>_ overlap', () => {
    const shop = claim('shop', { kind: 'dynamodb', tablePrefix: 'local-' });
    // Same prefix and id: the same tables.
    expect(storageOverlap(claim('shop', { kind: 'dynamodb', tablePrefix: 'local-' }), claim('shop', { kind: 'dynamodb' }))).to.equal(undefined); // same id: itself
    // "local-" + "shop" + "_" is what "local-shop_" + "" would name.
    expect(storageOverlap(claim('x', { kind: 'dynamodb', tablePrefix: 'local-shop_' }), shop)).to.contain('overlaps dataset "shop"\'s "local-shop_…"');
    // Prefix "local-s" with dataset "hop": "local-shop_" again.
    expect(storageOverlap(claim('hop', { kind: 'dynamodb', tablePrefix: 'local-s' }), shop)).to.contain('is dataset "shop"\'s');
    // "app" vs "app_x": appdemo_ and app_xdemo_ name different tables.
    expect(storageOverlap(claim('demo', { kind: 'dynamodb', tablePrefix: 'app' }), claim('other', { kind: 'dynamodb', tablePrefix: 'app_x' }))).to.equal(undefined);
    expect(storageOverlap(claim('x', { kind: 'dynamodb', tablePrefix: 'local-' }), shop)).to.equal(undefined);
  });

  it('firstOverlap names the first dataset, in the order given', () => {
    const claims = [claim('a', { kind: 'postgres', databaseSchema: 'one' }), claim('b', { kind: 'postgres', databaseSchema: 'two' }), claim('c', { kind: 'postgres', databaseSchema: 'two' })];
    expect(firstOverlap(claim('z', { kind: 'postgres', databaseSchema: 'two' }), claims)?.dataset).to.equal('b');
    expect(firstOverlap(claim('z', { kind: 'postgres', databaseSchema: 'three' }), claims)).to.equal(undefined);
  });

  it('the stores\' own schemas are refused, and checkDatasetSpec reports them at the field', () => {
    for (const schema of ['information_schema', 'pg_catalog', 'pg_toast', 'pg_temp_3', 'pg_anything', 'public', 'das_internal']) {
      expect(reservedStorageProblems(claim('x', { kind: 'postgres', databaseSchema: schema })), schema).to.have.length(1);
    }
    // A dataset named pg-stats without databaseSchema would get schema pg_stats.
    expect(reservedStorageProblems(claim('pg-stats', { kind: 'postgres' }))).to.have.length(1);
    expect(reservedStorageProblems(claim('x', { kind: 'postgres', databaseSchema: 'demo' }))).to.deep.equal([]);
    expect(reservedStorageProblems(claim('x', { kind: 'snowflake', ...warehouse, database: 'SALES', schema: 'information_schema' }))).to.deep.equal([
      { field: 'schema', message: 'warehouse schema "SALES.INFORMATION_SCHEMA" belongs to the store itself and cannot hold a dataset' },
    ]);
    expect(reservedStorageProblems(claim('x', { kind: 'snowflake', ...warehouse, database: 'SNOWFLAKE', schema: 'X' }))[0].field).to.equal('database');
    const spec = { environment: 'local', location: { kind: 'postgres', databaseSchema: 'information_schema' }, schemas: { 'a.B': { properties: { n: { type: 'string' } } } } };
    expect(checkDatasetSpec(spec)).to.deep.equal([
      { path: '$.spec.location.databaseSchema', message: 'PostgreSQL schema "information_schema" belongs to the store itself and cannot hold a dataset' },
    ]);
  });
});
