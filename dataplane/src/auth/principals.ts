/**
 * Principal patterns as IAM ARNs are written: `*` matches any run of characters (including none,
 * and including `/` and `:`), `?` matches exactly one character, everything else matches itself.
 * The pattern covers the whole string and is case-sensitive.
 *
 * No regular expression is built from the pattern, so nothing in it (`.`, `+`, `(`, `$`, `\` ...)
 * has a special meaning and no pattern can make matching slow: the classic two-pointer wildcard
 * match runs in O(pattern × principal) at worst.
 */
export function principalMatches(pattern: string, principal: string): boolean {
  let p = 0; // position in pattern
  let s = 0; // position in principal
  let star = -1; // position of the last `*` seen in pattern
  let resume = 0; // principal position the last `*` currently stretches to
  while (s < principal.length) {
    const c = pattern[p];
    if (p < pattern.length && (c === '?' || c === principal[s])) {
      p++;
      s++;
    } else if (p < pattern.length && c === '*') {
      star = p++;
      resume = s;
    } else if (star >= 0) {
      // Let the last `*` swallow one more character and retry from there.
      p = star + 1;
      s = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.length && pattern[p] === '*') p++;
  return p === pattern.length;
}

/** Whether any of the patterns matches any of the names. */
export function anyMatches(patterns: readonly string[], names: readonly (string | undefined)[]): boolean {
  return patterns.some((pattern) => names.some((name) => name !== undefined && principalMatches(pattern, name)));
}

/**
 * `caller.super` holds IAM principals as written, and token subjects prefixed `public:` — so a
 * token whose `sub` or `cognito:username` happens to equal an IAM principal's name is not super.
 */
export const PUBLIC_SUPER_PREFIX = 'public:';
export function superPatterns(all: readonly string[], gateway: 'iam' | 'public'): string[] {
  return gateway === 'public'
    ? all.filter((p) => p.startsWith(PUBLIC_SUPER_PREFIX)).map((p) => p.slice(PUBLIC_SUPER_PREFIX.length))
    : all.filter((p) => !p.startsWith(PUBLIC_SUPER_PREFIX));
}
