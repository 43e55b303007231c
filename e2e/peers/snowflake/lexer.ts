/**
 * TEST PEER ONLY. A lexer for the Snowflake SQL the Snowflake test peer understands: '…' strings with
 * '' and backslash escapes, "…" identifiers, $$…$$ strings, `--` and `//` line comments, /* *\/
 * comments, `?` / `:N` binds. Pure: text in, tokens out (or a SnowflakeSqlError).
 */
import { SnowflakeSqlError } from './errors.js';

export type TokenKind = 'ident' | 'qident' | 'string' | 'number' | 'bind' | 'pgparam' | 'op' | 'punct';

export interface Token {
  kind: TokenKind;
  /** Source text; for ident the text as written, for qident/string the decoded value. */
  text: string;
  /** Upper-cased text of an ident (keyword comparisons). */
  upper: string;
  /** Offset in the source, for Snowflake's "line L at position P" messages. */
  pos: number;
  /** For bind tokens: the explicit number of `:N`, undefined for `?`. */
  bindNumber?: number;
}

const BACKSLASH_ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', b: '\b', f: '\f', '0': '\0', Z: '\x1a' };
const MULTI_OPS = ['::', '<=', '>=', '<>', '!=', '||', '=>', '->'];

export function lineAndPosition(sql: string, pos: number): { line: number; position: number } {
  const before = sql.slice(0, pos);
  const line = before.split('\n').length;
  return { line, position: pos - (before.lastIndexOf('\n') + 1) };
}

export function syntaxError(sql: string, pos: number, unexpected: string): SnowflakeSqlError {
  const { line, position } = lineAndPosition(sql, pos);
  return SnowflakeSqlError.syntax(`syntax error line ${line} at position ${position} unexpected '${unexpected}'.`);
}

export function lex(sql: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const n = sql.length;
  const push = (kind: TokenKind, text: string, pos: number, bindNumber?: number) =>
    tokens.push({ kind, text, upper: kind === 'ident' ? text.toUpperCase() : text, pos, ...(bindNumber !== undefined ? { bindNumber } : {}) });
  while (i < n) {
    const c = sql[i];
    const next = sql[i + 1];
    if (/\s/.test(c)) {
      i++;
    } else if ((c === '-' && next === '-') || (c === '/' && next === '/')) {
      while (i < n && sql[i] !== '\n') i++;
    } else if (c === '/' && next === '*') {
      const end = sql.indexOf('*/', i + 2);
      if (end < 0) throw syntaxError(sql, i, '/*');
      i = end + 2;
    } else if (c === "'") {
      const start = i;
      let value = '';
      i++;
      for (;;) {
        if (i >= n) throw syntaxError(sql, start, sql.slice(start, start + 20));
        const ch = sql[i];
        if (ch === "'" && sql[i + 1] === "'") {
          value += "'";
          i += 2;
        } else if (ch === "'") {
          i++;
          break;
        } else if (ch === '\\' && i + 1 < n) {
          const e = sql[i + 1];
          value += BACKSLASH_ESCAPES[e] ?? e;
          i += 2;
        } else {
          value += ch;
          i++;
        }
      }
      push('string', value, start);
    } else if (c === '$' && next === '$') {
      const end = sql.indexOf('$$', i + 2);
      if (end < 0) throw syntaxError(sql, i, '$$');
      push('string', sql.slice(i + 2, end), i);
      i = end + 2;
    } else if (c === '$' && next !== undefined && /[0-9]/.test(next)) {
      const m = /^\$[0-9]+/.exec(sql.slice(i))!;
      push('pgparam', m[0], i);
      i += m[0].length;
    } else if (c === '"') {
      const start = i;
      let value = '';
      i++;
      for (;;) {
        if (i >= n) throw syntaxError(sql, start, sql.slice(start, start + 20));
        if (sql[i] === '"' && sql[i + 1] === '"') {
          value += '"';
          i += 2;
        } else if (sql[i] === '"') {
          i++;
          break;
        } else value += sql[i++];
      }
      if (value === '') throw syntaxError(sql, start, '""');
      push('qident', value, start);
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_$]*/.exec(sql.slice(i))!;
      push('ident', m[0], i);
      i += m[0].length;
    } else if (/[0-9]/.test(c) || (c === '.' && next !== undefined && /[0-9]/.test(next))) {
      const m = /^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?/.exec(sql.slice(i))!;
      push('number', m[0], i);
      i += m[0].length;
    } else if (c === '?') {
      push('bind', '?', i);
      i++;
    } else if (c === ':' && next !== undefined && /[0-9]/.test(next)) {
      const m = /^:([0-9]+)/.exec(sql.slice(i))!;
      push('bind', m[0], i, Number(m[1]));
      i += m[0].length;
    } else if ('(),;.[]{}'.includes(c)) {
      push('punct', c, i);
      i++;
    } else {
      const two = sql.slice(i, i + 2);
      if (MULTI_OPS.includes(two)) {
        push('op', two, i);
        i += 2;
      } else if ('+-*/%=<>!|&^~:'.includes(c)) {
        push('op', c, i);
        i++;
      } else {
        throw syntaxError(sql, i, c);
      }
    }
  }
  return tokens;
}
