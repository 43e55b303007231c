import { expect } from 'chai';
import { warehouseLayout } from './layout.js';
import { ICEBERG_FORMAT, SNOWFLAKE_FORMAT } from './table-format.js';
import { ICEBERG_SETTINGS, warehouseDataset } from '../../../test-support/snowflake-fixtures.js';
import { currentRowsSql, expectedLiveCounts, historyMergeSql, liveMergeSql } from './write-sql.js';
import type { PlannedRow } from './write-plan.js';

const dataset = warehouseDataset();
const layout = warehouseLayout(dataset, 'shop.Customer', dataset.schemas['shop.Customer'], SNOWFLAKE_FORMAT);
const row = (id: string, version: number, name: string | null): PlannedRow => ({ id, version, createdAt: 'c', updatedAt: 'u', values: [name] });

describe('warehouse write statements (pure): MERGE without RETURNING, binds cast, one statement per table', () => {
  it('reads live rows and history maxima of the ids in one SELECT', () => {
    const s = currentRowsSql(layout, ['a', 'b']);
    expect(s.text).to.equal(
      'SELECT 0 AS "DAS_SOURCE", "ID", "VERSION", "CREATED_AT", "UPDATED_AT", "NAME" FROM "SHOP"."SHOP_CUSTOMER" WHERE "ID" IN (?::VARCHAR, ?::VARCHAR) ' +
        'UNION ALL SELECT 1, "ID", MAX("VERSION"), NULL, NULL, NULL FROM "SHOP"."SHOP_CUSTOMER_HISTORY" WHERE "ID" IN (?::VARCHAR, ?::VARCHAR) GROUP BY "ID"',
    );
    expect(s.binds).to.deep.equal(['a', 'b', 'a', 'b']);
  });

  it('one MERGE of the record table holds inserts, version-guarded updates and deletes; its clauses only for kinds present', () => {
    const changes = [
      { kind: 'insert' as const, row: row('a', 1, 'A') },
      { kind: 'update' as const, row: row('b', 3, null), previousVersion: 2 },
      { kind: 'delete' as const, id: 'c', previousVersion: 5 },
    ];
    const s = liveMergeSql(layout, changes);
    const tuple = '(?::VARCHAR, ?::NUMBER(38,0), ?::TIMESTAMP_TZ, ?::TIMESTAMP_TZ, ?::VARCHAR, ?::VARCHAR, ?::NUMBER(38,0))';
    expect(s.text).to.equal(
      'MERGE INTO "SHOP"."SHOP_CUSTOMER" AS TGT USING (SELECT COLUMN1 AS "ID", COLUMN2 AS "VERSION", COLUMN3 AS "CREATED_AT", COLUMN4 AS "UPDATED_AT", COLUMN5 AS "NAME", COLUMN6 AS "DAS_OP", COLUMN7 AS "DAS_PREVIOUS_VERSION" ' +
        `FROM VALUES ${tuple}, ${tuple}, ${tuple}) AS SRC ON TGT."ID" = SRC."ID" ` +
        `WHEN MATCHED AND SRC."DAS_OP" = 'D' AND TGT."VERSION" = SRC."DAS_PREVIOUS_VERSION" THEN DELETE ` +
        `WHEN MATCHED AND SRC."DAS_OP" = 'U' AND TGT."VERSION" = SRC."DAS_PREVIOUS_VERSION" THEN UPDATE SET "VERSION" = SRC."VERSION", "CREATED_AT" = SRC."CREATED_AT", "UPDATED_AT" = SRC."UPDATED_AT", "NAME" = SRC."NAME" ` +
        `WHEN NOT MATCHED AND SRC."DAS_OP" = 'I' THEN INSERT ("ID", "VERSION", "CREATED_AT", "UPDATED_AT", "NAME") VALUES (SRC."ID", SRC."VERSION", SRC."CREATED_AT", SRC."UPDATED_AT", SRC."NAME")`,
    );
    expect(s.binds).to.deep.equal(['a', 1, 'c', 'u', 'A', 'I', null, 'b', 3, 'c', 'u', null, 'U', 2, 'c', null, null, null, null, 'D', 5]);
    expect(expectedLiveCounts(changes)).to.deep.equal({ inserted: 1, updated: 1, deleted: 1 });
    expect(liveMergeSql(layout, [changes[0]]).text).not.to.match(/WHEN MATCHED/);
  });

  it('the history gets an insert-only MERGE keyed by id and version, tombstones with their deletion time', () => {
    const s = historyMergeSql(layout, [{ row: row('a', 1, 'A') }, { row: row('a', 2, null), deletedAt: 'd' }]);
    expect(s.text).to.match(/^MERGE INTO "SHOP"\."SHOP_CUSTOMER_HISTORY" AS TGT USING \(SELECT COLUMN1 AS "ID", .* COLUMN6 AS "DELETED_AT" FROM VALUES \(.*\), \(.*\)\) AS SRC ON TGT\."ID" = SRC\."ID" AND TGT\."VERSION" = SRC\."VERSION" WHEN NOT MATCHED THEN INSERT \("ID", "VERSION", "CREATED_AT", "UPDATED_AT", "NAME", "DELETED_AT"\) VALUES \(SRC\."ID", .*SRC\."DELETED_AT"\)$/);
    expect(s.text).not.to.match(/RETURNING|WHEN MATCHED/);
    expect(s.binds).to.deep.equal(['a', 1, 'c', 'u', 'A', null, 'a', 2, 'c', 'u', null, 'd']);
  });

  it('the statement count does not grow with the actions: 100 rows, still one MERGE', () => {
    const rows = Array.from({ length: 100 }, (_, i) => ({ kind: 'insert' as const, row: row(`id${i}`, 1, 'x') }));
    const s = liveMergeSql(layout, rows);
    expect(s.text.match(/MERGE/g)).to.have.length(1);
    expect(s.binds).to.have.length(700);
  });

  it('Iceberg tables cast to Iceberg\'s types', () => {
    const ice = warehouseDataset('iceberg', ICEBERG_SETTINGS);
    const iceLayout = warehouseLayout(ice, 'shop.Customer', ice.schemas['shop.Customer'], ICEBERG_FORMAT);
    expect(liveMergeSql(iceLayout, [{ kind: 'insert', row: row('a', 1, 'A') }]).text).to.contain('(?::STRING, ?::NUMBER(10,0), ?::TIMESTAMP_LTZ(6), ?::TIMESTAMP_LTZ(6), ?::STRING, ?::STRING, ?::NUMBER(10,0))');
  });
});
