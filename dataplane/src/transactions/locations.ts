/**
 * Where a bulk load may read from. `file://` only under the import root (after resolving `..` and
 * symlinks), `s3://bucket/key-or-prefix`, and `https://` only to public addresses: a host that
 * resolves to a private, loopback, link-local, metadata or otherwise special address is refused,
 * and the connection is made to the address that was checked (no second lookup to rebind).
 */
import { lookup } from 'node:dns/promises';
import { existsSync, realpathSync } from 'node:fs';
import { isIP } from 'node:net';
import { join, relative, resolve, sep, isAbsolute } from 'node:path';
import { fileURLToPath } from 'node:url';

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

/** The import root: `DAS_IMPORT_ROOT`, else `DATA_DIR/imports`. */
export function importRootOf(env: NodeJS.ProcessEnv, dataDir: string): string {
  return resolve(env.DAS_IMPORT_ROOT || join(dataDir, 'imports'));
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
      const key = decodeURIComponent(url.pathname.replace(/^\//, ''));
      if (!url.hostname) throw new LocationError('INVALID_LOCATION', 's3:// needs a bucket: s3://bucket/key-or-prefix');
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
    throw new LocationError('LOCATION_FORBIDDEN', `file:// loads only from under the import root (${importRoot}); "${path.slice(0, 200)}" is outside it`);
  }
  return real;
}

function within(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!isAbsolute(rel) && !rel.split(sep).includes('..'));
}

/** True for a globally routable unicast address; false for private, loopback, link-local, metadata, multicast and reserved ranges. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return isPublicV4(address);
  if (family !== 6) return false;
  const a = address.toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (mapped) return isPublicV4(mapped[1]);
  if (a === '::' || a === '::1') return false;
  const first = parseInt(a.split(':')[0] || '0', 16);
  if ((first & 0xfe00) === 0xfc00) return false; // fc00::/7 unique local
  if ((first & 0xffc0) === 0xfe80) return false; // fe80::/10 link-local
  if ((first & 0xff00) === 0xff00) return false; // multicast
  if (a.startsWith('64:ff9b:') || a.startsWith('2001:db8:') || a.startsWith('::')) return false; // NAT64 (may reach private v4), documentation, other embedded v4
  if (a.startsWith('fd00:ec2::254')) return false; // AWS IPv6 metadata
  return (first & 0xe000) === 0x2000; // 2000::/3 global unicast
}

function isPublicV4(address: string): boolean {
  const [a, b, c] = address.split('.').map(Number);
  if (a === 0 || a === 10 || a === 127 || a >= 224) return false; // this network, private, loopback, multicast/reserved
  if (a === 169 && b === 254) return false; // link-local, cloud metadata (169.254.169.254)
  if (a === 172 && b >= 16 && b <= 31) return false;
  if (a === 192 && b === 168) return false;
  if (a === 100 && b >= 64 && b <= 127) return false; // carrier-grade NAT
  if (a === 192 && b === 0 && (c === 0 || c === 2)) return false; // IETF, documentation
  if (a === 198 && (b === 18 || b === 19)) return false; // benchmarking
  if (a === 198 && b === 51 && c === 100) return false;
  if (a === 203 && b === 0 && c === 113) return false;
  return true;
}
