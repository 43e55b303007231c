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
