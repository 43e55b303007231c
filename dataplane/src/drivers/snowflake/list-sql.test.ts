import { expect } from 'chai';
import { compileFilter } from '../../../../model/filter.js';
import { compileSort } from '../../../../model/sort.js';
import { warehouseLayout } from './layout.js';
import { listSql } from './list-sql.js';
import { SNOWFLAKE_FORMAT } from './table-format.js';
import { warehouseDataset } from '../../../test-support/snowflake-fixtures.js';

const dataset = warehouseDataset();
const def = dataset.schemas['shop.Order'];
const layout = warehouseLayout(dataset, 'shop.Order', def, SNOWFLAKE_FORMAT);
const COLS = '"ID", "VERSION", "CREATED_AT", "UPDATED_AT", "TOTAL", "COUNT", "PLACED_AT", "DAY", "PAID", "ADDRESS_CITY", "CUSTOMER_ID"';

describe('warehouse list pages (pure): keyset SQL in Snowflake\'s spelling', () => {
  it('without a sort, pages go by id: ORDER BY the id, keyset after the last id, LIMIT inlined', () => {
    const sort = compileSort(undefined, def);
    expect(listSql(layout, { sort, limit: 11 })).to.deep.equal({ text: `SELECT ${COLS} FROM "SHOP"."SHOP_ORDER" ORDER BY "ID" ASC NULLS LAST LIMIT 11`, binds: [] });
    const next = listSql(layout, { sort, limit: 11, after: ['k7'] });
    expect(next.text).to.equal(`SELECT ${COLS} FROM "SHOP"."SHOP_ORDER" WHERE ("ID" > ?::VARCHAR) ORDER BY "ID" ASC NULLS LAST LIMIT 11`);
    expect(next.binds).to.deep.equal(['k7']);
  });

  it('filters with null-safe predicates and IN lists of cast binds (no array binds, no COLLATE)', () => {
    const filter = compileFilter("count in (1, 2) and not (address.city == 'Paris') and total != 3 and customer.id == 'c1' and day >= '2024-01-01'", def);
    const s = listSql(layout, { filter, sort: compileSort('placedAt:desc', def), limit: 5 });
    expect(s.text).to.equal(
      `SELECT ${COLS} FROM "SHOP"."SHOP_ORDER" WHERE (("COUNT" IS NOT NULL AND "COUNT" IN (?::NUMBER(38,0), ?::NUMBER(38,0))) AND (NOT ("ADDRESS_CITY" IS NOT NULL AND "ADDRESS_CITY" = ?::VARCHAR)) AND ("TOTAL" IS NULL OR "TOTAL" <> ?::FLOAT) AND ("CUSTOMER_ID" IS NOT NULL AND "CUSTOMER_ID" = ?::VARCHAR) AND ("DAY" IS NOT NULL AND "DAY" >= ?::DATE)) ` +
        'ORDER BY "PLACED_AT" DESC NULLS FIRST, "ID" ASC NULLS LAST LIMIT 5',
    );
    expect(s.binds).to.deep.equal([1, 2, 'Paris', 3, 'c1', '2024-01-01']);
    expect(s.text).not.to.match(/COLLATE|ANY\(|\$\d/);
  });

  it('keyset after a null sort value and after a value with nulls last', () => {
    const sort = compileSort('count:asc:nulls-first', def);
    expect(listSql(layout, { sort, limit: 3, after: [null, 'x'] }).text).to.contain('WHERE ("COUNT" IS NOT NULL OR ("COUNT" IS NULL AND "ID" > ?::VARCHAR))');
    const last = compileSort('count:desc:last', def);
    const s = listSql(layout, { sort: last, limit: 3, after: [5, 'x'] });
    expect(s.text).to.contain('WHERE (("COUNT" < ?::NUMBER(38,0) OR "COUNT" IS NULL) OR ("COUNT" = ?::NUMBER(38,0) AND "ID" > ?::VARCHAR))');
    expect(s.binds).to.deep.equal([5, 5, 'x']);
  });
});
