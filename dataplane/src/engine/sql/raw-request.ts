/**
 * Parses and checks the body of `POST /{datasetId}/raw-query`: `{sql, using?, arguments?}`. Every
 * problem is a 400 ApiError naming the JSON path of the offending input; the first problem found
 * (in the order body, sql, using, arguments) is reported.
 */
import type { DatasetConfig } from '../../../../model/types.js';
import { badRequest } from '../errors.js';
import { encodeArgument, scalarType, SCALAR_TYPE_NAMES, type ScalarType } from './scalar-types.js';

/** Alias and argument names, and each segment of a property path, in tokens and in the body. */
export const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface RawArgument {
  name: string;
  type: ScalarType;
  /** The text bound for the value; null binds SQL NULL. */
  param: string | null;
}

export interface RawSqlRequest {
  sql: string;
  /** Alias → fully qualified schema name (checked to exist in the dataset). */
  using: Map<string, string>;
  arguments: Map<string, RawArgument>;
}

const BODY_KEYS = ['sql', 'using', 'arguments'];

/**
 * Longest accepted SQL text, in characters (UTF-16 code units). PostgreSQL parses the whole text
 * before the statement timeout can act, so the text's size bounds the time spent there.
 */
export const MAX_SQL_LENGTH = 100_000;
const ARGUMENT_KEYS = ['value', 'type'];

/** `$.using.p`, or `$.using["odd key"]` when the key is not an identifier. */
export function member(base: string, key: string): string {
  return IDENTIFIER.test(key) ? `${base}.${key}` : `${base}[${JSON.stringify(key)}]`;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const has = (object: object, key: string) => Object.prototype.hasOwnProperty.call(object, key);
const fail = (code: string, path: string, message: string, detail = message) => badRequest(code, message, [{ path, message: detail }]);

export function parseRawSqlRequest(body: unknown, dataset: DatasetConfig): RawSqlRequest {
  if (!isObject(body)) throw fail('INVALID_BODY', '$', 'the body must be a JSON object {"sql": …, "using": …, "arguments": …}', 'not an object');
  for (const key of Object.keys(body)) {
    if (!BODY_KEYS.includes(key)) throw fail('UNKNOWN_FIELD', member('$', key), `the raw query body has no field ${JSON.stringify(key)}; allowed: ${BODY_KEYS.join(', ')}`, 'unknown field');
  }
  return { sql: parseSql(body.sql), using: parseUsing(body.using, dataset), arguments: parseArguments(body.arguments) };
}

function parseSql(sql: unknown): string {
  if (sql === undefined || sql === null) throw fail('SQL_REQUIRED', '$.sql', '"sql" is required', 'required');
  if (typeof sql !== 'string') throw fail('INVALID_BODY', '$.sql', '"sql" must be a string of SQL text', 'not a string');
  if (sql.length > MAX_SQL_LENGTH) {
    throw fail('SQL_TOO_LONG', '$.sql', `"sql" is ${sql.length} characters long; at most ${MAX_SQL_LENGTH} are accepted`, `longer than ${MAX_SQL_LENGTH} characters`);
  }
  if (sql.trim() === '') throw fail('SQL_REQUIRED', '$.sql', '"sql" must not be blank', 'blank');
  // PostgreSQL's protocol cannot carry it (the server would answer "invalid message format").
  if (sql.includes('\u0000')) throw fail('INVALID_SQL', '$.sql', '"sql" must not contain NUL (U+0000) characters', 'contains U+0000');
  return sql;
}

function parseUsing(using: unknown, dataset: DatasetConfig): Map<string, string> {
  const aliases = new Map<string, string>();
  if (using === undefined || using === null) return aliases;
  if (!isObject(using)) throw fail('INVALID_USING', '$.using', '"using" must be an object mapping alias names to schema names', 'not an object');
  for (const [alias, schema] of Object.entries(using)) {
    const path = member('$.using', alias);
    if (!IDENTIFIER.test(alias)) throw fail('INVALID_USING', path, `alias ${JSON.stringify(alias)} is not a name of letters, digits and _ (not starting with a digit)`, 'invalid alias name');
    if (typeof schema !== 'string') throw fail('INVALID_USING', path, `alias "${alias}" must map to a schema name (a string)`, 'not a string');
    if (!has(dataset.schemas, schema)) {
      const known = Object.keys(dataset.schemas);
      throw fail('UNKNOWN_SCHEMA', path, `dataset "${dataset.id}" has no schema ${JSON.stringify(schema)}${known.length ? `; its schemas: ${known.join(', ')}` : ''}`, 'unknown schema');
    }
    aliases.set(alias, schema);
  }
  return aliases;
}

function parseArguments(args: unknown): Map<string, RawArgument> {
  const parsed = new Map<string, RawArgument>();
  if (args === undefined || args === null) return parsed;
  if (!isObject(args)) throw fail('INVALID_ARGUMENTS', '$.arguments', '"arguments" must be an object mapping argument names to {"value": …, "type": …}', 'not an object');
  for (const [name, arg] of Object.entries(args)) {
    const path = member('$.arguments', name);
    if (!IDENTIFIER.test(name)) throw fail('INVALID_ARGUMENTS', path, `argument name ${JSON.stringify(name)} is not a name of letters, digits and _ (not starting with a digit)`, 'invalid argument name');
    if (!isObject(arg)) throw fail('INVALID_ARGUMENTS', path, `argument "${name}" must be an object {"value": …, "type": …}`, 'not an object');
    for (const key of Object.keys(arg)) {
      if (!ARGUMENT_KEYS.includes(key)) throw fail('UNKNOWN_FIELD', member(path, key), `argument "${name}" has no field ${JSON.stringify(key)}; allowed: value, type`, 'unknown field');
    }
    const typeName = arg.type;
    if (typeof typeName !== 'string' || !scalarType(typeName)) {
      const why = typeName === undefined ? 'is required' : typeof typeName !== 'string' ? 'must be a string' : `${JSON.stringify(typeName)} is not a recognised type`;
      throw fail('INVALID_ARGUMENT_TYPE', `${path}.type`, `the type of argument "${name}" ${why}; recognised types: ${SCALAR_TYPE_NAMES.join(', ')}`, why);
    }
    const type = scalarType(typeName)!;
    if (!has(arg, 'value')) throw fail('INVALID_ARGUMENT_VALUE', `${path}.value`, `argument "${name}" needs a "value" (null binds SQL NULL)`, 'required');
    const encoded = encodeArgument(type, arg.value);
    if (!encoded.ok) throw fail('INVALID_ARGUMENT_VALUE', `${path}.value`, `argument "${name}" of type ${typeName}: ${encoded.reason}; expected ${type.expects}`, encoded.reason);
    parsed.set(name, { name, type, param: encoded.param });
  }
  return parsed;
}
