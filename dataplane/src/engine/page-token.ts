/**
 * Signed page tokens (`nextToken`): opaque base64url of a small JSON payload and its
 * HMAC-SHA256. The payload holds the keyset position (the last row's sort values and id), an
 * expiry, and a digest of what the page is bound to (dataset, schema or link, filter, sort, query
 * arguments), so a token is refused when forged, expired, or used with another request.
 *
 * The key: `DAS_PAGE_TOKEN_KEY` (in a cluster from the Secret named on the Environment; every
 * replica must share it), else a key generated once under DATA_DIR (`page-tokens/key`, 0600).
 */
import { createHash, createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { badRequest } from './errors.js';
import { MIN_PAGE_TOKEN_KEY_BYTES, type DataPlaneSettings } from '../../../model/settings/dataplane.js';

/** What a page belongs to: a token from one request is refused by any other. */
export interface PageBinding {
  dataset: string;
  /** `list:<schema>`, `link:<schema>/<id>/<link>` or `query:<name>`. */
  target: string;
  /** Canonical filter (typed form), '' without one. */
  filter: string;
  /** Canonical sort (model/sort.ts sortText). */
  sort: string;
  /** Query arguments, canonical JSON; '' for list and link. */
  arguments?: string;
}

/** The keyset position: the last row's values of each sort key (the id last). */
export type PagePosition = unknown[];

export const DEFAULT_TOKEN_TTL_MS = 24 * 3600 * 1000;
/** Longer input is not a token of ours: refused before any decoding. */
export const MAX_TOKEN_LENGTH = 8192;
const MAC_BYTES = 32;
const MIN_KEY_BYTES = MIN_PAGE_TOKEN_KEY_BYTES;

const invalidToken = (why: string) =>
  badRequest('INVALID_NEXT_TOKEN', `nextToken is not valid for this request: ${why}; start again without nextToken`, [{ path: 'nextToken', message: why }]);

export class PageTokens {
  private readonly ttlMs: number;
  private readonly now: () => number;

  constructor(
    private readonly key: Buffer,
    options: { ttlMs?: number; now?: () => number } = {},
  ) {
    if (key.length < MIN_KEY_BYTES) throw new Error(`a page-token key needs at least ${MIN_KEY_BYTES} bytes`);
    this.ttlMs = options.ttlMs ?? DEFAULT_TOKEN_TTL_MS;
    this.now = options.now ?? (() => Date.now());
  }

  /** A process-local key: tokens do not survive a restart or reach another replica (tests, embedded use). */
  static ephemeral(): PageTokens {
    return new PageTokens(randomBytes(MIN_KEY_BYTES));
  }

  issue(binding: PageBinding, position: PagePosition): string {
    const payload = Buffer.from(JSON.stringify({ b: bindingDigest(binding), e: Math.ceil((this.now() + this.ttlMs) / 1000), p: position }));
    return Buffer.concat([payload, this.mac(payload)]).toString('base64url');
  }

  /** The position a token carries; a 400 INVALID_NEXT_TOKEN when it is not one this request may use. */
  open(token: string, binding: PageBinding): PagePosition {
    if (token.length === 0 || token.length > MAX_TOKEN_LENGTH || !/^[A-Za-z0-9_-]+$/.test(token)) throw invalidToken('not a page token');
    const raw = Buffer.from(token, 'base64url');
    if (raw.length <= MAC_BYTES) throw invalidToken('not a page token');
    const payload = raw.subarray(0, raw.length - MAC_BYTES);
    if (!timingSafeEqual(raw.subarray(raw.length - MAC_BYTES), this.mac(payload))) throw invalidToken('signature does not match');
    const body = JSON.parse(payload.toString('utf8')) as { b: string; e: number; p: PagePosition };
    if (body.e * 1000 <= this.now()) throw invalidToken('expired');
    if (body.b !== bindingDigest(binding)) throw invalidToken('issued for another dataset, schema, link, filter, sort or arguments');
    return body.p;
  }

  private mac(payload: Buffer): Buffer {
    return createHmac('sha256', this.key).update(payload).digest();
  }
}

function bindingDigest(binding: PageBinding): string {
  const canonical = JSON.stringify([binding.dataset, binding.target, binding.filter, binding.sort, binding.arguments ?? '']);
  return createHash('sha256').update(canonical).digest('base64url').slice(0, 22);
}

export function pageTokenKeyPath(dataDir: string): string {
  return join(dataDir, 'page-tokens', 'key');
}

/**
 * The signing key: `DAS_PAGE_TOKEN_KEY` (at least 32 bytes of text) when set, else the one under
 * DATA_DIR, created (32 random bytes, 0600) the first time.
 */
export function loadPageTokenKey(dataDir: string, settings: Pick<DataPlaneSettings, 'DAS_PAGE_TOKEN_KEY'>): Buffer {
  // Its length is checked with the other settings (model/settings/dataplane.ts).
  if (settings.DAS_PAGE_TOKEN_KEY !== undefined) return Buffer.from(settings.DAS_PAGE_TOKEN_KEY, 'utf8');
  const path = pageTokenKeyPath(dataDir);
  return readKey(path) ?? createKey(path);
}

function readKey(path: string): Buffer | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600); // it signs tokens: keep it private
  const key = Buffer.from(text, 'base64url');
  if (key.length < MIN_KEY_BYTES) throw new Error(`the page-token key ${path} is too short; delete it to create a new one`);
  return key;
}

/** Written to a private temporary file, then hard-linked into place: two processes agree on one key. */
function createKey(path: string): Buffer {
  mkdirSync(join(path, '..'), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.${randomUUID()}.tmp`;
  writeFileSync(tmp, `${randomBytes(MIN_KEY_BYTES).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
  try {
    linkSync(tmp, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    unlinkSync(tmp);
  }
  return readKey(path)!;
}
