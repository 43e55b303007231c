/**
 * Pure rewriting of raw SQL: `@{alias}` → the schema's qualified table, `@{alias.property.path}` →
 * the property's physical column, `${name}` → a typed bind placeholder. Nothing from the request is
 * ever spliced into the SQL text except through these replacements, whose output comes from the
 * dataset config (quoted identifiers) and the placeholder syntax; argument values only travel as
 * bind values.
 *
 * Tokens are recognised only in SQL code: a small lexer skips string literals ('…' with ''
 * escapes; backslash escapes where the dialect has them, E'…' in PostgreSQL), quoted identifiers
 * ("…"), dollar-quoted strings ($$…$$, and $tag$…$tag$ where the dialect has them), -- line
 * comments and block comments (nested where the dialect nests them). So `'${x}'` stays the literal
 * text `${x}`. What differs between SQL engines is the dialect's (`RawSqlDialect`), supplied by each
 * SQL driver (PostgreSQL: drivers/postgres/dialect.ts, with standard_conforming_strings on —
 * the read-only role pins it on).
 *
 * Token syntax is strict: `@{alias}` or `@{alias.segment.segment…}` and `${name}`, where each
 * name is `[A-Za-z_][A-Za-z0-9_]*`, no spaces. Anything else between the braces, an unclosed brace
 * and positional parameters written by hand (`$1`) are 400s naming the token.
 */
import type { DatasetConfig } from '../../../../model/types.js';
import { badRequest } from '../errors.js';
import { fieldsOf, type Field } from '../layout.js';
import { isOperatorChar, operatorRunEnd, skipBlockComment } from './lexing.js';
import { IDENTIFIER, type RawArgument } from './raw-request.js';
import type { ScalarType } from './scalar-types.js';

/** The system columns a token may name besides the schema's properties. */
export const SYSTEM_PROPERTIES = ['id', 'version', 'createdAt', 'updatedAt'] as const;
export type SystemProperty = (typeof SYSTEM_PROPERTIES)[number];

/** How a SQL engine lexes the text around the tokens. */
export interface SqlLexicalRules {
  /** `/* /* … *\/ *\/` nests (PostgreSQL) or ends at the first `*\/`. */
  readonly nestedBlockComments: boolean;
  /** `$tag$…$tag$` besides `$$…$$` (PostgreSQL) */
  readonly taggedDollarQuotes: boolean;
  /** Backslash escapes inside every '…' literal (Snowflake), or only in E'…' (PostgreSQL). */
  readonly backslashEscapesInStrings: boolean;
  readonly escapeStringPrefix: boolean;
  /** `// …` line comments besides `-- …` (Snowflake). */
  readonly slashLineComments?: boolean;
}

export const POSTGRES_LEXICAL_RULES: SqlLexicalRules = { nestedBlockComments: true, taggedDollarQuotes: true, backslashEscapesInStrings: false, escapeStringPrefix: true };

/** What differs between SQL engines for raw SQL: each SQL driver supplies its own. */
export interface RawSqlDialect {
  readonly name: string;
  readonly lexical: SqlLexicalRules;
  /** Qualified, quoted table of a schema of the dataset. */
  table(dataset: DatasetConfig, schemaName: string): string;
  /** Quoted physical column of a property (a link's column holds the target id). */
  column(dataset: DatasetConfig, schemaName: string, field: Field): string;
  systemColumn(name: SystemProperty): string;
  /** The placeholder text for the index-th (1-based) bind value. */
  placeholder(index: number, type: ScalarType): string;
  /**
   * True when one placeholder can be referenced several times (`$1` in PostgreSQL); false for
   * positional `?` binds, where each use of an argument gets its own bind value.
   */
  readonly reusablePlaceholders: boolean;
}

/** One replaced token: where it was in the source and where its replacement is in the output. */
export interface Replacement {
  srcStart: number;
  srcEnd: number;
  outStart: number;
  outEnd: number;
}

export interface RewrittenSql {
  text: string;
  /** Bind values, in placeholder order: text (or null for SQL NULL), cast on the server. */
  values: (string | null)[];
  /** For mapping database error positions back to the caller's SQL: see sourcePosition. */
  replacements: Replacement[];
}

const MAX_TOKEN_SHOWN = 80;

/**
 * Most operator characters in a row (outside literals and line comments). PostgreSQL lexes such a
 * run in time growing with the square of its length, before the statement timeout can act; at
 * this bound a 100,000-character text of them lexes in well under a second.
 */
export const MAX_OPERATOR_RUN = 1000;

function tokenError(code: string, sql: string, start: number, end: number, message: string) {
  const raw = sql.slice(start, end);
  const token = raw.length > MAX_TOKEN_SHOWN ? `${raw.slice(0, MAX_TOKEN_SHOWN - 3)}...` : raw;
  const position = charPosition(sql, start);
  return badRequest(code, `${token}: ${message}`, [{ path: '$.sql', message, token, position }]);
}

/** 1-based character (code point) position of a UTF-16 index, as PostgreSQL counts positions. */
function charPosition(text: string, index: number): number {
  return [...text.slice(0, index)].length + 1;
}

const isIdentStart = (c: string) => /[A-Za-z_]/.test(c) || c.charCodeAt(0) >= 0x80;
const isIdentCont = (c: string) => /[A-Za-z0-9_$]/.test(c) || c.charCodeAt(0) >= 0x80;
const DOLLAR_TAG = /\$(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/y;

/** Index just past a quoted run starting at `start` (the opening quote). Unterminated: the end. */
function skipQuoted(sql: string, start: number, quote: string, backslashEscapes: boolean): number {
  let i = start + 1;
  while (i < sql.length) {
    const c = sql[i];
    if (backslashEscapes && c === '\\') i += 2;
    else if (c === quote) {
      if (sql[i + 1] === quote) i += 2;
      else return i + 1;
    } else i += 1;
  }
  return sql.length;
}


export interface Token {
  kind: '@' | '$';
  start: number;
  end: number;
  /** The text between the braces. */
  body: string;
}

/**
 * The `@{…}` and `${…}` tokens of SQL code, in order, skipping literals, quoted identifiers and
 * comments. Throws a 400 for an unclosed token or a hand-written positional parameter.
 */
export function scanTokens(sql: string, rules: SqlLexicalRules = POSTGRES_LEXICAL_RULES): Token[] {
  const tokens: Token[] = [];
  let runChecked = 0;
  const checkRun = (at: number) => {
    runChecked = operatorRunEnd(sql, at);
    if (runChecked - at > MAX_OPERATOR_RUN) {
      throw tokenError('SQL_TOO_COMPLEX', sql, at, runChecked, `${runChecked - at} operator characters in a row (+ - * / < > = ~ ! @ # % ^ & | \` ?); at most ${MAX_OPERATOR_RUN} are accepted: separate them with blanks`);
    }
  };
  let i = 0;
  while (i < sql.length) {
    const c = sql[i];
    const next = sql[i + 1];
    // A run of operator characters in code (a line comment is lexed linearly: not counted).
    const lineComment = (c === '-' && next === '-') || (rules.slashLineComments === true && c === '/' && next === '/');
    if (i >= runChecked && isOperatorChar(c) && !lineComment) checkRun(i);
    if (c === "'") i = skipQuoted(sql, i, "'", rules.backslashEscapesInStrings);
    else if (c === '"') i = skipQuoted(sql, i, '"', false);
    else if (lineComment) {
      const eol = sql.indexOf('\n', i);
      i = eol === -1 ? sql.length : eol + 1;
    } else if (c === '/' && next === '*') {
      // Inside a comment PostgreSQL matches each nested `/*` together with the operator characters after it.
      const close = sql.indexOf('*/', i + 2);
      const end = rules.nestedBlockComments ? skipBlockComment(sql, i) : close === -1 ? sql.length : close + 2;
      for (let j = sql.indexOf('/*', i + 2); j !== -1 && j < end; j = sql.indexOf('/*', j + 2)) if (j >= runChecked) checkRun(j);
      i = end;
    }
    else if ((c === '@' || c === '$') && next === '{') {
      const close = sql.indexOf('}', i + 2);
      if (close === -1) throw tokenError('INVALID_TOKEN', sql, i, sql.length, `unclosed ${c}{ token: close it with }`);
      tokens.push({ kind: c, start: i, end: close + 1, body: sql.slice(i + 2, close) });
      i = close + 1;
    } else if (c === '$') {
      DOLLAR_TAG.lastIndex = i;
      const tag = rules.taggedDollarQuotes ? DOLLAR_TAG.exec(sql) : next === '$' ? ['$$'] : null;
      if (tag) {
        const close = sql.indexOf(tag[0], i + tag[0].length);
        i = close === -1 ? sql.length : close + tag[0].length;
      } else if (next !== undefined && /[0-9]/.test(next)) {
        let end = i + 1;
        while (end < sql.length && /[0-9]/.test(sql[end])) end += 1;
        throw tokenError('INVALID_TOKEN', sql, i, end, 'positional parameters are not allowed; write ${name} and give the value in "arguments"');
      } else i += 1;
    } else if (isIdentStart(c)) {
      // An identifier or keyword; `$` continues it (as in PostgreSQL) unless a ${ token starts.
      const start = i;
      i += 1;
      while (i < sql.length && isIdentCont(sql[i]) && !(sql[i] === '$' && sql[i + 1] === '{')) i += 1;
      // E'…' escape strings honour backslash escapes.
      if (rules.escapeStringPrefix && i - start === 1 && (c === 'E' || c === 'e') && sql[i] === "'") i = skipQuoted(sql, i, "'", true);
    } else if (/[0-9]/.test(c)) {
      // A number, possibly with a trailing identifier-like part (1e5, 1_000); never a token.
      while (i < sql.length && /[0-9A-Za-z_.]/.test(sql[i])) i += 1;
    } else i += 1;
  }
  return tokens;
}

function resolveProperty(dataset: DatasetConfig, dialect: RawSqlDialect, schemaName: string, path: string[]): string | { error: string } {
  const schema = dataset.schemas[schemaName];
  const fields = fieldsOf(schema);
  const dotted = path.join('.');
  const exact = fields.find((f) => f.dotted === dotted);
  if (exact) return dialect.column(dataset, schemaName, exact);
  if (path.length === 1 && (SYSTEM_PROPERTIES as readonly string[]).includes(path[0])) return dialect.systemColumn(path[0] as SystemProperty);
  // `@{p.employer.id}`: the link's own column, which stores the target's id.
  const parent = fields.find((f) => f.dotted === path.slice(0, -1).join('.'));
  if (parent?.type === 'link') {
    if (path[path.length - 1] === 'id') return dialect.column(dataset, schemaName, parent);
    return { error: `"${parent.dotted}" is a link to ${parent.target}: its column holds only the target's id (${parent.dotted}.id); join the target's table to read its other properties` };
  }
  const linkPrefix = fields.find((f) => f.type === 'link' && dotted.startsWith(`${f.dotted}.`));
  if (linkPrefix) return { error: `"${linkPrefix.dotted}" is a link to ${linkPrefix.target}: its column holds only the target's id; join the target's table to read its properties` };
  const children = fields.filter((f) => f.dotted.startsWith(`${dotted}.`));
  if (children.length) return { error: `"${dotted}" is an object; name one of its properties: ${children.map((f) => f.dotted).join(', ')}` };
  const known = [...SYSTEM_PROPERTIES, ...fields.map((f) => f.dotted)];
  return { error: `schema ${schemaName} has no property "${dotted}"; its properties: ${known.join(', ')}` };
}

/**
 * Rewrites the SQL. `using` maps aliases to schema names already checked to exist in the dataset
 * (parseRawSqlRequest); `args` are the parsed arguments. Arguments the SQL does not reference are
 * allowed and not bound.
 */
export function rewriteRawSql(
  sql: string,
  using: ReadonlyMap<string, string>,
  args: ReadonlyMap<string, RawArgument>,
  dataset: DatasetConfig,
  dialect: RawSqlDialect,
): RewrittenSql {
  const values: (string | null)[] = [];
  const bound = new Map<string, number>();
  const replacements: Replacement[] = [];
  let text = '';
  let copied = 0;
  for (const token of scanTokens(sql, dialect.lexical)) {
    let replacement: string;
    if (token.kind === '$') {
      if (!IDENTIFIER.test(token.body)) throw tokenError('INVALID_TOKEN', sql, token.start, token.end, 'a placeholder is ${name}, the name made of letters, digits and _ (not starting with a digit)');
      const arg = args.get(token.body);
      if (!arg) throw tokenError('MISSING_ARGUMENT', sql, token.start, token.end, `no argument "${token.body}" in "arguments"`);
      let index = dialect.reusablePlaceholders ? bound.get(arg.name) : undefined;
      if (index === undefined) {
        values.push(arg.param);
        index = values.length;
        bound.set(arg.name, index);
      }
      replacement = dialect.placeholder(index, arg.type);
    } else {
      const path = token.body.split('.');
      if (!path.every((segment) => IDENTIFIER.test(segment))) {
        throw tokenError('INVALID_TOKEN', sql, token.start, token.end, 'a replacement token is @{alias} or @{alias.property.path}, each name made of letters, digits and _ (not starting with a digit)');
      }
      const [alias, ...property] = path;
      const schemaName = using.get(alias);
      if (schemaName === undefined) {
        const declared = [...using.keys()];
        throw tokenError('UNKNOWN_ALIAS', sql, token.start, token.end, `alias "${alias}" is not declared in "using"${declared.length ? ` (declared: ${declared.join(', ')})` : ''}`);
      }
      if (property.length === 0) replacement = dialect.table(dataset, schemaName);
      else {
        const column = resolveProperty(dataset, dialect, schemaName, property);
        if (typeof column !== 'string') throw tokenError('UNKNOWN_PROPERTY', sql, token.start, token.end, column.error);
        replacement = column;
      }
    }
    text += sql.slice(copied, token.start);
    replacements.push({ srcStart: token.start, srcEnd: token.end, outStart: text.length, outEnd: text.length + replacement.length });
    text += replacement;
    copied = token.end;
  }
  text += sql.slice(copied);
  return { text, values, replacements };
}

/**
 * Maps a 1-based character position in the rewritten text (as PostgreSQL reports it) to the
 * 1-based character position in the caller's SQL; inside a replacement, the token's start.
 */
export function sourcePosition(sql: string, rewritten: RewrittenSql, position: number): number {
  const chars = [...rewritten.text];
  const outIndex = chars.slice(0, Math.max(0, position - 1)).join('').length;
  let delta = 0;
  for (const r of rewritten.replacements) {
    if (outIndex < r.outStart) break;
    if (outIndex < r.outEnd) return charPosition(sql, r.srcStart);
    delta = r.srcEnd - r.outEnd;
  }
  return charPosition(sql, Math.min(sql.length, outIndex + delta));
}
