/**
 * TEST PEER ONLY. The two stage statements the Snowflake test peer speaks, parsed narrowly (pure):
 *
 *   PUT 'file://<name>' '@~/<dir>/' [AUTO_COMPRESS = FALSE] [SOURCE_COMPRESSION = GZIP | NONE] [OVERWRITE = TRUE | FALSE] [PARALLEL = n]
 *   COPY INTO <table> (<col>, …) FROM '@~/<path>'
 *     [FILE_FORMAT = (TYPE = CSV FIELD_OPTIONALLY_ENCLOSED_BY = '"' COMPRESSION = GZIP | NONE EMPTY_FIELD_AS_NULL = TRUE
 *                     [FIELD_DELIMITER = ','] [SKIP_HEADER = 0])]
 *     FORCE = TRUE [PURGE = TRUE | FALSE] [ON_ERROR = ABORT_STATEMENT]
 *
 * Only the user stage (@~) and quoted locations. Anything else is refused with a SQL compilation
 * error: the peer keeps no load metadata (so FORCE = TRUE only), and reads CSV only.
 */
import { SnowflakeSqlError } from './errors.js';
import { syntaxError, type Token } from './lexer.js';

export interface PutStatement {
  kind: 'put';
  /** The local file's name (its last path segment): the name it gets on the stage. */
  fileName: string;
  /** The stage directory below @~, '' or ending in '/'. */
  dir: string;
  sourceCompression: 'gzip' | 'none';
  overwrite: boolean;
}

export interface CopyStatement {
  kind: 'copy';
  /** The table and columns as written (Snowflake text: the peer runs an INSERT with them). */
  table: string;
  columns: string[];
  /** The file below @~. */
  path: string;
  gzip: boolean;
  purge: boolean;
}

const isIdent = (t: Token | undefined, ...uppers: string[]) => !!t && t.kind === 'ident' && (uppers.length === 0 || uppers.includes(t.upper));
const isPunct = (t: Token | undefined, p: string) => !!t && t.kind === 'punct' && t.text === p;
const isEq = (t: Token | undefined) => !!t && t.kind === 'op' && t.text === '=';
const written = (t: Token) => (t.kind === 'qident' ? `"${t.text.replace(/"/g, '""')}"` : t.text);

function unexpected(sql: string, tokens: Token[], k: number): SnowflakeSqlError {
  return syntaxError(sql, tokens[k]?.pos ?? sql.length, tokens[k]?.text ?? '<EOF>');
}

/** `NAME = value` options from tokens[k] on (stopping at `)` or the end): upper-cased names, values as text. */
function options(sql: string, tokens: Token[], k: number, stopAtParen: boolean): { values: Map<string, { text: string; at: number }>; next: number } {
  const values = new Map<string, { text: string; at: number }>();
  while (k < tokens.length && !(stopAtParen && isPunct(tokens[k], ')'))) {
    const name = tokens[k];
    if (!isIdent(name) || !isEq(tokens[k + 1])) throw unexpected(sql, tokens, k);
    const value = tokens[k + 2];
    if (!value || !['ident', 'string', 'number'].includes(value.kind)) throw unexpected(sql, tokens, k + 2);
    values.set(name.upper, { text: value.kind === 'ident' ? value.upper : value.text, at: k });
    k += 3;
    if (isPunct(tokens[k], ',')) k++;
  }
  return { values, next: k };
}

/** A user-stage location ('@~/a/b'): the part after '@~/'. */
function userStagePath(sql: string, t: Token | undefined): string {
  if (!t || t.kind !== 'string') throw syntaxError(sql, t?.pos ?? sql.length, t?.text ?? '<EOF>');
  const m = /^@~(?:\/(.*))?$/.exec(t.text);
  if (!m) throw SnowflakeSqlError.unsupported(`The stage location '${t.text}' (only the user stage @~ is)`);
  const path = m[1] ?? '';
  if (path.split('/').some((part) => part === '.' || part === '..') || /[*?]/.test(path)) throw SnowflakeSqlError.unsupported(`The stage path '${t.text}'`);
  return path;
}

function only(values: Map<string, { text: string }>, name: string, allowed: string[], fallback: string): string {
  const v = values.get(name)?.text ?? fallback;
  if (!allowed.includes(v.toUpperCase())) throw SnowflakeSqlError.unsupported(`${name} = ${v}`);
  return v.toUpperCase();
}

function refuseOthers(values: Map<string, unknown>, known: string[]): void {
  for (const name of values.keys()) if (!known.includes(name)) throw SnowflakeSqlError.unsupported(`The option ${name}`);
}

export function parsePut(sql: string, tokens: Token[]): PutStatement {
  const file = tokens[1];
  if (!file || file.kind !== 'string') throw unexpected(sql, tokens, 1);
  const local = /^file:\/\/(.+)$/.exec(file.text)?.[1];
  if (!local) throw unexpected(sql, tokens, 1);
  const fileName = local.slice(local.lastIndexOf('/') + 1);
  if (!fileName || /[*?]/.test(fileName)) throw SnowflakeSqlError.unsupported(`PUT of '${file.text}' (one named file only)`);
  let dir = userStagePath(sql, tokens[2]);
  if (dir && !dir.endsWith('/')) dir += '/';
  const { values, next } = options(sql, tokens, 3, false);
  if (next !== tokens.length) throw unexpected(sql, tokens, next);
  refuseOthers(values, ['AUTO_COMPRESS', 'SOURCE_COMPRESSION', 'OVERWRITE', 'PARALLEL']);
  // The peer stores the bytes as sent: it does not compress them itself.
  only(values, 'AUTO_COMPRESS', ['FALSE'], 'TRUE');
  const sourceCompression = only(values, 'SOURCE_COMPRESSION', ['GZIP', 'NONE'], 'NONE') === 'GZIP' ? 'gzip' : 'none';
  const overwrite = only(values, 'OVERWRITE', ['TRUE', 'FALSE'], 'FALSE') === 'TRUE';
  return { kind: 'put', fileName, dir, sourceCompression, overwrite };
}

export function parseCopy(sql: string, tokens: Token[]): CopyStatement {
  if (!isIdent(tokens[1], 'INTO')) throw unexpected(sql, tokens, 1);
  let k = 2;
  const name: string[] = [];
  while (tokens[k] && (tokens[k].kind === 'ident' || tokens[k].kind === 'qident')) {
    name.push(written(tokens[k]));
    k++;
    if (!isPunct(tokens[k], '.')) break;
    k++;
  }
  if (name.length === 0 || name.length > 3) throw unexpected(sql, tokens, k);
  // The column list is required: the peer maps the file's fields to it in order.
  if (!isPunct(tokens[k], '(')) throw SnowflakeSqlError.unsupported('COPY INTO without a column list');
  k++;
  const columns: string[] = [];
  for (;;) {
    const c = tokens[k];
    if (!c || (c.kind !== 'ident' && c.kind !== 'qident')) throw unexpected(sql, tokens, k);
    columns.push(written(c));
    k++;
    if (isPunct(tokens[k], ',')) k++;
    else if (isPunct(tokens[k], ')')) break;
    else throw unexpected(sql, tokens, k);
  }
  k++;
  if (!isIdent(tokens[k], 'FROM')) throw unexpected(sql, tokens, k);
  const path = userStagePath(sql, tokens[k + 1]);
  if (!path || path.endsWith('/')) throw SnowflakeSqlError.unsupported(`COPY INTO from '@~/${path}' (one named file only)`);
  k += 2;
  let format = new Map<string, { text: string; at: number }>();
  const rest = new Map<string, { text: string; at: number }>();
  while (k < tokens.length) {
    if (isIdent(tokens[k], 'FILE_FORMAT') && isEq(tokens[k + 1]) && isPunct(tokens[k + 2], '(')) {
      const parsed = options(sql, tokens, k + 3, true);
      if (!isPunct(tokens[parsed.next], ')')) throw unexpected(sql, tokens, parsed.next);
      format = parsed.values;
      k = parsed.next + 1;
      continue;
    }
    const parsed = options(sql, tokens, k, false);
    for (const [n, v] of parsed.values) rest.set(n, v);
    k = parsed.next;
  }
  refuseOthers(format, ['TYPE', 'FIELD_OPTIONALLY_ENCLOSED_BY', 'COMPRESSION', 'EMPTY_FIELD_AS_NULL', 'FIELD_DELIMITER', 'SKIP_HEADER']);
  only(format, 'TYPE', ['CSV'], 'CSV');
  only(format, 'FIELD_OPTIONALLY_ENCLOSED_BY', ['"'], 'NONE');
  only(format, 'EMPTY_FIELD_AS_NULL', ['TRUE'], 'TRUE');
  only(format, 'FIELD_DELIMITER', [','], ',');
  only(format, 'SKIP_HEADER', ['0'], '0');
  const gzip = only(format, 'COMPRESSION', ['GZIP', 'NONE', 'AUTO'], 'AUTO') !== 'NONE';
  refuseOthers(rest, ['FORCE', 'PURGE', 'ON_ERROR']);
  // The peer keeps no load metadata: it cannot skip a file loaded before.
  only(rest, 'FORCE', ['TRUE'], 'FALSE');
  only(rest, 'ON_ERROR', ['ABORT_STATEMENT'], 'ABORT_STATEMENT');
  const purge = only(rest, 'PURGE', ['TRUE', 'FALSE'], 'FALSE') === 'TRUE';
  return { kind: 'copy', table: name.join('.'), columns, path, gzip, purge };
}
