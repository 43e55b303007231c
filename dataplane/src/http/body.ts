/**
 * Reads a JSON request body within bounds, refusing rather than rewriting:
 *
 * - a per-request size limit (413), and a process-wide budget of bytes buffered by requests still
 *   uploading (503 SERVER_BUSY with Retry-After): many slow 1 MiB uploads cannot add up to more
 *   memory than the budget;
 * - strict UTF-8 (invalid bytes are a 400, never U+FFFD), no BOM games;
 * - nesting depth (a 400 before parsing: `[` × 5,000 would otherwise reach code that recurses);
 * - lone UTF-16 surrogates in any string or key (`"\ud800"` is valid JSON, but PostgreSQL would
 *   store U+FFFD, so two different ids would address one record): a 400 naming the JSON path.
 */
import type { IncomingMessage } from 'node:http';
import { ApiError, badRequest } from '../engine/errors.js';

export const DEFAULT_BODY_LIMIT = 1024 * 1024;
export const DEFAULT_BODY_BUDGET = 64 * 1024 * 1024;
export const MAX_JSON_DEPTH = 64;

/** Bytes held by bodies being received, across all requests of the process. */
export class BodyBudget {
  private used = 0;

  constructor(readonly capacity: number = DEFAULT_BODY_BUDGET) {}

  get inUse(): number {
    return this.used;
  }

  tryReserve(bytes: number): boolean {
    if (this.used + bytes > this.capacity) return false;
    this.used += bytes;
    return true;
  }

  release(bytes: number): void {
    this.used = Math.max(0, this.used - bytes);
  }
}

export interface BodyOptions {
  limit: number;
  budget: BodyBudget;
}

const serverBusy = () => {
  const err = new ApiError(503, 'SERVER_BUSY', 'too many request bodies are being received at once; retry shortly');
  return err;
};

/**
 * The raw bytes of the body. The budget is reserved up front (the declared Content-Length, or the
 * limit for a chunked body) and released when the body is read or the request ends.
 */
export function readRawBody(req: IncomingMessage, options: BodyOptions): Promise<Buffer> {
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (encoding !== 'identity') throw new ApiError(415, 'UNSUPPORTED_ENCODING', `Content-Encoding "${encoding.slice(0, 50)}" is not accepted; send the body uncompressed`);
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(req.headers['content-type'] ?? '')?.[1]?.toLowerCase();
  if (charset && charset !== 'utf-8' && charset !== 'utf8') throw new ApiError(415, 'UNSUPPORTED_ENCODING', `charset "${charset.slice(0, 50)}" is not accepted; send UTF-8`);
  const declared = req.headers['content-length'];
  const length = declared === undefined ? undefined : Number(declared);
  if (length !== undefined && (!Number.isSafeInteger(length) || length < 0)) throw badRequest('INVALID_CONTENT_LENGTH', 'Content-Length is not a number of bytes');
  if (length !== undefined && length > options.limit) throw tooLarge(options.limit);
  const reserved = length ?? options.limit;
  if (!options.budget.tryReserve(reserved)) throw serverBusy();
  // No async wrapper: the collector releases the reservation itself when it settles (one promise per body).
  // It starts once node is done with the packet that carried the headers (the request event fires
  // from the headers' callback, and microtasks and ticks run before the parser's next one): a small
  // body sent with them (nearly all) is complete by then (see `BodyCollector.start`).
  return new Promise((resolve, reject) => setImmediate(startCollector, new BodyCollector(req, options, reserved, length, resolve, reject)));
}

const startCollector = (collector: BodyCollector) => collector.start();

const tooLarge = (limit: number) => new ApiError(413, 'BODY_TOO_LARGE', `the body is larger than ${limit} bytes`);

/** Where a request's collector rides while its body arrives: the listeners below are shared, not closures per body. */
const COLLECTOR = Symbol('body collector');
type CollectedRequest = IncomingMessage & { [COLLECTOR]?: BodyCollector };

function onData(this: CollectedRequest, chunk: Buffer): void {
  this[COLLECTOR]?.data(chunk);
}
function onEnd(this: CollectedRequest): void {
  this[COLLECTOR]?.end();
}
const requestAborted = () => badRequest('REQUEST_ABORTED', 'the request body was not completely received');

function onAborted(this: CollectedRequest): void {
  this[COLLECTOR]?.done(requestAborted());
}
function onError(this: CollectedRequest, err: Error): void {
  this[COLLECTOR]?.done(badRequest('REQUEST_ABORTED', `the request body could not be read: ${err.message.slice(0, 100)}`));
}
const LISTENERS = [
  ['data', onData],
  ['end', onEnd],
  ['aborted', onAborted],
  ['close', onAborted],
  ['error', onError],
] as const;

/**
 * Collects one body's chunks. One object per body, found by the shared listeners above on its
 * request; `aborted` and `close` share one (both mean the body will not be complete).
 */
class BodyCollector {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private settled = false;

  constructor(
    private readonly req: CollectedRequest,
    private readonly options: BodyOptions,
    private readonly reserved: number,
    private readonly length: number | undefined,
    private readonly resolve: (body: Buffer) => void,
    private readonly reject: (err: unknown) => void,
  ) {}

  /**
   * A body that arrived whole with its headers (`complete`: the parser has pushed all of it and its
   * end, and nothing has read it yet) is taken from the stream's buffer in one `read()`: the same
   * bytes, without five listeners, flowing mode and the `data`/`end` events' ticks. Any other body
   * (still arriving, chunked, already being read) is collected from the events as it arrives.
   */
  start(): void {
    const { req, length } = this;
    // Destroyed before the collector started: its `aborted` and `close` have fired already, unheard.
    if (req.destroyed) return this.done(requestAborted());
    if (req.complete && length !== undefined && length > 0 && req.readableFlowing !== true && req.readableLength === length) {
      const body = req.read() as Buffer | null;
      if (body && body.length === length) {
        this.settled = true;
        this.options.budget.release(this.reserved);
        return this.resolve(body);
      }
      if (body) this.data(body); // not expected: whatever was read goes the usual way, then the events
    }
    this.listen();
  }

  private listen(): void {
    const { req } = this;
    req[COLLECTOR] = this;
    for (const [event, listener] of LISTENERS) req.on(event, listener);
  }

  data(chunk: Buffer): void {
    this.size += chunk.length;
    if (this.size > this.options.limit) return this.done(tooLarge(this.options.limit));
    this.chunks.push(chunk);
  }

  end(): void {
    if (this.length !== undefined && this.size !== this.length) return this.done(badRequest('INVALID_CONTENT_LENGTH', 'the body does not match its Content-Length'));
    this.done();
  }

  done(err?: unknown): void {
    if (this.settled) return;
    this.settled = true;
    const { req, chunks } = this;
    req[COLLECTOR] = undefined;
    for (const [event, listener] of LISTENERS) req.off(event, listener);
    this.options.budget.release(this.reserved);
    if (err) {
      // Stop reading; the response (an error) is still sent, with Connection: close.
      req.pause();
      this.reject(err);
    } else this.resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, this.size));
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Parses the bytes as JSON: strict UTF-8, bounded depth, well-formed strings. */
export function parseJsonBody(raw: Buffer, maxDepth = MAX_JSON_DEPTH): unknown {
  return decodeJsonBody(raw, maxDepth).value;
}

/** `parseJsonBody` that also hands back the decoded text, for the firewall's body rules to read without decoding again. */
export function decodeJsonBody(raw: Buffer, maxDepth = MAX_JSON_DEPTH): { text: string; value: unknown } {
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    const at = firstInvalidUtf8(raw);
    throw badRequest('INVALID_UTF8', `the body is not valid UTF-8 (byte offset ${at})`, [{ path: '$', message: `invalid UTF-8 at byte ${at}` }]);
  }
  const depth = jsonDepth(text, maxDepth);
  if (depth > maxDepth) throw badRequest('JSON_TOO_DEEP', `the body nests arrays and objects more than ${maxDepth} levels deep`, [{ path: '$', message: `nesting deeper than ${maxDepth}` }]);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const message = (err as Error).message.replace(/^Unexpected/, 'unexpected');
    throw badRequest('MALFORMED_JSON', `the body is not valid JSON: ${message}`, [{ path: '$', message: 'malformed JSON' }]);
  }
  if (hasLoneSurrogateEscape(text)) {
    const path = loneSurrogatePath(value, '$');
    if (path) {
      throw badRequest('INVALID_TEXT', 'text must be valid Unicode: a lone UTF-16 surrogate (\\ud800–\\udfff without its pair) cannot be stored', [
        { path, message: 'lone surrogate' },
      ]);
    }
  }
  return { text, value };
}

/**
 * The deepest nesting of `[`/`{` outside strings, stopping once past `limit`. Linear, no recursion.
 * A string is skipped by `indexOf` of its closing quote (native, not char by char): most of a body's
 * characters are inside strings (a GraphQL body is mostly its query text).
 */
export function jsonDepth(text: string, limit = Infinity): number {
  let depth = 0;
  let max = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) i = closingQuote(text, i + 1);
    else if (c === 91 /* [ */ || c === 123 /* { */) {
      if (++depth > max) {
        max = depth;
        if (max > limit) return max;
      }
    } else if (c === 93 || c === 125) depth--;
  }
  return max;
}

/** The index of the quote that ends a string starting at `from` (after its opening quote): one not escaped by an odd run of backslashes; the text's length when none does. */
function closingQuote(text: string, from: number): number {
  for (;;) {
    const quote = text.indexOf('"', from);
    if (quote < 0) return text.length;
    let before = quote - 1;
    while (before >= from && text.charCodeAt(before) === 92 /* \ */) before--;
    if ((quote - 1 - before) % 2 === 0) return quote;
    from = quote + 1;
  }
}

/** Raw UTF-8 cannot hold a surrogate (the decoder refuses it), so only a `\uD8xx` escape can. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F][0-9a-fA-F]{2}/;
const hasLoneSurrogateEscape = (text: string) => SURROGATE_ESCAPE.test(text);

const LONE_SURROGATE = /\p{Surrogate}/u;
export const isWellFormedText = (s: string) => !LONE_SURROGATE.test(s);

/** JSON path of the first string or key holding a lone surrogate, if any. */
export function loneSurrogatePath(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return isWellFormedText(value) ? undefined : path;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = loneSurrogatePath(value[i], `${path}[${i}]`);
      if (found) return found;
    }
    return undefined;
  }
  if (value && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const at = /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
      if (!isWellFormedText(key)) return at;
      const found = loneSurrogatePath(item, at);
      if (found) return found;
    }
  }
  return undefined;
}

function firstInvalidUtf8(raw: Buffer): number {
  // Bisect on decodability of prefixes is overkill; a byte scan is clear enough.
  let i = 0;
  while (i < raw.length) {
    const b = raw[i];
    const n = b < 0x80 ? 1 : b >= 0xc2 && b < 0xe0 ? 2 : b >= 0xe0 && b < 0xf0 ? 3 : b >= 0xf0 && b < 0xf5 ? 4 : 0;
    if (n === 0 || i + n > raw.length) return i;
    try {
      utf8.decode(raw.subarray(i, i + n));
    } catch {
      return i;
    }
    i += n;
  }
  return i;
}
