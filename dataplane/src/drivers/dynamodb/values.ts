/**
 * Record data ↔ DynamoDB item values. Data is kept nested under the item's `d` map (links as
 * `{id}`), only the schema's fields, unset values left out. Timestamps are stored in one UTC form
 * with nine fraction digits, so text order is instant order (filters compare them in DynamoDB) and
 * read back without the trailing zeros, as the PostgreSQL driver answers them.
 */
import { fieldsOf, setAt, type Field } from '../../engine/layout.js';
import type { RecordSchemaDef } from '../../../../model/types.js';

const TIMESTAMP = /^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$/;

/** `2024-01-01T10:00:00.5+02:00` → `2024-01-01T08:00:00.500000000Z`; other text unchanged. */
export function storedTimestamp(value: string): string {
  const m = TIMESTAMP.exec(value);
  if (!m) return value;
  const ms = Date.parse(`${m[1]}T${m[2]}${m[4].toUpperCase()}`);
  if (Number.isNaN(ms)) return value;
  return `${new Date(ms).toISOString().slice(0, 19)}.${(m[3] ?? '').padEnd(9, '0')}Z`;
}

/** The stored form as records show it: `…T08:00:00.5Z`, `…T08:00:00Z`. */
export function shownTimestamp(value: string): string {
  const m = /^(.*?)\.(\d+)Z$/.exec(value);
  if (!m) return value;
  const fraction = m[2].replace(/0+$/, '');
  return fraction ? `${m[1]}.${fraction}Z` : `${m[1]}Z`;
}

/** Whether `data` names the field (null counts: it unsets the property), as PostgreSQL's merge reads it. */
function isGiven(data: Record<string, unknown>, field: Field): boolean {
  let node: unknown = data;
  for (const key of field.path) {
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, key)) return false;
    node = (node as Record<string, unknown>)[key];
  }
  return true;
}

function rawAt(data: Record<string, unknown>, field: Field): unknown {
  let node: unknown = data;
  for (const key of field.path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  if (field.type === 'link' && node !== null && typeof node === 'object') return (node as { id?: unknown }).id;
  return node;
}

/**
 * The stored data of a write: every field of the schema from `data` (replace), or from `data`
 * where it names the field and from `previous` elsewhere (merge). Unset values are left out.
 */
export function storedData(schema: RecordSchemaDef, data: Record<string, unknown>, previous?: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of fieldsOf(schema)) {
    const source = previous && !isGiven(data, field) ? previous : data;
    let value = rawAt(source, field);
    if (value === null || value === undefined) continue;
    if (field.type === 'timestamp' && typeof value === 'string' && source === data) value = storedTimestamp(value);
    setAt(out, field.path, field.type === 'link' ? { id: value } : value);
  }
  return out;
}

/** Stored data as a record shows it (timestamps without the padding). */
export function shownData(schema: RecordSchemaDef, stored: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!stored) return out;
  for (const field of fieldsOf(schema)) {
    const value = rawAt(stored, field);
    if (value === null || value === undefined) continue;
    setAt(out, field.path, field.type === 'link' ? { id: value } : field.type === 'timestamp' && typeof value === 'string' ? shownTimestamp(value) : value);
  }
  return out;
}

/** DynamoDB's size of an item (attribute names and values, UTF-8), as its 400 KB limit counts it. */
export function itemSize(item: Record<string, unknown>): number {
  let size = 0;
  for (const [name, value] of Object.entries(item)) size += Buffer.byteLength(name) + valueSize(value);
  return size;
}

function valueSize(value: unknown): number {
  if (value === null || value === undefined || typeof value === 'boolean') return 1;
  if (typeof value === 'string') return Buffer.byteLength(value);
  if (typeof value === 'number') return Math.ceil(String(Math.abs(value)).replace(/[.e+-]/g, '').length / 2) + 1;
  if (Array.isArray(value)) return 3 + value.reduce((n: number, v) => n + 1 + valueSize(v), 0);
  if (typeof value === 'object') return 3 + Object.entries(value).reduce((n, [k, v]) => n + 1 + Buffer.byteLength(k) + valueSize(v), 0);
  return 0;
}

/** DynamoDB's item limit. */
export const MAX_ITEM_BYTES = 400 * 1024;

/** DynamoDB's number range: magnitudes from 1E-130 to 9.99…E+125 (and 0). */
const MAX_NUMBER = 9.9999999999999999e125;
const MIN_NUMBER = 1e-130;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Why stored data cannot go into DynamoDB as it is, or undefined: a number outside its range, or
 * text that is not well-formed UTF-16 (a lone surrogate has no UTF-8 form).
 */
export function unstorable(value: unknown): { reason: 'range' | 'text'; detail: string } | undefined {
  if (typeof value === 'number') {
    const magnitude = Math.abs(value);
    if (magnitude !== 0 && (magnitude > MAX_NUMBER || magnitude < MIN_NUMBER)) return { reason: 'range', detail: `${value} is outside DynamoDB's number range (1E-130 to 9.99E+125)` };
    return undefined;
  }
  if (typeof value === 'string') return LONE_SURROGATE.test(value) ? { reason: 'text', detail: 'a text value holds a lone UTF-16 surrogate' } : undefined;
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) {
      const problem = unstorable(v);
      if (problem) return problem;
    }
  }
  return undefined;
}
