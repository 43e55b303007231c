/**
 * The managed rule sets of the API gateway firewall: `common` and `knownBadInputs`.
 *
 * Each rule has a stable id (logged, and returned in the 403's details) and documents what it
 * blocks and what it lets through. docs/security.md lists them; a test asserts every rule there
 * has a request it blocks and a close request it passes.
 *
 * This is a data API: records hold arbitrary user text. So the request *body* is inspected only
 * for size, for URLs naming cloud metadata endpoints (the service loads data from caller-given
 * location URIs), and for the signatures of known exploits (Log4Shell, Java serialized objects,
 * Spring4Shell form fields). Generic rules — path traversal, encoding, control characters — look
 * at the URL and headers only, so a record may well contain "C:\..\..\boot.ini", "a/../b", SQL,
 * HTML or NUL escapes. No SQL-injection or XSS rule exists: SQL is bound as parameters (and the
 * raw SQL endpoint takes SQL by design), and the API answers JSON, not HTML.
 */
import { isIP } from 'node:net';
import { isUtf8 } from 'node:buffer';
import { CidrSet } from '../../../model/cidr.js';
import type { ManagedRuleSet } from '../../../model/types.js';

export type HeaderMap = Record<string, string | string[] | undefined>;

export interface FirewallRequest {
  method: string;
  /** The request target as received (`req.originalUrl`): path and query, still percent-encoded. */
  rawUrl: string;
  headers: HeaderMap;
  /** The client address (see client-address.ts). */
  clientAddress: string;
  /** The body as text, when the caller has read it (JSON and form bodies up to the body limit). */
  bodyText?: string;
  /** Bytes of body seen so far, when known. */
  bodyBytes?: number;
}

export interface ManagedRule {
  id: string;
  set: ManagedRuleSet;
  /** What the rule blocks. */
  blocks: string;
  /** Close requests the rule deliberately lets through. */
  passes: string;
  /** Judges the request line and headers; returns the reason when the request is blocked. */
  checkRequest?(request: InspectedRequest): string | undefined;
  /** Judges the body (when its text or size is known); returns the reason when it is blocked. */
  checkBody?(request: InspectedRequest): string | undefined;
}

// ---------------------------------------------------------------------------------------------
// Limits

export const MAX_BODY_BYTES = 8 * 1024 * 1024;
export const MAX_HEADER_VALUE_BYTES = 8 * 1024;
export const MAX_HEADERS_TOTAL_BYTES = 32 * 1024;
export const MAX_PATH_BYTES = 2048;
export const MAX_QUERY_BYTES = 4096;
export const ALLOWED_METHODS: readonly string[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
/** How many rounds of percent-decoding are looked through (catches double and triple encoding). */
const DECODE_ROUNDS = 3;

// ---------------------------------------------------------------------------------------------
// Decoding helpers

/**
 * Percent-decodes every well-formed `%XX` run (as UTF-8, invalid sequences becoming U+FFFD) and
 * leaves everything else as it is, so a malformed escape cannot hide the rest from inspection.
 */
export function lenientDecode(text: string, plusAsSpace = false): string {
  const spaced = plusAsSpace ? text.replace(/\+/g, ' ') : text;
  if (!spaced.includes('%')) return spaced;
  return spaced.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => Buffer.from(run.replace(/%/g, ''), 'hex').toString('utf8'));
}

/** The rounds of an empty text (a request without a query string): one shared list, only ever read. */
const EMPTY_ROUNDS: string[] = Object.freeze(['']) as unknown as string[];

/** The text, then each further decoding that changes it (at most DECODE_ROUNDS). */
function decodingRounds(text: string, plusAsSpace: boolean): string[] {
  if (text === '') return EMPTY_ROUNDS;
  const rounds = [text];
  let current = text;
  for (let i = 0; i < DECODE_ROUNDS; i++) {
    const next = lenientDecode(current, plusAsSpace && i === 0);
    if (next === current) break;
    rounds.push(next);
    current = next;
  }
  return rounds;
}

/** Undoes JSON string escapes that could hide a pattern (`\u0024{jndi:`, `http:\/\/`). */
export function unescapeJsonText(text: string): string {
  if (!text.includes('\\')) return text;
  return text.replace(/\\u([0-9A-Fa-f]{4})|\\\//g, (match, hex: string | undefined) => (hex ? String.fromCharCode(parseInt(hex, 16)) : '/'));
}

// ---------------------------------------------------------------------------------------------
// What the pattern rules look for

/**
 * Every character or sequence without which no pattern rule can match a URL text, raw or decoded:
 * `%` (any decoding), `+` (a space once the query is decoded: the Java rule's look-behind then
 * matches), control and non-ASCII characters, `..`, `//`, `\\`, `${`, `class`, and the Java
 * serialization magic. A URL with none of them passes the invalid-encoding, path-traversal,
 * metadata-URL, Log4j, Java and Spring4Shell checks without their scans; one with any of them gets
 * every scan, as before. `managed-rules.test.ts` checks each rule's blocked requests trip it.
 */
const URL_TRIGGERS = /[^\x20-\x7e]|[%+\\]|\.\.|\/\/|\$\{|class|(?<![A-Za-z0-9+/_.-])rO0AB|(?<![0-9A-Fa-f])aced0005/i;
/** The same for a header value: NUL, `%` (decoded when it holds one), `${` and the Java magic. */
const HEADER_TRIGGERS = /[\x00%]|\$\{|(?<![A-Za-z0-9+/_.-])rO0AB|(?<![0-9A-Fa-f])aced0005/i;

// ---------------------------------------------------------------------------------------------
// The request as the rules see it (each view computed once, on first use)

export class InspectedRequest {
  readonly method: string;
  readonly rawPath: string;
  readonly rawQuery: string;
  // Each view is computed on first use; plain fields, since every request builds one of these.
  private path?: string[];
  private query?: string[];
  private headers?: string[];
  private body?: string[];
  private urlTriggered?: boolean;
  private headersTriggered?: boolean;

  constructor(readonly request: FirewallRequest) {
    this.method = request.method.toUpperCase();
    const q = request.rawUrl.indexOf('?');
    this.rawPath = q < 0 ? request.rawUrl : request.rawUrl.slice(0, q);
    this.rawQuery = q < 0 ? '' : request.rawUrl.slice(q + 1);
  }

  /** Whether the path or the query holds anything a pattern rule looks for (URL_TRIGGERS). */
  get urlNeedsScans(): boolean {
    return (this.urlTriggered ??= URL_TRIGGERS.test(this.rawPath) || URL_TRIGGERS.test(this.rawQuery));
  }
  /** Whether any header value holds anything a pattern rule looks for (HEADER_TRIGGERS). */
  get headersNeedScans(): boolean {
    if (this.headersTriggered === undefined) {
      const list = this.headerList;
      let triggered = false;
      for (let i = 1; i < list.length && !triggered; i += 2) triggered = HEADER_TRIGGERS.test(list[i]);
      this.headersTriggered = triggered;
    }
    return this.headersTriggered;
  }
  /** Raw path, then its decodings. */
  get pathRounds(): string[] {
    return (this.path ??= decodingRounds(this.rawPath, false));
  }
  /** Raw query, then its decodings (`+` read as a space). */
  get queryRounds(): string[] {
    return (this.query ??= decodingRounds(this.rawQuery, true));
  }
  /**
   * Every header as lower-case name and value, flat (`[name, value, name, value, …]`: one array per
   * request rather than a pair per header); repeated headers give several pairs.
   */
  get headerList(): string[] {
    if (this.headers) return this.headers;
    const list: string[] = [];
    const headers = this.request.headers;
    for (const name in headers) {
      const value = headers[name];
      if (value === undefined) continue;
      const lower = name.toLowerCase();
      if (Array.isArray(value)) for (const v of value) list.push(lower, String(v));
      else list.push(lower, String(value));
    }
    return (this.headers = list);
  }
  header(name: string): string | undefined {
    const value = this.request.headers[name] ?? this.request.headers[name.toLowerCase()];
    return Array.isArray(value) ? value[0] : value;
  }
  get contentType(): string {
    return (this.header('content-type') ?? '').toLowerCase();
  }
  get isFormBody(): boolean {
    return /^(application\/x-www-form-urlencoded|multipart\/form-data)\b/.test(this.contentType);
  }
  /** Body texts to inspect: the raw text, its JSON-unescaped form and, for form bodies, its decodings. */
  get bodyTexts(): string[] {
    if (this.body) return this.body;
    const body = this.request.bodyText;
    if (body === undefined || body === '') return (this.body = []);
    const texts = new Set([body, unescapeJsonText(body)]);
    if (this.isFormBody) for (const round of decodingRounds(body, true)) texts.add(round);
    return (this.body = [...texts]);
  }
  /** Whether `test` holds for a URL text: the path or the query, raw or decoded. */
  someUrlText(test: (text: string) => boolean): boolean {
    return this.pathRounds.some(test) || this.queryRounds.some(test);
  }
  /**
   * Whether `test` holds for a header value, raw or (where it holds escapes) percent-decoded. Read
   * straight off `headerList`: no second list per request (values with a `%` are rare, and decoded
   * again for each rule that asks).
   */
  someHeaderText(test: (text: string) => boolean): boolean {
    const list = this.headerList;
    for (let i = 1; i < list.length; i += 2) {
      const value = list[i];
      if (test(value)) return true;
      if (value.includes('%')) {
        const decoded = lenientDecode(value);
        if (decoded !== value && test(decoded)) return true;
      }
    }
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// common

function checkMethod(req: InspectedRequest): string | undefined {
  if (!ALLOWED_METHODS.includes(req.method)) return `the method is not one this API serves (${ALLOWED_METHODS.join(', ')})`;
  return undefined;
}

const BODY_TOO_LARGE = `the body is larger than ${MAX_BODY_BYTES} bytes (8 MiB)`;

function checkDeclaredBodySize(req: InspectedRequest): string | undefined {
  const declared = req.header('content-length');
  if (declared !== undefined && /^\s*\d+\s*$/.test(declared) && Number(declared) > MAX_BODY_BYTES) return BODY_TOO_LARGE;
  return undefined;
}

function checkSeenBodySize(req: InspectedRequest): string | undefined {
  const seen = req.request.bodyBytes ?? (req.request.bodyText !== undefined ? Buffer.byteLength(req.request.bodyText) : 0);
  return seen > MAX_BODY_BYTES ? BODY_TOO_LARGE : undefined;
}

function checkHeaderSize(req: InspectedRequest): string | undefined {
  let total = 0;
  const list = req.headerList;
  for (let i = 0; i < list.length; i += 2) {
    const name = list[i];
    const value = list[i + 1];
    if (value.length > MAX_HEADER_VALUE_BYTES) return `header ${safeName(name)} is longer than ${MAX_HEADER_VALUE_BYTES} bytes`;
    total += name.length + value.length;
  }
  if (total > MAX_HEADERS_TOTAL_BYTES) return `the headers are larger than ${MAX_HEADERS_TOTAL_BYTES} bytes in total`;
  return undefined;
}

function checkUriSize(req: InspectedRequest): string | undefined {
  if (req.rawPath.length > MAX_PATH_BYTES) return `the URL path is longer than ${MAX_PATH_BYTES} bytes`;
  return undefined;
}

function checkQuerySize(req: InspectedRequest): string | undefined {
  if (req.rawQuery.length > MAX_QUERY_BYTES) return `the query string is longer than ${MAX_QUERY_BYTES} bytes`;
  return undefined;
}

/** A `..` path segment (also `..;param`, Tomcat-style), with `/` or `\` as separators. */
function hasDotDotSegment(path: string): boolean {
  if (!path.includes('..')) return false; // the common path, without splitting it
  return path.split(/[/\\]/).some((segment) => /^\.\.(;.*)?$/.test(segment.trim()));
}

function checkPathTraversal(req: InspectedRequest): string | undefined {
  if (!req.urlNeedsScans) return undefined;
  const rounds = req.pathRounds;
  for (let i = 0; i < rounds.length; i++) {
    if (hasDotDotSegment(rounds[i])) {
      const how = i === 0 ? '' : i === 1 ? ' (percent-encoded)' : ' (encoded several times)';
      return `the URL path contains a ".." segment${how}`;
    }
  }
  return undefined;
}

const MALFORMED_PERCENT = /%(?![0-9A-Fa-f]{2})/;
const PATH_CONTROL = /[\x00-\x1f\x7f]/;

/** Raw (non-ASCII) characters of a request target arrive as latin1 code units; they must form UTF-8. */
function rawBytesAreUtf8(text: string): boolean {
  if (!/[^\x00-\x7f]/.test(text)) return true;
  if (/[^\x00-\xff]/.test(text)) return true; // already decoded text (not straight off the socket)
  return isUtf8(Buffer.from(text, 'latin1'));
}

function percentRunsAreUtf8(text: string): boolean {
  if (!text.includes('%')) return true;
  const runs = text.match(/(?:%[0-9A-Fa-f]{2})+/g) ?? [];
  return runs.every((run) => isUtf8(Buffer.from(run.replace(/%/g, ''), 'hex')));
}

function checkUrlPartEncoding(part: string, raw: string): string | undefined {
  if (MALFORMED_PERCENT.test(raw)) return `the ${part} has a "%" that does not start a %XX escape (encode a literal % as %25)`;
  if (!rawBytesAreUtf8(raw) || !percentRunsAreUtf8(raw)) return `the ${part} is not valid UTF-8 once percent-decoded`;
  return undefined;
}

function checkInvalidEncoding(req: InspectedRequest): string | undefined {
  if (!req.urlNeedsScans && !req.headersNeedScans) return undefined;
  const part = checkUrlPartEncoding('path', req.rawPath) ?? checkUrlPartEncoding('query string', req.rawQuery);
  if (part) return part;
  const path = req.pathRounds[1] ?? req.pathRounds[0];
  if (PATH_CONTROL.test(path)) return 'the URL path contains control characters';
  const query = req.queryRounds[1] ?? req.queryRounds[0];
  if (query.includes('\u0000')) return 'the query string contains a NUL character';
  const list = req.headerList;
  for (let i = 0; i < list.length; i += 2) if (list[i + 1].includes('\u0000')) return `header ${safeName(list[i])} contains a NUL character`;
  return undefined;
}

/** Link-local IPv4 (AWS, GCP, Azure, OpenStack, ECS task metadata), AWS IPv6 IMDS, Alibaba, Oracle legacy. */
export const METADATA_RANGES: readonly string[] = ['169.254.0.0/16', 'fd00:ec2::254/128', '100.100.100.200/32', '192.0.0.192/32'];
export const METADATA_NAMES: readonly string[] = ['metadata.google.internal', 'metadata.goog', 'metadata', 'instance-data', 'instance-data.ec2.internal'];
const metadataRanges = new CidrSet(METADATA_RANGES);

/** Whether a host (as written in a URL or a Host header) names a cloud metadata endpoint. */
export function isMetadataHost(host: string): boolean {
  let hostname: string;
  try {
    // The WHATWG parser canonicalises what a fetch would: 2852039166, 0xa9fea9fe, 0251.0376.0251.0376 → 169.254.169.254.
    hostname = new URL(`http://${host}/`).hostname.toLowerCase();
  } catch {
    return false;
  }
  hostname = hostname.replace(/\.+$/, '');
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  if (isIP(bare)) return metadataRanges.contains(bare);
  return METADATA_NAMES.includes(hostname);
}

/**
 * URL-shaped occurrences: `scheme://authority` (slashes or backslashes, as WHATWG parsers accept
 * both for http) and protocol-relative `//authority`. The authority runs to the next `/ \ ? #`,
 * whitespace or quote. Written as a scan over separator runs with bounded look-behind, so the
 * cost stays linear in the text whatever it holds.
 */
const SEPARATORS = /[/\\]{2,}/g;
const SCHEME_BEFORE = /[A-Za-z][A-Za-z0-9+.-]{0,31}:$/;
/** Schemes whose URLs parsers read with backslashes as slashes (WHATWG "special" schemes). */
const SPECIAL_SCHEME_BEFORE = /(?:^|[^A-Za-z0-9+.-])(?:https?|wss?|ftp|file):$/i;
const AUTHORITY = /[^/\\?#\s"'<>`{}|^]{1,300}/y;

/**
 * Cheap pre-filter before the URL parser: only an authority that starts with a digit or `[`, holds
 * userinfo, percent-escapes or non-ASCII (IDNA maps full-width digits), or starts with one of the
 * metadata names can canonicalise to a metadata endpoint.
 */
function mightNameMetadata(authority: string): boolean {
  const first = authority.charCodeAt(0);
  if ((first >= 48 && first <= 57) || first === 91 /* [ */) return true;
  if (/[@%]|[^\x00-\x7f]/.test(authority)) return true;
  return /^(?:metadata|instance-data)(?:[.:]|$)/i.test(authority);
}

export function findMetadataUrl(text: string): boolean {
  // A run of two or more separators is either `//` or holds a backslash: most texts have neither.
  if (!text.includes('//') && !text.includes('\\')) return false;
  for (const match of text.matchAll(SEPARATORS)) {
    const at = match.index;
    const previous = at === 0 ? -1 : text.charCodeAt(at - 1);
    let urlShaped: boolean;
    if (previous === 58 /* : */) {
      const before = text.slice(Math.max(0, at - 33), at);
      // `C:\\share` is a Windows path, not a URL: backslashes count only after http:, https: and the like.
      urlShaped = match[0].includes('\\') ? SPECIAL_SCHEME_BEFORE.test(before) : SCHEME_BEFORE.test(before);
    } else {
      urlShaped = match[0] === '//' && (previous === -1 || !/[A-Za-z0-9]/.test(text[at - 1]));
    }
    if (!urlShaped) continue;
    AUTHORITY.lastIndex = at + match[0].length;
    const authority = AUTHORITY.exec(text);
    if (authority && mightNameMetadata(authority[0]) && isMetadataHost(authority[0])) return true;
  }
  return false;
}

/**
 * Clients send the same Host header on every request: its verdict is remembered (bounded), which
 * spares a URL parse per request. `isMetadataHost` is a pure function of the value.
 */
const knownHostVerdicts = new Map<string, boolean>();
const MAX_KNOWN_HOSTS = 256;
const MAX_REMEMBERED_HOST = 255;

function headerNamesMetadata(value: string): boolean {
  if (value.length > MAX_REMEMBERED_HOST) return value.split(',').some((v) => isMetadataHost(v.trim()));
  let verdict = knownHostVerdicts.get(value);
  if (verdict === undefined) {
    verdict = value.split(',').some((v) => isMetadataHost(v.trim()));
    if (knownHostVerdicts.size >= MAX_KNOWN_HOSTS) knownHostVerdicts.clear();
    knownHostVerdicts.set(value, verdict);
  }
  return verdict;
}

const HOST_HEADERS: readonly string[] = ['host', 'x-forwarded-host', ':authority'];

function checkMetadataAddress(req: InspectedRequest): string | undefined {
  for (const name of HOST_HEADERS) {
    const value = req.header(name);
    if (value !== undefined && headerNamesMetadata(value)) return `the ${name} header names a cloud metadata endpoint`;
  }
  if (req.urlNeedsScans && req.someUrlText(findMetadataUrl)) return 'the URL contains a URL of a cloud metadata endpoint';
  return undefined;
}

function checkMetadataAddressBody(req: InspectedRequest): string | undefined {
  if (req.bodyTexts.some(findMetadataUrl)) return 'the body contains a URL of a cloud metadata endpoint';
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// knownBadInputs

/** How much of a lookup the detector keeps: enough to read `jndi:` and short obfuscation pieces. */
const LOOKUP_KEEP = 32;
/** Deeper nesting of `${` is treated as an obfuscated lookup (no text nests lookups this deep). */
export const MAX_LOOKUP_DEPTH = 256;
const JNDI_HEAD = /^\s*jndi\s*:$/i;

/** One open `${...}` lookup while scanning: its first characters and those after its first `:-`. */
class LookupFrame {
  head = '';
  fallback: string | undefined;
  private previous = '';

  /** Appends one character; returns true when the lookup has just become `${jndi:`. */
  push(ch: string): boolean {
    if (this.head.length < LOOKUP_KEEP) this.head += ch;
    if (this.fallback !== undefined) {
      if (this.fallback.length < LOOKUP_KEEP) this.fallback += ch;
    } else if (this.previous === ':' && ch === '-') {
      this.fallback = '';
    }
    this.previous = ch;
    return ch === ':' && this.head.length < LOOKUP_KEEP && JNDI_HEAD.test(this.head);
  }

  /** What Log4j would substitute, as far as obfuscation goes. */
  resolve(): string {
    const lowerUpper = /^\s*(lower|upper)\s*:(.*)$/is.exec(this.head);
    if (lowerUpper) {
      const value = lowerUpper[2].replace(/:-.*$/s, '');
      return lowerUpper[1].toLowerCase() === 'lower' ? value.toLowerCase() : value.toUpperCase();
    }
    const date = /^\s*date\s*:\s*'([^']*)'/is.exec(this.head);
    if (date) return date[1];
    if (this.fallback !== undefined) return this.fallback; // ${::-j}, ${env:UNSET:-j}: the default value
    return '\u0001'; // an ordinary lookup or template placeholder: resolves to something that spells nothing
  }
}

/**
 * Whether the text holds a Log4j JNDI lookup, seeing through the obfuscations Log4j itself
 * resolves, nested to any depth: `${lower:j}`, `${upper:j}`, default values `${::-j}` /
 * `${env:X:-j}`, `${date:'j'}`. One pass with a stack of open lookups, each kept to a few
 * characters, so the cost is linear in the text whatever its nesting.
 */
export function hasLog4jLookup(text: string): boolean {
  let i = text.indexOf('${');
  if (i < 0) return false;
  const stack: LookupFrame[] = [];
  while (i < text.length) {
    if (text.charCodeAt(i) === 36 /* $ */ && text.charCodeAt(i + 1) === 123 /* { */) {
      // Nesting this deep is never data; judging it would cost memory, so it counts as an attack.
      if (stack.length >= MAX_LOOKUP_DEPTH) return true;
      stack.push(new LookupFrame());
      i += 2;
      continue;
    }
    const top = stack[stack.length - 1];
    if (!top) {
      i = text.indexOf('${', i);
      if (i < 0) return false;
      continue;
    }
    const ch = text[i++];
    if (ch === '}') {
      stack.pop();
      const parent = stack[stack.length - 1];
      if (parent) for (const c of top.resolve()) if (parent.push(c)) return true;
      continue;
    }
    if (top.push(ch)) return true;
  }
  return false;
}

function checkLog4j(req: InspectedRequest): string | undefined {
  if (req.urlNeedsScans && req.someUrlText(hasLog4jLookup)) return 'the URL contains a Log4j JNDI lookup (${jndi:...})';
  if (req.headersNeedScans && req.someHeaderText(hasLog4jLookup)) return 'a header contains a Log4j JNDI lookup (${jndi:...})';
  return undefined;
}

function checkLog4jBody(req: InspectedRequest): string | undefined {
  if (req.bodyTexts.some(hasLog4jLookup)) return 'the body contains a Log4j JNDI lookup (${jndi:...})';
  return undefined;
}

/**
 * The Java serialization stream magic (0xACED0005) as base64 (`rO0AB`) or hex (`aced0005`), at the
 * start of a token: a value that *is* a serialized Java object, not a substring of some other blob.
 */
const JAVA_SERIALIZED = /(?<![A-Za-z0-9+/_.-])rO0AB|(?<![0-9A-Fa-f])aced0005/i;

function hasJavaSerialized(text: string): boolean {
  return JAVA_SERIALIZED.test(text);
}

function checkJavaDeserialization(req: InspectedRequest): string | undefined {
  if (req.urlNeedsScans && req.someUrlText(hasJavaSerialized)) return 'the URL contains a serialized Java object';
  if (req.headersNeedScans && req.someHeaderText(hasJavaSerialized)) return 'a header contains a serialized Java object';
  return undefined;
}

function checkJavaDeserializationBody(req: InspectedRequest): string | undefined {
  if (req.bodyTexts.some(hasJavaSerialized)) return 'the body contains a serialized Java object';
  return undefined;
}

/** `class.module.classLoader` (CVE-2022-22965) and `class.classLoader` (CVE-2010-1622), also as `class[module][classLoader]`. */
export function hasSpringClassLoaderParam(text: string): boolean {
  if (!/class/i.test(text)) return false;
  const normalized = text.replace(/\[/g, '.').replace(/[\]'"\s]/g, '');
  return /class\.(module\.)?classloader/i.test(normalized);
}

function checkSpring4Shell(req: InspectedRequest): string | undefined {
  if (req.urlNeedsScans && req.queryRounds.some(hasSpringClassLoaderParam)) return 'the query string binds class.module.classLoader (Spring4Shell)';
  return undefined;
}

function checkSpring4ShellBody(req: InspectedRequest): string | undefined {
  if (req.isFormBody && req.bodyTexts.some(hasSpringClassLoaderParam)) return 'the form body binds class.module.classLoader (Spring4Shell)';
  return undefined;
}

function safeName(name: string): string {
  return /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/.test(name) ? name : '(unnamed)';
}

// ---------------------------------------------------------------------------------------------
// The rule table

export const MANAGED_RULES: readonly ManagedRule[] = [
  {
    id: 'common.method',
    set: 'common',
    blocks: `methods other than ${ALLOWED_METHODS.join(', ')} (TRACE, TRACK, CONNECT, WebDAV methods such as PROPFIND)`,
    passes: 'every method the API serves, in any letter case',
    checkRequest: checkMethod,
  },
  {
    id: 'common.body-size',
    set: 'common',
    blocks: 'a body larger than 8 MiB, by Content-Length or by the bytes seen',
    passes: 'bodies up to and including 8 MiB; requests without a body',
    checkRequest: checkDeclaredBodySize,
    checkBody: checkSeenBodySize,
  },
  {
    id: 'common.header-size',
    set: 'common',
    blocks: 'any header value longer than 8 KiB, or headers of more than 32 KiB in total',
    passes: 'ordinary headers, including identity-provider tokens of several KiB',
    checkRequest: checkHeaderSize,
  },
  {
    id: 'common.uri-size',
    set: 'common',
    blocks: 'a URL path longer than 2 KiB (as sent, percent-encoded)',
    passes: 'paths up to 2 KiB, e.g. long record ids',
    checkRequest: checkUriSize,
  },
  {
    id: 'common.query-size',
    set: 'common',
    blocks: 'a query string longer than 4 KiB (as sent)',
    passes: 'query strings up to 4 KiB, e.g. filter expressions and page tokens',
    checkRequest: checkQuerySize,
  },
  {
    id: 'common.invalid-encoding',
    set: 'common',
    blocks:
      'in the URL: a "%" not followed by two hex digits, percent-escapes or raw bytes that are not UTF-8 (e.g. overlong %c0%ae), control characters in the decoded path, NUL in the decoded query; NUL in any header',
    passes: 'well-formed percent-encoding of any Unicode text (%C3%A9, %E2%82%AC); "+" in queries; the body is not checked (JSON escapes such as \\u0000 are for the engine to judge)',
    checkRequest: checkInvalidEncoding,
  },
  {
    id: 'common.path-traversal',
    set: 'common',
    blocks: 'a ".." segment in the URL path, with / or \\ as separator, raw or percent-encoded once or several times (../, ..\\, %2e%2e%2f, %252e%252e%252f, ..;/)',
    passes: 'single-dot segments (/./), dots inside a segment (/a..b, /v1.2, /..., /...foo); ".." in the query string and in the body (record text such as "C:\\..\\boot.ini" or "a/../b")',
    checkRequest: checkPathTraversal,
  },
  {
    id: 'common.metadata-address',
    set: 'common',
    blocks:
      'a Host or X-Forwarded-Host naming a cloud metadata endpoint, and a URL naming one anywhere in the URL, query or body: 169.254.0.0/16 (AWS/GCP/Azure/OpenStack IMDS, ECS 169.254.170.2), fd00:ec2::254, 100.100.100.200, 192.0.0.192, metadata.google.internal, metadata.goog, metadata, instance-data — in any spelling a URL parser accepts (2852039166, 0xa9fea9fe, [::ffff:169.254.169.254], user@host, backslashes, JSON-escaped slashes)',
    passes: 'the bare text of such an address in a record value or filter ("169.254.169.254" as data, not as a URL host); URLs of other hosts (http://metadata.example.com/)',
    checkRequest: checkMetadataAddress,
    checkBody: checkMetadataAddressBody,
  },
  {
    id: 'knownBadInputs.log4j',
    set: 'knownBadInputs',
    blocks:
      'Log4Shell (CVE-2021-44228) lookups ${jndi:...} in the URL, any header or the body, including Log4j\'s own obfuscations (${${lower:j}ndi:, ${${::-j}${::-n}di:, ${env:X:-j}, ${upper:...}, ${date:\'j\'}), percent-encoding and JSON \\u escapes; lookups nested more than 256 deep',
    passes: 'the word "jndi" without a lookup; ordinary ${name} template placeholders; "${jndi}" without the colon',
    checkRequest: checkLog4j,
    checkBody: checkLog4jBody,
  },
  {
    id: 'knownBadInputs.java-deserialization',
    set: 'knownBadInputs',
    blocks: 'a value starting with the Java serialization magic, as base64 (rO0AB...) or hex (aced0005...), in the URL, a header or the body',
    passes: 'the same letters inside another token (xrO0ABc, base64 blobs that merely contain them); JWTs',
    checkRequest: checkJavaDeserialization,
    checkBody: checkJavaDeserializationBody,
  },
  {
    id: 'knownBadInputs.spring4shell',
    set: 'knownBadInputs',
    blocks: 'class.module.classLoader / class.classLoader parameter paths (also class[module][classLoader]) in the query string or in a form-encoded or multipart body',
    passes: 'the same words in a JSON body (JSON is not bound onto Java objects by a data binder); "classLoader" alone',
    checkRequest: checkSpring4Shell,
    checkBody: checkSpring4ShellBody,
  },
];

export function managedRuleById(id: string): ManagedRule | undefined {
  return MANAGED_RULES.find((rule) => rule.id === id);
}
