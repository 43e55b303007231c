/**
 * The flat field layout of a record schema: every scalar leaf and link of the (possibly nested)
 * property tree, with the path a record uses and the column name a SQL naming strategy gives it.
 */
import type { DatasetConfig, PropertyDef, RecordSchemaDef, ScalarPropertyType } from '../../../model/types.js';

export interface Field {
  /** Property path from the record root, e.g. ['address', 'postcode']. */
  path: string[];
  /** Dotted form, e.g. `address.postcode`; also how raw SQL names it. */
  dotted: string;
  type: ScalarPropertyType | 'link';
  /** For links: the target schema. */
  target?: string;
  /** The property is `sortable`: the location keeps an index for sorts it leads. */
  sortable?: true;
}

/** A dataset's schema by name; own keys only, so "constructor" or "__proto__" is no schema. */
export function schemaDefOf(dataset: DatasetConfig, name: string): RecordSchemaDef | undefined {
  return Object.hasOwn(dataset.schemas, name) ? dataset.schemas[name] : undefined;
}

export function fieldsOf(schema: RecordSchemaDef): Field[] {
  const fields: Field[] = [];
  const walk = (props: Record<string, PropertyDef>, prefix: string[]) => {
    for (const [name, prop] of Object.entries(props)) {
      const path = [...prefix, name];
      if (prop.type === 'object') walk(prop.properties, path);
      else if (prop.type === 'links') continue; // an inverse link is not stored
      else fields.push({ path, dotted: path.join('.'), type: prop.type, ...(prop.type === 'link' ? { target: prop.schema } : {}), ...(prop.sortable ? { sortable: true as const } : {}) });
    }
  };
  walk(schema.properties, []);
  return fields;
}

/** Reads the value at a field's path in nested record data; undefined when absent. */
export function valueAt(data: Record<string, unknown>, field: Field): unknown {
  let node: unknown = data;
  for (const key of field.path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  if (field.type === 'link' && node !== null && node !== undefined) return (node as { id: string }).id;
  return node;
}

/** Sets a value at a path, creating the intermediate objects. */
export function setAt(target: Record<string, unknown>, path: string[], value: unknown): void {
  let node = target;
  const last = path.length - 1;
  for (let i = 0; i < last; i++) {
    const key = path[i];
    if (typeof node[key] !== 'object' || node[key] === null) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[last]] = value;
}

/**
 * True when a field is given in (possibly partial) data: the merge mode of update touches only
 * given leaves, so `{address: {postcode: 'X'}}` leaves `address.street` as it is.
 */
export function isGiven(data: Record<string, unknown>, field: Field): boolean {
  let node: unknown = data;
  for (const key of field.path) {
    if (node === null) return true; // an explicit null on a parent object clears its leaves
    if (typeof node !== 'object' || !(key in (node as object))) return false;
    node = (node as Record<string, unknown>)[key];
  }
  return true;
}
