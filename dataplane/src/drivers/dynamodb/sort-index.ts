/**
 * Secondary indexes for properties marked `sortable: true` (docs/dynamodb.md "Sortable
 * properties"). Each gets a global secondary index on the records table: partition key `gp` (one
 * constant value, so the index is one ordered sequence) and sort key `s:<property>`, a top-level
 * copy of the value in an encoding whose byte order is the reference order (model/sort.ts rule 5),
 * followed by U+0001 and the id. A record without the value is not in the index (sparse): nulls
 * are read apart.
 */
import type { Field } from '../../engine/layout.js';
import { fieldsOf } from '../../engine/layout.js';
import type { RecordSchemaDef } from '../../../../model/types.js';
import { storedTimestamp } from './values.js';

export const INDEX_PARTITION = 'gp';
export const SEPARATOR = '\u0001';

export const sortKeyAttribute = (field: Pick<Field, 'dotted'>) => `s:${field.dotted}`;
export const indexName = (field: Pick<Field, 'dotted'>) => `sort-${field.dotted}`;

export function sortableFields(def: RecordSchemaDef): Field[] {
  return fieldsOf(def).filter((f) => f.sortable);
}

/** Order-preserving text of a value: numbers as the bits of a float64 with the sign handled, text as itself. */
export function encodeSortValue(type: Field['type'], value: string | number | boolean): string {
  switch (type) {
    case 'integer':
    case 'number': {
      const buf = Buffer.alloc(8);
      buf.writeDoubleBE(Number(value) === 0 ? 0 : Number(value));
      if (buf[0] & 0x80) for (let i = 0; i < 8; i++) buf[i] = ~buf[i] & 0xff;
      else buf[0] |= 0x80;
      return buf.toString('hex');
    }
    case 'boolean':
      return value ? '1' : '0';
    case 'timestamp':
      return storedTimestamp(String(value));
    default:
      return String(value);
  }
}

/** The index attributes of a live item's data (stored form): `gp` and one `s:<property>` per sortable value. */
export function sortKeys(fields: Field[], id: string, data: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!fields.length) return {};
  const out: Record<string, unknown> = { [INDEX_PARTITION]: 0 };
  for (const field of fields) {
    let node: unknown = data;
    for (const key of field.path) node = node && typeof node === 'object' ? (node as Record<string, unknown>)[key] : undefined;
    if (field.type === 'link') node = node && typeof node === 'object' ? (node as { id?: unknown }).id : undefined;
    if (node === undefined || node === null) continue;
    out[sortKeyAttribute(field)] = `${encodeSortValue(field.type, node as string | number | boolean)}${SEPARATOR}${id}`;
  }
  return out;
}

/** The encoded value part of an index sort key. */
export const valuePart = (key: string) => key.slice(0, key.lastIndexOf(SEPARATOR));
