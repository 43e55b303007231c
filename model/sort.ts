/**
 * Sort strings of list, link and query: the spec's rules 1–5, several keys separated by commas.
 *
 *   sort := key ("," key)*
 *   key  := path [":asc" | ":desc"] [":nulls-first" | ":nulls-last" | ":first" | ":last"]
 *
 * 1. A field name, optionally `:asc` / `:desc`, optionally `:nulls-first` / `:nulls-last`.
 * 2. No direction: ascending.
 * 3. No nulls order: nulls last ascending, first descending (nulls sort as if above every value).
 * 4. `:first` / `:last` are accepted shorthands of `:nulls-first` / `:nulls-last`.
 * 5. Ascending is binary order: numbers, then A–Z, then a–z (text by code point), then nulls;
 *    descending is the reverse.
 * The id always breaks ties: it is appended as the last key unless a key already names it.
 * Errors are FilterErrors with the 1-based position of the offending part.
 */
import { compareTyped, fieldValue, FilterError, ID_FIELD, resolveField, type FieldRef, type RecordValues } from './filter.js';
import type { RecordSchemaDef } from './types.js';

export type Direction = 'asc' | 'desc';
export type NullsPlacement = 'first' | 'last';

export interface SortSpec {
  names: string[];
  direction: Direction;
  nulls: NullsPlacement;
  pos: number;
}

export interface SortKey {
  field: FieldRef;
  direction: Direction;
  nulls: NullsPlacement;
}

export const MAX_SORT_KEYS = 8;
const PATH = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;

/** Rule 3: the default nulls placement of a direction. */
export const defaultNulls = (direction: Direction): NullsPlacement => (direction === 'asc' ? 'last' : 'first');

/** Parses a sort string into its keys (syntax only). */
export function parseSort(text: string): SortSpec[] {
  if (text.trim() === '') throw new FilterError('the sort is empty', 1);
  const keys: SortSpec[] = [];
  let offset = 0;
  for (const part of text.split(',')) {
    const pos = offset + 1 + (part.length - part.trimStart().length);
    offset += part.length + 1;
    const trimmed = part.trim();
    if (!trimmed) throw new FilterError('a sort key is empty (two commas, or a comma at an end)', pos);
    if (keys.length === MAX_SORT_KEYS) throw new FilterError(`a sort has at most ${MAX_SORT_KEYS} keys`, pos);
    const [path, ...modifiers] = trimmed.split(':');
    if (!PATH.test(path)) throw new FilterError(`"${path}" is not a property name (letters, digits, "_", "." between names)`, pos);
    let direction: Direction | undefined;
    let nulls: NullsPlacement | undefined;
    let at = pos + path.length;
    for (const raw of modifiers) {
      const modifier = raw.toLowerCase();
      const where = at + 1;
      at += raw.length + 1;
      if (modifier === 'asc' || modifier === 'desc') {
        if (direction) throw new FilterError(`direction given twice ("${raw}")`, where);
        if (nulls) throw new FilterError(`the direction comes before the nulls order ("${path}:${raw}:…")`, where);
        direction = modifier;
      } else if (['nulls-first', 'nulls-last', 'first', 'last'].includes(modifier)) {
        if (nulls) throw new FilterError(`nulls order given twice ("${raw}")`, where);
        nulls = modifier.endsWith('first') ? 'first' : 'last';
      } else {
        throw new FilterError(`unknown sort modifier ":${raw}" (use :asc, :desc, :nulls-first or :nulls-last)`, where);
      }
    }
    const dir = direction ?? 'asc';
    keys.push({ names: path.split('.'), direction: dir, nulls: nulls ?? defaultNulls(dir), pos });
  }
  return keys;
}

/** Resolves the keys against a schema and appends the id as the tie-breaker. */
export function typeSort(specs: SortSpec[], schema: RecordSchemaDef): SortKey[] {
  const keys: SortKey[] = [];
  const seen = new Set<string>();
  for (const spec of specs) {
    const field = resolveField(schema, spec.names, spec.pos, 'sort');
    if (seen.has(field.dotted)) throw new FilterError(`"${field.dotted}" is sorted on twice`, spec.pos);
    seen.add(field.dotted);
    keys.push({ field, direction: spec.direction, nulls: spec.nulls });
    if (field.system === 'id') return keys; // the id is unique: later keys could never decide anything
  }
  keys.push({ field: ID_FIELD, direction: 'asc', nulls: 'last' });
  return keys;
}

/** The sort of a request: its text parsed and typed; no text gives the order by id. */
export function compileSort(text: string | undefined, schema: RecordSchemaDef): SortKey[] {
  return typeSort(text === undefined ? [] : parseSort(text), schema);
}

/** The canonical text of typed keys (page tokens bind it; equal sorts give equal text). */
export function sortText(keys: SortKey[]): string {
  return keys.map((k) => `${k.field.dotted}:${k.direction}:nulls-${k.nulls}`).join(',');
}

/**
 * Binary order of two values of one field, nulls excluded: numbers numerically, text by code
 * point (what PostgreSQL's COLLATE "C" does on UTF-8), booleans false before true.
 */
export function compareValues(a: string | number | boolean, b: string | number | boolean): number {
  return compareTyped(typeof a === 'number' ? 'number' : typeof a === 'boolean' ? 'boolean' : 'string', a, b);
}

/** Compares two (possibly null) values under a key: the reference order of rules 3 and 5. */
export function compareUnder(key: Pick<SortKey, 'direction' | 'nulls'> & { field?: FieldRef }, a: unknown, b: unknown): number {
  const aNull = a === null || a === undefined;
  const bNull = b === null || b === undefined;
  if (aNull || bNull) {
    if (aNull && bNull) return 0;
    return (aNull ? -1 : 1) * (key.nulls === 'first' ? 1 : -1);
  }
  const [x, y] = [a as string | number | boolean, b as string | number | boolean];
  const c = key.field ? compareTyped(key.field.type, x, y) : compareValues(x, y);
  return key.direction === 'asc' ? c : -c;
}

/** Orders two records under sort keys (the id last, so never 0 for two records): the reference order. */
export function compareRecords(keys: SortKey[], a: RecordValues, b: RecordValues): number {
  for (const key of keys) {
    const c = compareUnder(key, fieldValue(a, key.field), fieldValue(b, key.field));
    if (c !== 0) return c;
  }
  return 0;
}
