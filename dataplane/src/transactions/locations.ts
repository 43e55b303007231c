/**
 * Where a bulk load may read from. `file://` only under the import root (after resolving `..` and
 * symlinks), `s3://bucket/key-or-prefix`, and `https://` only to public addresses: a host that
 * resolves to a private, loopback, link-local, metadata or otherwise special address is refused,
 * and the connection is made to the address that was checked (no second lookup to rebind).
 */
import { lookup } from 'node:dns/promises';
import { existsSync, realpathSync } from 'node:fs';
import { isIP } from 'node:net';
import { relative, resolve, sep, isAbsolute } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isPublicAddress } from '../front-door/addresses.js';

export type Location =
  | { scheme: 'file'; path: string }
  | { scheme: 's3'; bucket: string; key: string }
  | { scheme: 'https'; url: URL; address: string; family: 4 | 6 };

export class LocationError extends Error {
  constructor(
    readonly code: 'INVALID_LOCATION' | 'LOCATION_FORBIDDEN',
    message: string,
  ) {
    super(message);
  }
}

/** Parses and checks a location; `https://` hosts are resolved here (the address is kept for the fetch). */
export async function checkLocation(uri: string, importRoot: string, resolveHost: typeof lookup = lookup): Promise<Location> {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new LocationError('INVALID_LOCATION', `"${uri.slice(0, 200)}" is not a URI; use s3://bucket/key, file:///path under the import root or https://host/path`);
  }
  switch (url.protocol) {
    case 'file:':
      return { scheme: 'file', path: checkFilePath(url, importRoot) };
    case 's3:': {
      let key: string;
      try {
        key = decodeURIComponent(url.pathname.replace(/^\//, ''));
      } catch {
        throw new LocationError('INVALID_LOCATION', 'the s3:// key is not valid percent-encoded UTF-8');
      }
      if (!url.hostname) throw new LocationError('INVALID_LOCATION', 's3:// needs a bucket: s3://bucket/key-or-prefix');
      // Checked decoded, and as written (the URL parser resolves "/%2e%2e/" itself): an encoded
      // "%2E%2E%2F" is a dot segment too, and an HTTP client would resolve it.
      const written = uri.replace(/^s3:\/\/[^/?#]*/i, '');
      let decoded = written;
      try {
        decoded = decodeURIComponent(written);
      } catch {
        /* refused above */
      }
      if ([key, decoded].some((path) => path.split('/').some((segment) => segment === '.' || segment === '..'))) {
        throw new LocationError('INVALID_LOCATION', 'an s3:// key must not have "." or ".." segments (encoded or not)');
      }
      return { scheme: 's3', bucket: url.hostname, key };
    }
    case 'https:': {
      if (url.username || url.password) throw new LocationError('INVALID_LOCATION', 'https:// locations must not carry credentials');
      const host = url.hostname.replace(/^\[|\]$/g, '');
      let addresses: { address: string; family: number }[];
      if (isIP(host)) addresses = [{ address: host, family: isIP(host) }];
      else {
        try {
          addresses = await resolveHost(host, { all: true, verbatim: true });
        } catch {
          throw new LocationError('INVALID_LOCATION', `host "${host}" does not resolve`);
        }
      }
      const refused = addresses.find((a) => !isPublicAddress(a.address));
      if (refused || !addresses.length) {
        throw new LocationError('LOCATION_FORBIDDEN', `https:// loads only from public addresses; "${host}" resolves to ${refused?.address ?? 'nothing'}`);
      }
      return { scheme: 'https', url, address: addresses[0].address, family: addresses[0].family as 4 | 6 };
    }
    default:
      throw new LocationError('INVALID_LOCATION', `scheme "${url.protocol.replace(':', '')}" is not supported; use s3://, file:// or https://`);
  }
}

function checkFilePath(url: URL, importRoot: string): string {
  if (url.hostname && url.hostname !== 'localhost') throw new LocationError('INVALID_LOCATION', 'file:// locations name a local path: file:///path');
  let path: string;
  try {
    path = fileURLToPath(url);
  } catch {
    throw new LocationError('INVALID_LOCATION', 'not a valid file:// path');
  }
  const rootReal = existsSync(importRoot) ? realpathSync(importRoot) : importRoot;
  const lexical = resolve(path);
  // Symlinks are followed before the check: a link under the root to /etc is still outside it.
  const real = existsSync(lexical) ? realpathSync(lexical) : lexical;
  if ((!within(importRoot, lexical) && !within(rootReal, lexical)) || !within(rootReal, real)) {
    // The client's path only: the server's own directories stay out of the answer.
    throw new LocationError('LOCATION_FORBIDDEN', `file:// loads only from under the import root; "${path.slice(0, 200)}" is outside the import root`);
  }
  return real;
}

function within(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!isAbsolute(rel) && !rel.split(sep).includes('..'));
}
