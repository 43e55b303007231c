/** Validation of record data against a schema's properties, with ajv. */
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { DatasetConfig, PropertyDef, RecordSchemaDef } from '../../../model/types.js';
import { describeAjvError } from '../../../model/validate.js';
import { badRequest } from './errors.js';
import { fieldsOf, type Field } from './layout.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv, formats: string[]) => Ajv;
const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv, ['date', 'date-time']);

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

function propertySchema(prop: PropertyDef): Record<string, unknown> {
  switch (prop.type) {
    case 'string':
      return { type: ['string', 'null'] };
    case 'integer':
      return { type: ['integer', 'null'], minimum: -MAX_SAFE, maximum: MAX_SAFE };
    case 'number':
      return { type: ['number', 'null'] };
    case 'boolean':
      return { type: ['boolean', 'null'] };
    case 'date':
      return { type: ['string', 'null'], format: 'date' };
    case 'timestamp':
      return { type: ['string', 'null'], format: 'date-time' };
    case 'link':
      return {
        type: ['object', 'null'],
        required: ['id'],
        additionalProperties: false,
        properties: { id: { type: 'string', minLength: 1, maxLength: 512 } },
      };
    case 'object':
      return {
        type: ['object', 'null'],
        additionalProperties: false,
        properties: storedProperties(prop.properties),
      };
    case 'links':
      return { not: {} }; // never reached: storedProperties leaves inverse links out
  }
}

/** An inverse link (`links`) is not stored: data that carries it is refused as an unknown property. */
function storedProperties(props: Record<string, PropertyDef>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(props).filter(([, v]) => v.type !== 'links').map(([k, v]) => [k, propertySchema(v)]));
}

export function recordJsonSchema(schema: RecordSchemaDef, full: boolean): Record<string, unknown> {
  const required = full ? schema.required ?? [] : [];
  return {
    type: 'object',
    additionalProperties: false,
    properties: storedProperties(schema.properties),
    required,
    // A required property must not be null either.
    ...(required.length ? { allOf: required.map((name) => ({ properties: { [name]: { not: { type: 'null' } } } })) } : {}),
  };
}

const cache = new WeakMap<RecordSchemaDef, { full: ValidateFunction; partial: ValidateFunction }>();

/**
 * Throws a 400 naming each offending property. `full` (create, replace) also enforces `required`;
 * a merge update checks only what it carries.
 */
export function validateRecordData(
  dataset: DatasetConfig,
  schemaName: string,
  data: Record<string, unknown>,
  full: boolean,
  path: string,
  /** The store's limits (its driver's capabilities) and the record's id: an indexed value over them is refused here, not by the store. */
  limits: { indexedKeyBytes?: number; id?: string } = {},
): void {
  const schema = dataset.schemas[schemaName];
  let validators = cache.get(schema);
  if (!validators) {
    validators = { full: ajv.compile(recordJsonSchema(schema, true)), partial: ajv.compile(recordJsonSchema(schema, false)) };
    cache.set(schema, validators);
  }
  const validate = full ? validators.full : validators.partial;
  if (validate(data)) {
    const nul = hasNul(data) ? nulPath(data, path) : undefined;
    // Valid JSON and valid Unicode, but no store we serve keeps U+0000 in text: refused, never altered.
    if (nul) throw badRequest('INVALID_TEXT', `text values must not contain NUL (U+0000): ${nul}`, [{ path: nul, message: 'contains U+0000' }]);
    if (limits.indexedKeyBytes !== undefined) checkIndexedText(schema, data, path, limits.indexedKeyBytes, limits.id);
    return;
  }
  const details = (validate.errors ?? [])
    .filter((e) => e.keyword !== 'allOf' && e.keyword !== 'not')
    .map((e) => describeAjvError(e, path));
  for (const e of validate.errors ?? []) {
    if (e.keyword === 'not') details.push({ path: describeAjvError(e, path).path, message: 'required property must not be null' });
  }
  const first = details[0];
  throw badRequest('INVALID_RECORD', `invalid ${schemaName} data: ${first ? `${first.path} ${first.message}` : 'does not match the schema'}`, details);
}

/** Whether a text value (at any depth) holds U+0000: nulPath's walk without a path string and an entries array per property, for the common answer no. */
export function hasNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (value && typeof value === 'object') {
    for (const key in value) if (Object.hasOwn(value, key) && hasNul((value as Record<string, unknown>)[key])) return true;
  }
  return false;
}

/** JSON path of the first text value (at any depth, link ids included) holding U+0000. */
export function nulPath(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? path : undefined;
  if (value && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const found = nulPath(item, `${path}.${key}`);
      if (found) return found;
    }
  }
  return undefined;
}

/** The schema's sortable fields, worked out once per schema object (one config generation), not per write. */
const sortable = new WeakMap<RecordSchemaDef, Field[]>();
function sortableFields(schema: RecordSchemaDef): Field[] {
  let fields = sortable.get(schema);
  if (!fields) sortable.set(schema, (fields = fieldsOf(schema).filter((f) => f.sortable)));
  return fields;
}

/**
 * A sortable (indexed) property's text value (a link's id) and the record's id within the store's
 * index limit, or a 400 naming the property and the limit. Without an id yet (a create that gets
 * a UUID), the UUID's 36 bytes are counted.
 */
function checkIndexedText(schema: RecordSchemaDef, data: Record<string, unknown>, path: string, max: number, id: string | undefined): void {
  const idBytes = id === undefined ? 36 : Buffer.byteLength(id);
  for (const field of sortableFields(schema)) {
    let value: unknown = data;
    for (const key of field.path) value = value && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined;
    if (field.type === 'link' && value && typeof value === 'object') value = (value as { id?: unknown }).id;
    if (typeof value !== 'string' || value.length * 3 + idBytes <= max) continue; // at most 3 UTF-8 bytes per UTF-16 unit
    const bytes = Buffer.byteLength(value);
    if (bytes + idBytes > max) {
      const at = `${path}.${field.dotted}`;
      throw badRequest('VALUE_TOO_LARGE', `${at} is sortable (indexed): its value is ${bytes} bytes of UTF-8 and the id ${idBytes}, the store indexes at most ${max} together`, [
        { path: at, message: `at most ${max - idBytes} bytes with this id (indexed property)` },
      ]);
    }
  }
}
