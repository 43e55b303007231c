/** The shared SQL layer with two dialects: PostgreSQL's, and a warehouse-like one that spells everything differently. */
import { expect } from 'chai';
import { renderDatasetConfig } from '../../../../model/render.js';
import type { DatasetSpec } from '../../../../model/types.js';
import { postgresSqlDialect } from '../postgres/dialect.js';
import { quoteIdent, warehouseNaming } from '../../engine/sql/naming.js';
import type { SchemaDialect } from '../../engine/sql/dialect.js';
import { diffSchema } from './schema-diff.js';
import { tableShape } from './table-shape.js';

/** Upper-case names, its own type names, and a catalog that reports them in yet another spelling. */
const WAREHOUSE_TYPES = { string: 'VARCHAR', integer: 'NUMBER(38,0)', number: 'FLOAT', boolean: 'BOOLEAN', date: 'DATE', timestamp: 'TIMESTAMP_TZ', link: 'VARCHAR', id: 'VARCHAR', version: 'NUMBER(10,0)', time: 'TIMESTAMP_TZ' } as const;
const CATALOG_SPELLING: Record<string, string> = { 'VARCHAR': 'TEXT', 'NUMBER(38,0)': 'NUMBER', 'NUMBER(10,0)': 'NUMBER', 'FLOAT': 'FLOAT', 'BOOLEAN': 'BOOLEAN', 'DATE': 'DATE', 'TIMESTAMP_TZ': 'TIMESTAMP_TZ' };
const warehouse: SchemaDialect = {
  name: 'warehouse-like (test)',
  naming: warehouseNaming,
  quoteIdent,
  columnType: (kind) => WAREHOUSE_TYPES[kind],
  sameColumnType: (catalogType, sqlType) => CATALOG_SPELLING[sqlType] === catalogType,
  defaultDatabaseSchema: (id) => id.toUpperCase().replace(/-/g, '_'),
};

const dataset = (properties: DatasetSpec['schemas'][string]['properties']) =>
  renderDatasetConfig({
    apiVersion: 'dataaccess.dev/v1alpha1',
    kind: 'Dataset',
    metadata: { name: 'shop', generation: 1 },
    spec: { environment: 'local', location: { kind: 'snowflake' }, schemas: { 'shop.Order': { properties } } },
  });

describe('shared SQL layer (drivers/sql/): table shapes and the additive schema diff, by dialect', () => {
  const v1 = dataset({ total: { type: 'number' }, placedAt: { type: 'timestamp' } });

  it('names tables and columns in the dialect', () => {
    const pg = tableShape(v1, 'shop.Order', v1.schemas['shop.Order'], postgresSqlDialect);
    const wh = tableShape(v1, 'shop.Order', v1.schemas['shop.Order'], warehouse);
    expect([pg.table, pg.history]).to.deep.equal(['"shop"."shop_order"', '"shop"."shop_order_history"']);
    expect([wh.table, wh.history]).to.deep.equal(['"SHOP"."SHOP_ORDER"', '"SHOP"."SHOP_ORDER_HISTORY"']);
    expect(wh.columns.map((c) => `${c.name} ${c.sqlType}`)).to.deep.equal([
      'ID VARCHAR', 'VERSION NUMBER(10,0)', 'CREATED_AT TIMESTAMP_TZ', 'UPDATED_AT TIMESTAMP_TZ', 'TOTAL FLOAT', 'PLACED_AT TIMESTAMP_TZ',
    ]);
    expect(wh.historyColumns.at(-1)).to.deep.equal({ name: 'DELETED_AT', sqlType: 'TIMESTAMP_TZ' });
  });

  it('creates what is missing, adds new columns, and refuses a type change — comparing in the catalog\'s spelling', () => {
    const shape = tableShape(v1, 'shop.Order', v1.schemas['shop.Order'], warehouse);
    expect(diffSchema([shape], [], warehouse).createTables.map((t) => t.history)).to.deep.equal([false, true]);

    // The catalog has both tables as v1 made them, spelled its way: nothing to do.
    const catalog = (table: string, columns: { name: string; sqlType: string }[]) => columns.map((c) => ({ table_name: table, column_name: c.name, data_type: CATALOG_SPELLING[c.sqlType] }));
    const existing = [...catalog('SHOP_ORDER', shape.columns), ...catalog('SHOP_ORDER_HISTORY', shape.historyColumns)];
    expect(diffSchema([shape], existing, warehouse)).to.deep.equal({ createTables: [], addColumns: [], refused: [] });

    const v2 = dataset({ total: { type: 'number' }, placedAt: { type: 'timestamp' }, note: { type: 'string' } });
    const added = diffSchema([tableShape(v2, 'shop.Order', v2.schemas['shop.Order'], warehouse)], existing, warehouse);
    expect(added.addColumns.map((a) => `${a.table} ${a.column.name} ${a.column.sqlType}`)).to.deep.equal(['"SHOP"."SHOP_ORDER" NOTE VARCHAR', '"SHOP"."SHOP_ORDER_HISTORY" NOTE VARCHAR']);
    expect(added.refused).to.deep.equal([]);

    const v3 = dataset({ total: { type: 'integer' }, placedAt: { type: 'timestamp' } });
    const refused = diffSchema([tableShape(v3, 'shop.Order', v3.schemas['shop.Order'], warehouse)], existing, warehouse);
    expect(refused.refused[0]).to.equal('shop.Order: column "TOTAL" of SHOP_ORDER is FLOAT; changing it to NUMBER(38,0) would rewrite stored data');
  });

  it('refuses two properties on one column in every dialect', () => {
    const clash = dataset({ aB: { type: 'string' }, a_b: { type: 'string' } });
    for (const dialect of [postgresSqlDialect, warehouse]) {
      const diff = diffSchema([tableShape(clash, 'shop.Order', clash.schemas['shop.Order'], dialect)], [], dialect);
      expect(diff.refused, dialect.name).to.have.length(1);
    }
  });
});
