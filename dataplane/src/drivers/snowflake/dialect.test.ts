import { expect } from 'chai';
import { tableShape } from '../sql/table-shape.js';
import { planSchemaChanges, existingColumn } from './ddl.js';
import { catalogSpelling, sameWarehouseType, warehouseSqlDialect } from './dialect.js';
import { warehouseLayout } from './layout.js';
import { ICEBERG_FORMAT, SNOWFLAKE_FORMAT } from './table-format.js';
import { ICEBERG_SETTINGS, warehouseDataset } from '../../../test-support/snowflake-fixtures.js';

describe('warehouse dialect and DDL (drivers/snowflake): names, types, the catalog\'s spelling', () => {
  it('names tables and columns upper case, in the schema the location names', () => {
    const dataset = warehouseDataset();
    const shape = tableShape(dataset, 'shop.Order', dataset.schemas['shop.Order'], warehouseSqlDialect(SNOWFLAKE_FORMAT));
    expect([shape.table, shape.history]).to.deep.equal(['"SHOP"."SHOP_ORDER"', '"SHOP"."SHOP_ORDER_HISTORY"']);
    expect(shape.columns.map((c) => `${c.name} ${c.sqlType}`)).to.deep.equal([
      'ID VARCHAR', 'VERSION NUMBER(38,0)', 'CREATED_AT TIMESTAMP_TZ', 'UPDATED_AT TIMESTAMP_TZ',
      'TOTAL FLOAT', 'COUNT NUMBER(38,0)', 'PLACED_AT TIMESTAMP_TZ', 'DAY DATE', 'PAID BOOLEAN', 'ADDRESS_CITY VARCHAR', 'CUSTOMER_ID VARCHAR',
    ]);
    // Without a schema setting: the dataset id as an unquoted identifier would fold.
    const unnamed = warehouseDataset('snowflake', { schema: undefined });
    expect(tableShape(unnamed, 'shop.Order', unnamed.schemas['shop.Order'], warehouseSqlDialect(SNOWFLAKE_FORMAT)).dbSchema).to.equal('SHOP');
  });

  it('uses Iceberg\'s types where they differ (no TIMESTAMP_TZ, STRING, long)', () => {
    const dataset = warehouseDataset('iceberg', ICEBERG_SETTINGS);
    const shape = tableShape(dataset, 'shop.Order', dataset.schemas['shop.Order'], warehouseSqlDialect(ICEBERG_FORMAT));
    expect(Object.fromEntries(shape.columns.map((c) => [c.name, c.sqlType]))).to.include({ ID: 'STRING', VERSION: 'NUMBER(10,0)', CREATED_AT: 'TIMESTAMP_LTZ(6)', COUNT: 'NUMBER(19,0)', PLACED_AT: 'TIMESTAMP_LTZ(6)', ADDRESS_CITY: 'STRING' });
  });

  it('compares types as INFORMATION_SCHEMA spells them: synonyms equal, a NUMBER\'s scale counts, lengths do not', () => {
    expect(catalogSpelling('NUMBER(38,0)')).to.deep.equal({ name: 'NUMBER', scale: 0 });
    expect(catalogSpelling('VARCHAR(16777216)')).to.deep.equal({ name: 'TEXT' });
    expect(sameWarehouseType('TEXT', 'VARCHAR')).to.equal(true);
    expect(sameWarehouseType('TEXT', 'STRING')).to.equal(true);
    expect(sameWarehouseType('NUMBER(38,0)', 'NUMBER(38,0)')).to.equal(true);
    expect(sameWarehouseType('NUMBER(19,0)', 'NUMBER(38,0)')).to.equal(true);
    expect(sameWarehouseType('NUMBER(38,2)', 'NUMBER(38,0)')).to.equal(false);
    expect(sameWarehouseType('NUMBER', 'NUMBER(38,0)')).to.equal(true);
    expect(sameWarehouseType('FLOAT', 'NUMBER(38,0)')).to.equal(false);
    expect(sameWarehouseType('TIMESTAMP_LTZ', 'TIMESTAMP_LTZ(6)')).to.equal(true);
    expect(sameWarehouseType('TIMESTAMP_NTZ', 'TIMESTAMP_TZ')).to.equal(false);
    expect(existingColumn({ TABLE_NAME: 'T', COLUMN_NAME: 'C', DATA_TYPE: 'NUMBER', NUMERIC_PRECISION: 38, NUMERIC_SCALE: 0 }).data_type).to.equal('NUMBER(38,0)');
    expect(existingColumn({ TABLE_NAME: 'T', COLUMN_NAME: 'C', DATA_TYPE: 'TEXT', NUMERIC_PRECISION: null, NUMERIC_SCALE: null }).data_type).to.equal('TEXT');
  });

  it('creates Snowflake tables with a declared key, Iceberg tables on the external volume under the base location', () => {
    const sf = warehouseDataset();
    const sfPlan = planSchemaChanges(sf, [warehouseLayout(sf, 'shop.Customer', sf.schemas['shop.Customer'], SNOWFLAKE_FORMAT)], []);
    expect(sfPlan.statements).to.deep.equal([
      'CREATE SCHEMA IF NOT EXISTS "SHOP"',
      'CREATE TABLE IF NOT EXISTS "SHOP"."SHOP_CUSTOMER" ("ID" VARCHAR NOT NULL, "VERSION" NUMBER(38,0) NOT NULL, "CREATED_AT" TIMESTAMP_TZ, "UPDATED_AT" TIMESTAMP_TZ, "NAME" VARCHAR, PRIMARY KEY ("ID"))',
      'CREATE TABLE IF NOT EXISTS "SHOP"."SHOP_CUSTOMER_HISTORY" ("ID" VARCHAR NOT NULL, "VERSION" NUMBER(38,0) NOT NULL, "CREATED_AT" TIMESTAMP_TZ, "UPDATED_AT" TIMESTAMP_TZ, "NAME" VARCHAR, "DELETED_AT" TIMESTAMP_TZ, PRIMARY KEY ("ID", "VERSION"))',
    ]);
    const ice = warehouseDataset('iceberg', { ...ICEBERG_SETTINGS, catalog: 'SNOWFLAKE' });
    const layout = warehouseLayout(ice, 'shop.Customer', ice.schemas['shop.Customer'], ICEBERG_FORMAT);
    const icePlan = planSchemaChanges(ice, [layout], []);
    expect(icePlan.statements[1]).to.equal(
      `CREATE ICEBERG TABLE IF NOT EXISTS "SHOP"."SHOP_CUSTOMER" ("ID" STRING NOT NULL, "VERSION" NUMBER(10,0) NOT NULL, "CREATED_AT" TIMESTAMP_LTZ(6), "UPDATED_AT" TIMESTAMP_LTZ(6), "NAME" STRING) EXTERNAL_VOLUME = 'VOL' CATALOG = 'SNOWFLAKE' BASE_LOCATION = 'lake/shop/SHOP_CUSTOMER'`,
    );
    expect(icePlan.statements[2]).to.contain("BASE_LOCATION = 'lake/shop/SHOP_CUSTOMER_HISTORY'");
    // A new property: ALTER ICEBERG TABLE … ADD COLUMN on both tables; a changed type: refused.
    const catalog = [...layout.columns.map((c) => ({ table_name: 'SHOP_CUSTOMER', column_name: c.name, data_type: c.sqlType === 'STRING' ? 'TEXT' : c.sqlType.replace(/\(6\)$/, '') })),
      ...layout.historyColumns.map((c) => ({ table_name: 'SHOP_CUSTOMER_HISTORY', column_name: c.name, data_type: c.sqlType === 'STRING' ? 'TEXT' : c.sqlType.replace(/\(6\)$/, '') }))];
    expect(planSchemaChanges(ice, [layout], catalog).statements).to.deep.equal(['CREATE SCHEMA IF NOT EXISTS "SHOP"']);
    const v2 = { ...ice, schemas: { ...ice.schemas, 'shop.Customer': { properties: { name: { type: 'integer' as const }, vip: { type: 'boolean' as const } } } } };
    const plan2 = planSchemaChanges(v2, [warehouseLayout(v2, 'shop.Customer', v2.schemas['shop.Customer'], ICEBERG_FORMAT)], catalog);
    expect(plan2.statements.slice(1)).to.deep.equal(['ALTER ICEBERG TABLE "SHOP"."SHOP_CUSTOMER" ADD COLUMN "VIP" BOOLEAN', 'ALTER ICEBERG TABLE "SHOP"."SHOP_CUSTOMER_HISTORY" ADD COLUMN "VIP" BOOLEAN']);
    expect(plan2.refused).to.have.length(2);
    expect(plan2.refused[0]).to.contain('"NAME" of SHOP_CUSTOMER is TEXT; changing it to NUMBER(19,0)');
  });
});
