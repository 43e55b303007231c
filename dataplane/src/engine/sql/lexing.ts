/** Lexing helpers shared by the raw SQL rewriter and the read-only executor. */

/** Index just past a (possibly nested) block comment starting at `start`; the end when unclosed. */
export function skipBlockComment(sql: string, start: number): number {
  let depth = 0;
  let i = start;
  while (i < sql.length) {
    if (sql.startsWith('/*', i)) {
      depth += 1;
      i += 2;
    } else if (sql.startsWith('*/', i)) {
      depth -= 1;
      i += 2;
      if (depth === 0) return i;
    } else i += 1;
  }
  return sql.length;
}

/** PostgreSQL's operator characters (`op_chars` in its lexer, scan.l). */
const OPERATOR_CHARS = new Set('~!@#^&|`?+-*/%<>=');

export const isOperatorChar = (c: string | undefined): boolean => c !== undefined && OPERATOR_CHARS.has(c);

/**
 * Index just past the run of operator characters starting at `start` (`start` itself when none).
 * PostgreSQL's lexer matches such a run whole at every `/*` and every operator token that starts
 * inside it, then backs up: its time grows with the square of the run's length (a text of
 * `/**\/` repeated, or of `/*` nested without blanks, takes minutes before the statement timeout
 * can act). Callers bound the run length.
 */
export function operatorRunEnd(sql: string, start: number): number {
  let i = start;
  while (i < sql.length && OPERATOR_CHARS.has(sql[i])) i += 1;
  return i;
}
