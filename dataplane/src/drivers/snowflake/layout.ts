/**
 * A schema's tables on the warehouse (the shared table shape in the warehouse dialect) and the
 * read statements, built once per layout. Every value is a bind (`?`) with an explicit cast to the
 * column's type; identifiers come from validated names and are quoted.
 */
import type { DatasetConfig, RecordSchemaDef } from '../../../../model/types.js';
import { quoteIdent as q, warehouseNaming as naming } from '../../engine/sql/naming.js';
import { tableShape, type TableShape } from '../sql/table-shape.js';
import { warehouseSqlDialect } from './dialect.js';
import type { TableFormat } from './table-format.js';

export interface Statement {
  text: string;
  binds: unknown[];
}

export interface WarehouseLayout extends TableShape {
  format: TableFormat;
  /** The quoted column list of the record table, in `columns` order. */
  columnList: string;
  /** A cast bind for a column type: `?::NUMBER(38,0)`. */
  cast(sqlType: string): string;
}

export function warehouseLayout(dataset: DatasetConfig, schemaName: string, schema: RecordSchemaDef, format: TableFormat): WarehouseLayout {
  const shape = tableShape(dataset, schemaName, schema, warehouseSqlDialect(format));
  return { ...shape, format, columnList: shape.columns.map((c) => q(c.name)).join(', '), cast: (sqlType) => `?::${sqlType}` };
}

const sys = naming.system;
const idType = (layout: WarehouseLayout) => layout.columns[0].sqlType;
const versionType = (layout: WarehouseLayout) => layout.columns[1].sqlType;

/** The live row of an id. */
export function selectByIdSql(layout: WarehouseLayout, id: string): Statement {
  return { text: `SELECT ${layout.columnList} FROM ${layout.table} WHERE ${q(sys.id)} = ${layout.cast(idType(layout))}`, binds: [id] };
}

/** One version from the history: the columns, then the deletion time (set on a tombstone). */
export function selectVersionSql(layout: WarehouseLayout, id: string, version: number): Statement {
  return {
    text: `SELECT ${layout.columnList}, ${q(sys.deletedAt)} FROM ${layout.history} WHERE ${q(sys.id)} = ${layout.cast(idType(layout))} AND ${q(sys.version)} = ${layout.cast(versionType(layout))}`,
    binds: [id, version],
  };
}

/** `IN (?::VARCHAR, …)`: the warehouse has no array binds. */
export function inList(layout: WarehouseLayout, sqlType: string, count: number): string {
  return `(${Array.from({ length: count }, () => layout.cast(sqlType)).join(', ')})`;
}

export function selectManySql(layout: WarehouseLayout, ids: readonly string[]): Statement {
  return { text: `SELECT ${layout.columnList} FROM ${layout.table} WHERE ${q(sys.id)} IN ${inList(layout, idType(layout), ids.length)}`, binds: [...ids] };
}
