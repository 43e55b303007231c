/**
 * Values as the SDK hands them over, as records hold them: the SDK turns DATE and TIMESTAMP_*
 * columns into Date objects (SfDate), NUMBER and FLOAT into numbers; a record keeps a date as
 * `YYYY-MM-DD` and a timestamp as ISO-8601 in UTC.
 */
import type { StoredRecord } from '../../engine/contract.js';
import { SYSTEM_COLUMN_INDEX } from '../sql/table-shape.js';
import type { WarehouseLayout } from './layout.js';
import { recordOf, type PlannedRow } from './write-plan.js';

const isDateType = (sqlType: string) => /^DATE\b/i.test(sqlType);

/** One column's value from the SDK, in the record's form. */
export function fromWarehouse(value: unknown, sqlType: string): unknown {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return isDateType(sqlType) ? value.toISOString().slice(0, 10) : value.toISOString();
  return value;
}

/** A row of the layout's columns (in order) as the planner's row. */
export function plannedRowOf(layout: WarehouseLayout, row: readonly unknown[]): PlannedRow {
  const at = SYSTEM_COLUMN_INDEX;
  const col = (i: number) => fromWarehouse(row[i], layout.columns[i].sqlType);
  return {
    id: col(at.id) as string,
    version: Number(col(at.version)),
    createdAt: col(at.createdAt) as string,
    updatedAt: col(at.updatedAt) as string,
    values: layout.columns.slice(4).map((_, j) => col(j + 4)),
  };
}

export function recordOfRow(layout: WarehouseLayout, row: readonly unknown[], deleted = false): StoredRecord {
  return recordOf(layout.fields, plannedRowOf(layout, row), deleted);
}
