/**
 * A read row as record data: columns map to properties by name — nested properties from struct
 * columns (or nested JSON) or dotted names (`address.postcode`), links from `<link>.id`,
 * `<link>_id` or a `{id}` struct — then the data is validated like any write.
 */
import { randomUUID } from 'node:crypto';
import type { DatasetConfig } from '../../../model/types.js';
import type { DriverCapabilities, LoadOperation } from '../engine/contract.js';
import { ApiError } from '../engine/errors.js';
import { fieldsOf, setAt, type Field } from '../engine/layout.js';
import { validateRecordData } from '../engine/record-validation.js';
import { quote } from './limits.js';

export type Mapped = { id: string; data: Record<string, unknown> } | { problem: string; path?: string };

const own = (o: Record<string, unknown>, k: string) => Object.hasOwn(o, k);

export function rowMapper(dataset: DatasetConfig, schema: string, operation: LoadOperation, store: Pick<DriverCapabilities, 'indexedKeyBytes'> = {}): (row: Record<string, unknown>) => Mapped {
  const fields = fieldsOf(dataset.schemas[schema]);
  const topLevel = new Set(fields.map((f) => f.path[0]));
  const flatNames = new Set(fields.flatMap((f) => (f.type === 'link' ? [`${f.dotted}.id`, `${f.dotted}_id`, f.dotted] : [f.dotted])));
  return (row) => {
    const id = idOf(row.id);
    if (id === undefined) {
      if (operation !== 'INSERT' || (row.id !== undefined && row.id !== null)) return { problem: 'the row needs an "id": a non-empty string or whole number', path: '$.id' };
    }
    if (operation === 'DELETE') return { id: id!, data: {} };
    for (const key of Object.keys(row)) {
      if (key !== 'id' && !topLevel.has(key) && !flatNames.has(key)) return { problem: `column "${quote(key)}" matches no property of ${schema}`, path: `$.${quote(key, 100)}` };
    }
    const data: Record<string, unknown> = {};
    for (const field of fields) {
      const raw = valueOf(row, field);
      if (raw === undefined || raw === null) continue;
      const value = convert(field, raw);
      setAt(data, field.path, field.type === 'link' ? { id: value } : value);
    }
    try {
      // The store's limits too (an indexed value too long for its index): the row is refused, not the load.
      validateRecordData(dataset, schema, data, true, '$', { indexedKeyBytes: store.indexedKeyBytes, ...(id !== undefined ? { id } : {}) });
    } catch (err) {
      if (err instanceof ApiError) return { problem: err.message, path: err.details[0]?.path };
      throw err;
    }
    return { id: id ?? randomUUID(), data };
  };
}

function idOf(value: unknown): string | undefined {
  if (typeof value === 'string' && value.length > 0 && value.length <= 512 && !value.includes('\u0000')) return value;
  if ((typeof value === 'number' && Number.isInteger(value)) || typeof value === 'bigint') return String(value);
  return undefined;
}

/** The field's value in the row: nested, then dotted, then (links) `.id` / `_id` names. */
function valueOf(row: Record<string, unknown>, field: Field): unknown {
  let node: unknown = row;
  for (const key of field.path) {
    if (node === null || typeof node !== 'object' || !own(node as Record<string, unknown>, key)) {
      node = undefined;
      break;
    }
    node = (node as Record<string, unknown>)[key];
  }
  if (node === undefined && field.path.length > 1 && own(row, field.dotted)) node = row[field.dotted];
  if (field.type === 'link') {
    if (node && typeof node === 'object') return (node as { id?: unknown }).id ?? null;
    if (node === undefined && own(row, `${field.dotted}.id`)) return row[`${field.dotted}.id`];
    if (node === undefined && own(row, `${field.dotted}_id`)) return row[`${field.dotted}_id`];
  }
  return node;
}

/**
 * Parquet's and CSV's values in the API's JSON forms: 64-bit integers as numbers (when safe),
 * Date as `YYYY-MM-DD` or ISO-8601, CSV text to numbers and booleans. Anything that does not
 * convert is kept as it is, so validation names the problem.
 */
function convert(field: Field, value: unknown): unknown {
  if (typeof value === 'bigint') return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : String(value);
  if (value instanceof Date) return field.type === 'date' ? value.toISOString().slice(0, 10) : value.toISOString();
  if (typeof value !== 'string') return field.type === 'link' && typeof value === 'number' ? String(value) : value;
  switch (field.type) {
    case 'integer':
      return /^-?[0-9]+$/.test(value.trim()) ? Number(value) : value;
    case 'number':
      return value.trim() !== '' && Number.isFinite(Number(value)) ? Number(value) : value;
    case 'boolean':
      return /^true$/i.test(value) ? true : /^false$/i.test(value) ? false : value;
    default:
      return value;
  }
}
