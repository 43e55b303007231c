/** Parsing of the `Authorization` request header: `<scheme> <credentials>` (RFC 9110 §11.6.2). */

export interface ParsedAuthorization {
  /** The auth scheme, lower case (schemes are case-insensitive). */
  scheme: string;
  /** Everything after the scheme and its separating whitespace; may be empty. */
  credentials: string;
}

const SCHEME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * Returns undefined when there is no credential at all (header absent, empty or blank), `'malformed'`
 * when the value does not start with an auth scheme, otherwise the scheme and credentials.
 */
export function parseAuthorization(header: string | undefined): ParsedAuthorization | 'malformed' | undefined {
  if (header === undefined) return undefined;
  const value = header.replace(/^[ \t]+|[ \t]+$/g, '');
  if (value === '') return undefined;
  const gap = value.search(/[ \t]/);
  const scheme = gap < 0 ? value : value.slice(0, gap);
  if (!SCHEME.test(scheme)) return 'malformed';
  const credentials = gap < 0 ? '' : value.slice(gap).replace(/^[ \t]+/, '');
  return { scheme: scheme.toLowerCase(), credentials };
}
