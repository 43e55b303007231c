/**
 * TEST PEER ONLY. Snowflake SQL → PostgreSQL SQL, for the Snowflake test peer. Pure: no I/O.
 *
 * Names: Snowflake folds unquoted identifiers to upper case, PostgreSQL to lower case. The peer
 * stores Snowflake name N as PostgreSQL name swapCase(N): an unquoted identifier passes through
 * (both sides fold it, to FOO and foo), a quoted one is case-swapped ("Mixed" → "mIXED"), and
 * result column names are swapped back (results.ts). Type names map to PostgreSQL types, or to
 * domains in the per-database `sf_peer` schema where Snowflake tells types apart that PostgreSQL
 * does not (VARIANT/OBJECT/ARRAY over jsonb, TIMESTAMP_LTZ/TZ over timestamptz), so that
 * INFORMATION_SCHEMA and result metadata can answer with the Snowflake type.
 *
 * What Snowflake refuses is refused here with Snowflake's error (RETURNING, ON CONFLICT,
 * FOR UPDATE/SHARE, $1 placeholders, PostgreSQL-only type names, DISTINCT ON, several
 * statements in one request), so a client cannot lean on the PostgreSQL behind the peer.
 */
import { SnowflakeSqlError, swapCase } from './errors.js';
import { lex, syntaxError, type Token } from './lexer.js';
import { parseCopy, parsePut, type CopyStatement, type PutStatement } from './stage-sql.js';

export interface TranslateContext {
  /** Current Snowflake database, schema, warehouse and role names (as stored: folded). */
  database: string;
  schema: string;
  warehouse: string;
  role: string;
}

export type Category = 'select' | 'insert' | 'update' | 'delete' | 'merge' | 'ddl';
export type MergeKind = 'inserted' | 'updated' | 'deleted';

export interface IcebergSettings {
  externalVolume?: string;
  catalog?: string;
  baseLocation?: string;
}

export type Translated =
  | {
      kind: 'sql';
      category: Category;
      sql: string;
      /** Number of bind parameters ($1…$N) the PostgreSQL text uses. */
      paramCount: number;
      /** MERGE: the clause kinds present, in Snowflake's result column order. */
      mergeKinds?: MergeKind[];
      /** DDL: Snowflake's status line. */
      status?: string;
      /** CREATE OR REPLACE TABLE: the table (PostgreSQL name) to drop first. */
      replaceTable?: string;
      /** TRUNCATE TABLE IF EXISTS (PostgreSQL has no IF EXISTS there): a missing table is success. */
      ignoreMissingTable?: boolean;
      /** CREATE ICEBERG TABLE: the table (schema may be absent) and its settings. */
      iceberg?: { schema?: string; table: string; settings: IcebergSettings };
      /** UPDATE/DELETE/MERGE: the target table as a PostgreSQL name (the peer locks it: see sessions.ts). */
      target?: string;
    }
  | { kind: 'begin' | 'commit' | 'rollback' }
  | { kind: 'use'; object: 'WAREHOUSE' | 'ROLE' | 'SCHEMA' | 'DATABASE'; name: string; database?: string }
  | { kind: 'alterSession'; set: Record<string, string>; unset: string[] }
  | PutStatement
  | CopyStatement;

/** The schema each peer database holds its domains, helper functions and INFORMATION_SCHEMA views in. */
export const PEER_SCHEMA = 'sf_peer';

/** Folds a Snowflake identifier as Snowflake does: unquoted → upper case, "quoted" → as written. */
export function foldName(name: string): string {
  const t = name.trim();
  if (t.length >= 2 && t.startsWith('"') && t.endsWith('"')) return t.slice(1, -1).replace(/""/g, '"');
  return t.toUpperCase();
}

/** A stored (folded) Snowflake name as a PostgreSQL identifier. */
export function pgIdent(storedName: string): string {
  return `"${swapCase(storedName).replace(/"/g, '""')}"`;
}

function pgLiteral(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

const isName = (t: Token | undefined): t is Token => !!t && (t.kind === 'ident' || t.kind === 'qident');
const is = (t: Token | undefined, ...uppers: string[]): boolean => !!t && t.kind === 'ident' && uppers.includes(t.upper);
const isPunct = (t: Token | undefined, p: string): boolean => !!t && t.kind === 'punct' && t.text === p;
const folded = (t: Token): string => (t.kind === 'qident' ? t.text : t.text.toUpperCase());

// --- types ---------------------------------------------------------------------------------

const PG_ONLY_TYPES = new Set([
  'JSONB', 'JSON', 'SERIAL', 'BIGSERIAL', 'SMALLSERIAL', 'SERIAL4', 'SERIAL8', 'INT2', 'INT4', 'INT8', 'BYTEA', 'UUID',
  'TIMESTAMPTZ_PG', 'INTERVAL', 'MONEY', 'CIDR', 'INET', 'MACADDR', 'TSVECTOR', 'TSQUERY', 'XML', 'HSTORE', 'OID',
  'REGCLASS', 'BPCHAR', 'CITEXT', 'INT4RANGE', 'TSRANGE', 'POINT',
]);

function intArg(tokens: Token[], j: number): number | undefined {
  return tokens[j]?.kind === 'number' && /^[0-9]+$/.test(tokens[j].text) ? Number(tokens[j].text) : undefined;
}

/** Parses a Snowflake type name at tokens[j]; returns its PostgreSQL spelling and the next index. */
export function parseType(sql: string, tokens: Token[], j: number): { pg: string; next: number } {
  const t = tokens[j];
  if (!t) throw syntaxError(sql, sql.length, '<EOF>');
  if (t.kind !== 'ident') throw syntaxError(sql, t.pos, t.text);
  const name = t.upper;
  let k = j + 1;
  // Optional (a[, b]) arguments.
  const args: number[] = [];
  const readArgs = () => {
    if (!isPunct(tokens[k], '(')) return;
    k++;
    while (!isPunct(tokens[k], ')')) {
      const v = intArg(tokens, k);
      if (v === undefined) throw syntaxError(sql, tokens[k]?.pos ?? sql.length, tokens[k]?.text ?? '<EOF>');
      args.push(v);
      k++;
      if (isPunct(tokens[k], ',')) k++;
    }
    k++;
  };
  let pg: string;
  switch (name) {
    case 'NUMBER':
    case 'NUMERIC':
    case 'DECIMAL':
    case 'DEC':
      readArgs();
      pg = `numeric(${args[0] ?? 38},${args[1] ?? 0})`;
      break;
    case 'INT':
    case 'INTEGER':
    case 'BIGINT':
    case 'SMALLINT':
    case 'TINYINT':
    case 'BYTEINT':
      pg = 'numeric(38,0)';
      break;
    case 'FLOAT':
    case 'FLOAT4':
    case 'FLOAT8':
    case 'REAL':
      pg = 'double precision';
      break;
    case 'DOUBLE':
      if (is(tokens[k], 'PRECISION')) k++;
      pg = 'double precision';
      break;
    case 'VARCHAR':
    case 'CHAR':
    case 'CHARACTER':
    case 'NCHAR':
    case 'NVARCHAR':
    case 'NVARCHAR2':
    case 'CHAR_VARYING':
    case 'NCHAR_VARYING':
      if (is(tokens[k], 'VARYING')) k++;
      readArgs();
      pg = args[0] !== undefined ? `varchar(${args[0]})` : name === 'CHAR' || name === 'CHARACTER' || name === 'NCHAR' ? 'varchar(1)' : 'text';
      break;
    case 'STRING':
    case 'TEXT':
      readArgs();
      pg = args[0] !== undefined ? `varchar(${args[0]})` : 'text';
      break;
    case 'BOOLEAN':
      pg = 'boolean';
      break;
    case 'DATE':
      pg = 'date';
      break;
    case 'TIME':
      readArgs();
      pg = 'time';
      break;
    case 'DATETIME':
    case 'TIMESTAMP':
    case 'TIMESTAMP_NTZ':
    case 'TIMESTAMPNTZ':
    case 'TIMESTAMPWITHOUTTIMEZONE':
      readArgs();
      pg = 'timestamp';
      break;
    case 'TIMESTAMP_LTZ':
    case 'TIMESTAMPLTZ':
      readArgs();
      pg = `${PEER_SCHEMA}.timestamp_ltz`;
      break;
    case 'TIMESTAMP_TZ':
    case 'TIMESTAMPTZ':
      readArgs();
      pg = `${PEER_SCHEMA}.timestamp_tz`;
      break;
    case 'VARIANT':
      pg = `${PEER_SCHEMA}.variant`;
      break;
    case 'OBJECT':
      pg = `${PEER_SCHEMA}.object`;
      break;
    case 'ARRAY':
      pg = `${PEER_SCHEMA}."array"`;
      break;
    case 'BINARY':
    case 'VARBINARY':
      readArgs();
      pg = 'bytea';
      break;
    default:
      throw SnowflakeSqlError.unsupportedType(PG_ONLY_TYPES.has(name) ? name : t.text.toUpperCase());
  }
  // PostgreSQL array types (text[]) do not exist in Snowflake.
  if (isPunct(tokens[k], '[')) throw syntaxError(sql, tokens[k].pos, '[');
  return { pg, next: k };
}

// --- statements ----------------------------------------------------------------------------

/** Splits a request into statements at top-level semicolons (empty statements dropped). */
function splitStatements(tokens: Token[]): Token[][] {
  const out: Token[][] = [[]];
  for (const t of tokens) {
    if (isPunct(t, ';')) out.push([]);
    else out[out.length - 1].push(t);
  }
  return out.filter((s) => s.length > 0);
}

/** Refuses what Snowflake refuses, so the client cannot lean on PostgreSQL behaviour. */
function refusePostgresOnly(sql: string, tokens: Token[]): void {
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    const next = tokens[i + 1];
    if (t.kind === 'pgparam') throw syntaxError(sql, t.pos, t.text);
    if (is(t, 'RETURNING')) throw syntaxError(sql, t.pos, t.text);
    if (is(t, 'ON') && is(next, 'CONFLICT')) throw syntaxError(sql, next!.pos, next!.text);
    if (is(t, 'FOR') && is(next, 'UPDATE', 'SHARE', 'NO', 'KEY')) throw syntaxError(sql, t.pos, t.text);
    if (is(t, 'DISTINCT') && is(next, 'ON')) throw syntaxError(sql, next!.pos, next!.text);
    if (is(t, 'E') && next?.kind === 'string' && next.pos === t.pos + 1) throw syntaxError(sql, t.pos, t.text);
  }
}

const NOT_AN_ALIAS = new Set([
  'WHERE', 'GROUP', 'ORDER', 'LIMIT', 'UNION', 'EXCEPT', 'INTERSECT', 'MINUS', 'JOIN', 'LEFT', 'RIGHT', 'INNER', 'FULL',
  'CROSS', 'NATURAL', 'ON', 'HAVING', 'QUALIFY', 'WINDOW', 'OFFSET', 'FETCH', 'WHEN', 'THEN', 'USING', 'SET', 'LATERAL',
]);

/** For `FROM VALUES (…), (…)`: the index after the last tuple and the first tuple's column count. */
function scanValues(sql: string, tokens: Token[], valuesIndex: number): { end: number; columns: number } {
  let k = valuesIndex + 1;
  let columns = 0;
  for (let tuple = 0; ; tuple++) {
    if (!isPunct(tokens[k], '(')) throw syntaxError(sql, tokens[k]?.pos ?? sql.length, tokens[k]?.text ?? '<EOF>');
    let depth = 0;
    let commas = 0;
    for (; k < tokens.length; k++) {
      if (isPunct(tokens[k], '(')) depth++;
      else if (isPunct(tokens[k], ')')) {
        depth--;
        if (depth === 0) break;
      } else if (isPunct(tokens[k], ',') && depth === 1) commas++;
    }
    if (depth !== 0) throw syntaxError(sql, sql.length, '<EOF>');
    if (tuple === 0) columns = commas + 1;
    k++;
    if (!isPunct(tokens[k], ',') || !isPunct(tokens[k + 1], '(')) return { end: k, columns };
    k++;
  }
}

function objectNameAt(tokens: Token[], j: number): { parts: string[]; next: number } {
  const parts: string[] = [];
  let k = j;
  while (isName(tokens[k])) {
    parts.push(folded(tokens[k]));
    k++;
    if (isPunct(tokens[k], '.')) k++;
    else break;
  }
  return { parts, next: k };
}

function settingValue(t: Token | undefined): string {
  if (!t) return '';
  return t.kind === 'ident' ? t.upper : t.text;
}

function translateAlterSession(sql: string, tokens: Token[]): Translated {
  const set: Record<string, string> = {};
  const unset: string[] = [];
  let k = 2;
  if (is(tokens[k], 'SET')) {
    k++;
    while (k < tokens.length) {
      if (!isName(tokens[k]) || !(tokens[k + 1]?.kind === 'op' && tokens[k + 1].text === '=')) throw syntaxError(sql, tokens[k]?.pos ?? sql.length, tokens[k]?.text ?? '<EOF>');
      set[folded(tokens[k])] = settingValue(tokens[k + 2]);
      k += 3;
      if (isPunct(tokens[k], ',')) k++;
    }
  } else if (is(tokens[k], 'UNSET')) {
    k++;
    while (k < tokens.length) {
      if (!isName(tokens[k])) throw syntaxError(sql, tokens[k].pos, tokens[k].text);
      unset.push(folded(tokens[k]));
      k++;
      if (isPunct(tokens[k], ',')) k++;
    }
  } else throw syntaxError(sql, tokens[k]?.pos ?? sql.length, tokens[k]?.text ?? '<EOF>');
  if (Object.keys(set).length === 0 && unset.length === 0) throw syntaxError(sql, sql.length, '<EOF>');
  return { kind: 'alterSession', set, unset };
}

function translateUse(sql: string, tokens: Token[]): Translated {
  let k = 1;
  type UseObject = 'WAREHOUSE' | 'ROLE' | 'SCHEMA' | 'DATABASE';
  const object: UseObject = is(tokens[k], 'WAREHOUSE', 'ROLE', 'SCHEMA', 'DATABASE') ? (tokens[k++].upper as UseObject) : 'DATABASE';
  const { parts, next } = objectNameAt(tokens, k);
  if (parts.length === 0 || next !== tokens.length) throw syntaxError(sql, tokens[next]?.pos ?? sql.length, tokens[next]?.text ?? '<EOF>');
  if (object === 'SCHEMA' && parts.length === 2) return { kind: 'use', object, database: parts[0], name: parts[1] };
  if (parts.length !== 1) throw syntaxError(sql, tokens[k].pos, tokens[k].text);
  return { kind: 'use', object, name: parts[0] };
}

function transactionKind(tokens: Token[]): 'begin' | 'commit' | 'rollback' | undefined {
  const [a, b] = tokens;
  if (is(a, 'BEGIN') && (tokens.length === 1 || (tokens.length === 2 && is(b, 'TRANSACTION', 'WORK')))) return 'begin';
  if (is(a, 'START') && is(b, 'TRANSACTION') && tokens.length === 2) return 'begin';
  if (is(a, 'COMMIT') && (tokens.length === 1 || (tokens.length === 2 && is(b, 'WORK', 'TRANSACTION')))) return 'commit';
  if (is(a, 'ROLLBACK') && (tokens.length === 1 || (tokens.length === 2 && is(b, 'WORK', 'TRANSACTION')))) return 'rollback';
  return undefined;
}

/** Translates one Snowflake request (which must hold exactly one statement). */
export function translate(sql: string, context: TranslateContext): Translated {
  const all = lex(sql);
  const statements = splitStatements(all);
  if (statements.length === 0) throw new SnowflakeSqlError('000900', '42601', 'Empty SQL statement.');
  if (statements.length > 1) throw SnowflakeSqlError.statementCount(statements.length);
  const tokens = statements[0];
  refusePostgresOnly(sql, tokens);
  const first = tokens[0];
  if (first.kind !== 'ident') throw syntaxError(sql, first.pos, first.text);
  const txn = transactionKind(tokens);
  if (txn) return { kind: txn };
  switch (first.upper) {
    case 'USE':
      return translateUse(sql, tokens);
    case 'ALTER':
      if (is(tokens[1], 'SESSION')) return translateAlterSession(sql, tokens);
      return translateStatement(sql, tokens, context, 'ddl');
    case 'SELECT':
    case 'WITH':
      return translateStatement(sql, tokens, context, 'select');
    case 'INSERT':
      return translateStatement(sql, tokens, context, 'insert');
    case 'UPDATE':
      return translateStatement(sql, tokens, context, 'update');
    case 'DELETE':
      return translateStatement(sql, tokens, context, 'delete');
    case 'MERGE':
      return translateStatement(sql, tokens, context, 'merge');
    case 'CREATE':
    case 'DROP':
      if (is(tokens[1], 'DATABASE') || (is(tokens[1], 'OR') && is(tokens[3], 'DATABASE'))) {
        throw SnowflakeSqlError.unsupported('CREATE/DROP DATABASE (databases are created on first use at login)');
      }
      return translateStatement(sql, tokens, context, 'ddl');
    case 'TRUNCATE': {
      const ifAt = is(tokens[1], 'TABLE') ? 2 : 1;
      if (is(tokens[ifAt], 'IF') && is(tokens[ifAt + 1], 'EXISTS')) {
        const t = translateStatement(sql, [...tokens.slice(0, ifAt), ...tokens.slice(ifAt + 2)], context, 'ddl');
        return { ...t, ignoreMissingTable: true } as Translated;
      }
      return translateStatement(sql, tokens, context, 'ddl');
    }
    case 'SHOW':
    case 'DESCRIBE':
    case 'DESC':
    case 'EXPLAIN':
    case 'PUT':
      return parsePut(sql, tokens);
    case 'COPY':
      return parseCopy(sql, tokens);
    case 'CALL':
    case 'GET':
    case 'GRANT':
    case 'REVOKE':
      throw SnowflakeSqlError.unsupported(first.upper);
    default:
      throw syntaxError(sql, first.pos, first.text);
  }
}

interface Paren {
  kind: 'plain' | 'cast' | 'coldefs' | 'function';
  /** A rewritten function call: what its closing parenthesis becomes, and its top-level commas. */
  close?: string;
  commas?: string[];
}

/**
 * Snowflake functions with a PostgreSQL spelling: what the name and its opening parenthesis
 * become, what its closing one becomes, and (IFF) what its commas become. `args` limits a rewrite
 * to one arity (TO_VARCHAR(x) only: with a format the two dialects' formats differ).
 */
const FUNCTION_REWRITES: Record<string, { open: string; close: string; commas?: string[]; args?: number }> = {
  PARSE_JSON: { open: '(', close: ')::jsonb' },
  NVL: { open: 'COALESCE(', close: ')' },
  IFNULL: { open: 'COALESCE(', close: ')' },
  ZEROIFNULL: { open: 'COALESCE(', close: ', 0)' },
  IFF: { open: '(CASE WHEN', close: 'END)', commas: ['THEN', 'ELSE'], args: 3 },
  TO_VARCHAR: { open: '(', close: ')::text', args: 1 },
  TO_CHAR: { open: '(', close: ')::text', args: 1 },
  ARRAY_SIZE: { open: 'jsonb_array_length(', close: ')' },
  ARRAY_CONSTRUCT: { open: 'jsonb_build_array(', close: ')' },
  OBJECT_CONSTRUCT: { open: 'jsonb_strip_nulls(jsonb_build_object(', close: '))' },
};

/** The number of top-level arguments of the call whose '(' is tokens[open]. */
function argumentCount(tokens: Token[], open: number): number {
  let depth = 0;
  let args = 0;
  for (let k = open; k < tokens.length; k++) {
    if (isPunct(tokens[k], '(')) depth++;
    else if (isPunct(tokens[k], ')')) {
      depth--;
      if (depth === 0) return k === open + 1 ? 0 : args + 1;
    } else if (isPunct(tokens[k], ',') && depth === 1) args++;
  }
  return args + 1;
}

/**
 * A VARIANT path after a column (`DOC:a.b[0]`, `DOC['k']`): its keys (as written: Snowflake path
 * keys are case-sensitive) and the index after it; undefined when tokens[j] starts none.
 */
function variantPath(tokens: Token[], j: number): { keys: string[]; next: number } | undefined {
  const keys: string[] = [];
  let k = j;
  if (tokens[k]?.kind === 'op' && tokens[k].text === ':' && isName(tokens[k + 1])) {
    keys.push(tokens[k + 1].text);
    k += 2;
  } else if (!isPunct(tokens[k], '[')) return undefined;
  for (;;) {
    if (isPunct(tokens[k], '.') && isName(tokens[k + 1])) {
      keys.push(tokens[k + 1].text);
      k += 2;
    } else if (isPunct(tokens[k], '[') && (tokens[k + 1]?.kind === 'number' || tokens[k + 1]?.kind === 'string') && isPunct(tokens[k + 2], ']')) {
      keys.push(tokens[k + 1].text);
      k += 3;
    } else break;
  }
  return keys.length > 0 ? { keys, next: k } : undefined;
}

function textArrayLiteral(items: string[]): string {
  return pgLiteral(`{${items.map((item) => `"${item.replace(/[\\"]/g, (c) => `\\${c}`)}"`).join(',')}}`);
}

const NOW_FUNCTIONS: Record<string, string> = {
  CURRENT_TIMESTAMP: 'CURRENT_TIMESTAMP',
  CURRENT_DATE: 'CURRENT_DATE',
  CURRENT_TIME: 'CURRENT_TIME',
  LOCALTIMESTAMP: 'LOCALTIMESTAMP',
  LOCALTIME: 'LOCALTIME',
  SYSDATE: 'LOCALTIMESTAMP',
  GETDATE: 'CURRENT_TIMESTAMP',
};

interface DdlShape {
  status: string;
  table?: { schema?: string; table: string };
  iceberg: boolean;
  coldefsParen?: number;
  /** CREATE OR REPLACE TABLE: the token indexes of OR REPLACE (dropped) and the table's PostgreSQL name. */
  replace?: { at: number; table: string };
}

function ddlStatus(tokens: Token[], context: TranslateContext): DdlShape {
  let k = 1;
  const verb = tokens[0].upper;
  const orReplaceAt = is(tokens[k], 'OR') && is(tokens[k + 1], 'REPLACE') ? k : undefined;
  if (orReplaceAt !== undefined) k += 2;
  while (is(tokens[k], 'TRANSIENT', 'TEMPORARY', 'TEMP', 'LOCAL', 'GLOBAL', 'VOLATILE')) k++;
  let iceberg = false;
  if (is(tokens[k], 'ICEBERG')) {
    iceberg = true;
    k++;
  }
  const objectType = tokens[k]?.upper ?? '';
  k++;
  if (is(tokens[k], 'IF') && is(tokens[k + 1], 'NOT') && is(tokens[k + 2], 'EXISTS')) k += 3;
  else if (is(tokens[k], 'IF') && is(tokens[k + 1], 'EXISTS')) k += 2;
  const { parts, next } = objectNameAt(tokens, k);
  const name = parts[parts.length - 1] ?? '';
  const table = objectType === 'TABLE' && parts.length > 0 ? { ...(parts.length > 1 ? { schema: parts[parts.length - 2] } : {}), table: name } : undefined;
  const kind = objectType === 'TABLE' ? 'Table' : objectType === 'SCHEMA' ? 'Schema' : objectType.charAt(0) + objectType.slice(1).toLowerCase();
  let status = 'Statement executed successfully.';
  if (verb === 'CREATE') status = `${kind} ${name} successfully created.`;
  else if (verb === 'DROP') status = `${name} successfully dropped.`;
  const coldefsParen = verb === 'CREATE' && objectType === 'TABLE' && isPunct(tokens[next], '(') ? next : undefined;
  let replace: DdlShape['replace'];
  if (orReplaceAt !== undefined && objectType === 'TABLE') {
    const nameTokens = tokens.slice(next - (parts.length * 2 - 1), next);
    const rendered = nameTokens.filter((t) => !isPunct(t, '.')).map((t) => (t.kind === 'qident' ? pgIdent(t.text) : t.text));
    if (rendered.length === 3 && parts[0] === context.database) rendered.shift();
    replace = { at: orReplaceAt, table: rendered.join('.') };
  }
  return { status, table, iceberg, coldefsParen, ...(replace ? { replace } : {}) };
}

function translateStatement(sql: string, tokens: Token[], context: TranslateContext, category: Category): Translated {
  const out: string[] = [];
  const stack: Paren[] = [];
  let bindCounter = 0;
  let maxParam = 0;
  const ddl = category === 'ddl' ? ddlStatus(tokens, context) : undefined;
  const mergeKinds: MergeKind[] = [];
  const icebergSettings: IcebergSettings = {};
  // State for column definitions (CREATE TABLE) and ALTER TABLE … ADD COLUMN.
  let expectColumn = false;
  let addColumns = false;
  // State for UPDATE/MERGE SET lists (PostgreSQL refuses a qualified target column).
  let setDepth: number | undefined;
  let assignmentStart = false;
  // FROM VALUES rewriting: token index where the derived table closes, and its column count.
  const valuesCloses = new Map<number, number>();
  let aliasColumnsAfter: { index: number; columns: number } | undefined;
  let nameRestartsAt = -1;
  // Where the current (possibly qualified) name began in `out`, for a VARIANT path after it.
  let lastNameStart = 0;

  const emitName = (t: Token) => out.push(t.kind === 'qident' ? pgIdent(t.text) : t.text);

  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    // After a dropped database qualifier (DB.S.T → S.T) the schema starts a name again.
    const prev = i === nameRestartsAt ? undefined : tokens[i - 1];
    const next = tokens[i + 1];
    const atAssignment = assignmentStart;
    assignmentStart = false;
    // The target of a SET assignment: drop its qualifier (`SET T.X = …` → `SET X = …`).
    if (atAssignment && isName(t) && isPunct(next, '.') && isName(tokens[i + 2]) && tokens[i + 3]?.kind === 'op' && tokens[i + 3].text === '=') {
      i++;
      continue;
    }

    // Close a FROM VALUES derived table.
    if (valuesCloses.has(i)) {
      const columns = valuesCloses.get(i)!;
      valuesCloses.delete(i);
      out.push(')');
      const aliasAt = is(t, 'AS') ? i + 1 : isName(t) && !(t.kind === 'ident' && NOT_AN_ALIAS.has(t.upper)) ? i : undefined;
      if (aliasAt === undefined) out.push(`AS sf_values(${Array.from({ length: columns }, (_, c) => `column${c + 1}`).join(', ')})`);
      else if (!isPunct(tokens[aliasAt + 1], '(')) aliasColumnsAfter = { index: aliasAt, columns };
    }

    // Table options after a CREATE TABLE's column list (EXTERNAL_VOLUME = '…', COMMENT = '…', …).
    if (ddl?.coldefsParen !== undefined && stack.length === 0 && i > ddl.coldefsParen && isName(t) && tokens[i + 1]?.kind === 'op' && tokens[i + 1].text === '=') {
      const value = settingValue(tokens[i + 2]);
      if (t.upper === 'EXTERNAL_VOLUME') icebergSettings.externalVolume = value;
      else if (t.upper === 'CATALOG') icebergSettings.catalog = value;
      else if (t.upper === 'BASE_LOCATION') icebergSettings.baseLocation = value;
      i += 2;
      continue;
    }
    if (ddl?.coldefsParen !== undefined && stack.length === 0 && i > ddl.coldefsParen && is(t, 'CLUSTER') && is(next, 'BY')) {
      // CLUSTER BY (…) has no PostgreSQL meaning: dropped.
      let depth = 0;
      let k = i + 2;
      for (; k < tokens.length; k++) {
        if (isPunct(tokens[k], '(')) depth++;
        else if (isPunct(tokens[k], ')') && --depth === 0) break;
      }
      i = k;
      continue;
    }

    if (t.kind === 'ident') {
      const u = t.upper;
      // CREATE OR REPLACE TABLE: the session drops the table first (PostgreSQL has no OR REPLACE for tables).
      if (ddl?.replace && (i === ddl.replace.at || i === ddl.replace.at + 1)) continue;
      // TRANSIENT / VOLATILE tables (no Fail-safe): plain tables here.
      if (category === 'ddl' && tokens[0].upper === 'CREATE' && (u === 'TRANSIENT' || u === 'VOLATILE') && i < 4) continue;
      // ICEBERG in CREATE/ALTER/DROP ICEBERG TABLE: a plain table here.
      if (u === 'ICEBERG' && category === 'ddl' && is(next, 'TABLE')) continue;
      if (u === 'SET' && (category === 'update' || category === 'merge')) {
        setDepth = stack.length;
        assignmentStart = true;
        out.push('SET');
        continue;
      }
      if (setDepth !== undefined && stack.length === setDepth && (u === 'WHERE' || u === 'FROM' || u === 'WHEN')) setDepth = undefined;
      if (u === 'WHEN' && category === 'merge' && stack.length === 0) {
        let k = i + 1;
        while (k < tokens.length && !is(tokens[k], 'THEN')) k++;
        const action = tokens[k + 1]?.upper;
        const kind: MergeKind | undefined = action === 'INSERT' ? 'inserted' : action === 'UPDATE' ? 'updated' : action === 'DELETE' ? 'deleted' : undefined;
        if (kind && !mergeKinds.includes(kind)) mergeKinds.push(kind);
      }
      // INFORMATION_SCHEMA.X → the peer's views; DB.S.T in the current database → S.T.
      if (u === 'INFORMATION_SCHEMA' && isPunct(next, '.') && !isPunct(prev, '.')) {
        out.push(PEER_SCHEMA);
        continue;
      }
      if (!isPunct(prev, '.') && isPunct(next, '.') && isName(tokens[i + 2]) && isPunct(tokens[i + 3], '.') && isName(tokens[i + 4]) && folded(t) === context.database) {
        i++; // skip the database and its dot
        nameRestartsAt = i + 1;
        continue;
      }
      if (!isPunct(prev, '.') && isPunct(next, '(')) {
        const rewrite = FUNCTION_REWRITES[u];
        if (rewrite && (rewrite.args === undefined || argumentCount(tokens, i + 1) === rewrite.args)) {
          out.push(rewrite.open);
          stack.push({ kind: 'function', close: rewrite.close, ...(rewrite.commas ? { commas: [...rewrite.commas] } : {}) });
          i++;
          continue;
        }
        if (u in NOW_FUNCTIONS && isPunct(tokens[i + 2], ')')) {
          out.push(NOW_FUNCTIONS[u]);
          i += 2;
          continue;
        }
        const contextValue = { CURRENT_ROLE: context.role, CURRENT_WAREHOUSE: context.warehouse, CURRENT_DATABASE: context.database, CURRENT_SCHEMA: context.schema }[u];
        if (contextValue !== undefined && isPunct(tokens[i + 2], ')')) {
          out.push(`${pgLiteral(contextValue)}::text`);
          i += 2;
          continue;
        }
        if (u === 'CAST' || u === 'TRY_CAST') {
          out.push('CAST', '(');
          stack.push({ kind: 'cast' });
          i++;
          continue;
        }
      }
      if (u === 'AS' && stack[stack.length - 1]?.kind === 'cast') {
        const type = parseType(sql, tokens, i + 1);
        out.push('AS', type.pg);
        i = type.next - 1;
        continue;
      }
      if (u === 'FROM' && is(next, 'VALUES')) {
        const { end, columns } = scanValues(sql, tokens, i + 1);
        out.push('FROM', '(', 'VALUES');
        valuesCloses.set(end, columns);
        i++;
        continue;
      }
      // ALTER TABLE … ADD [COLUMN] [IF NOT EXISTS] name type [, name type]
      if (category === 'ddl' && tokens[0].upper === 'ALTER' && u === 'ADD' && stack.length === 0) {
        out.push('ADD', 'COLUMN');
        let k = i + 1;
        if (is(tokens[k], 'COLUMN')) k++;
        if (is(tokens[k], 'IF') && is(tokens[k + 1], 'NOT') && is(tokens[k + 2], 'EXISTS')) {
          out.push('IF', 'NOT', 'EXISTS');
          k += 3;
        }
        addColumns = true;
        expectColumn = true;
        i = k - 1;
        continue;
      }
    }

    // A column definition: name, then a Snowflake type.
    if (expectColumn && isName(t) && (addColumns ? stack.length === 0 : stack[stack.length - 1]?.kind === 'coldefs')) {
      expectColumn = false;
      if (!(t.kind === 'ident' && ['PRIMARY', 'CONSTRAINT', 'UNIQUE', 'FOREIGN', 'CHECK'].includes(t.upper))) {
        emitName(t);
        const type = parseType(sql, tokens, i + 1);
        out.push(type.pg);
        i = type.next - 1;
        continue;
      }
    }

    switch (t.kind) {
      case 'ident':
      case 'qident':
        if (aliasColumnsAfter?.index === i) {
          emitName(t);
          out.push(`(${Array.from({ length: aliasColumnsAfter.columns }, (_, c) => `column${c + 1}`).join(', ')})`);
          aliasColumnsAfter = undefined;
          break;
        }
        {
          const nameStart = isPunct(prev, '.') ? undefined : out.length;
          emitName(t);
          if (nameStart !== undefined) lastNameStart = nameStart;
          // A VARIANT path: DOC:a.b → (DOC #> '{a,b}'); with a cast after it, the text at the path.
          const path = variantPath(tokens, i + 1);
          if (path && !isPunct(next, '.')) {
            const asText = tokens[path.next]?.kind === 'op' && tokens[path.next].text === '::';
            out.splice(lastNameStart, 0, '(');
            out.push(asText ? '#>>' : '#>', textArrayLiteral(path.keys), ')');
            i = path.next - 1;
          }
        }
        break;
      case 'string':
        out.push(pgLiteral(t.text));
        break;
      case 'number':
        out.push(t.text);
        break;
      case 'bind': {
        const n = t.bindNumber ?? ++bindCounter;
        maxParam = Math.max(maxParam, n);
        out.push(`$${n}`);
        break;
      }
      case 'op':
        if (t.text === '::') {
          const type = parseType(sql, tokens, i + 1);
          out.push('::', type.pg);
          i = type.next - 1;
          break;
        }
        out.push(t.text);
        break;
      case 'punct':
        if (t.text === '.') {
          out.push('.');
          break;
        }
        if (t.text === '(') {
          const kind: Paren['kind'] = ddl?.coldefsParen === i ? 'coldefs' : 'plain';
          stack.push({ kind });
          if (kind === 'coldefs') expectColumn = true;
          out.push('(');
          break;
        }
        if (t.text === ')') {
          const top = stack.pop();
          out.push(top?.close ?? ')');
          break;
        }
        if (t.text === ',') {
          const replacement = stack[stack.length - 1]?.commas?.shift();
          out.push(replacement ?? ',');
          if (stack[stack.length - 1]?.kind === 'coldefs') expectColumn = true;
          if (addColumns && stack.length === 0) {
            out.push('ADD', 'COLUMN');
            if (is(next, 'COLUMN')) i++;
            expectColumn = true;
          }
          if (setDepth !== undefined && stack.length === setDepth) assignmentStart = true;
          break;
        }
        out.push(t.text);
        break;
      default:
        throw syntaxError(sql, t.pos, t.text);
    }
  }
  if (valuesCloses.has(tokens.length)) {
    const columns = valuesCloses.get(tokens.length)!;
    out.push(')', `AS sf_values(${Array.from({ length: columns }, (_, c) => `column${c + 1}`).join(', ')})`);
  }
  if (stack.length > 0) throw syntaxError(sql, sql.length, '<EOF>');
  if (category === 'merge') out.push('RETURNING', 'merge_action()');
  const result: Translated = { kind: 'sql', category, sql: render(out), paramCount: maxParam };
  const target = dmlTarget(tokens, context);
  if (target) result.target = target;
  if (category === 'merge') result.mergeKinds = (['inserted', 'updated', 'deleted'] as const).filter((k) => mergeKinds.includes(k));
  if (ddl) {
    result.status = ddl.status;
    if (ddl.replace) result.replaceTable = ddl.replace.table;
    if (ddl.iceberg && tokens[0].upper === 'CREATE' && ddl.table) result.iceberg = { ...ddl.table, settings: icebergSettings };
  }
  return result;
}

/** The table an UPDATE, DELETE or MERGE writes, as PostgreSQL names it (current-database qualifier dropped). */
function dmlTarget(tokens: Token[], context: TranslateContext): string | undefined {
  const verb = tokens[0].upper;
  const at = verb === 'UPDATE' ? 1 : (verb === 'DELETE' && is(tokens[1], 'FROM')) || (verb === 'MERGE' && is(tokens[1], 'INTO')) ? 2 : undefined;
  if (at === undefined) return undefined;
  const parts: Token[] = [];
  let k = at;
  while (isName(tokens[k])) {
    parts.push(tokens[k]);
    if (!isPunct(tokens[k + 1], '.')) break;
    k += 2;
  }
  if (parts.length === 3 && folded(parts[0]) === context.database) parts.shift();
  if (parts.length === 0 || parts.length > 2) return undefined;
  return parts.map((t) => (t.kind === 'qident' ? pgIdent(t.text) : t.text)).join('.');
}

/** Joins output pieces with spaces, except around '.' (qualified names read as written). */
function render(out: string[]): string {
  let s = '';
  for (let i = 0; i < out.length; i++) {
    const piece = out[i];
    if (i > 0 && piece !== '.' && out[i - 1] !== '.' && piece !== '::' && out[i - 1] !== '::') s += ' ';
    s += piece;
  }
  return s;
}
