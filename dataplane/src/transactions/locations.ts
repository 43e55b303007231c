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

/** True for a globally routable unicast address; false for private, loopback, link-local, metadata, multicast and reserved ranges. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return isPublicV4(address);
  if (family !== 6) return false;
  const words = ipv6Words(address);
  if (!words) return false;
  const [w0, w1] = words;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  if (words.slice(0, 5).every((w) => w === 0) && (words[5] === 0xffff || words[5] === 0)) {
    // ::ffff:a.b.c.d (IPv4-mapped) reaches the IPv4 address; ::a.b.c.d (IPv4-compatible, ::, ::1) never is public.
    return words[5] === 0xffff && isPublicV4(v4(words[6], words[7]));
  }
  if (w0 === 0x64 && w1 === 0xff9b) return false; // NAT64 64:ff9b::/96 and 64:ff9b:1::/48: reach any IPv4, private ones too
  if (w0 === 0x2002) return isPublicV4(v4(w1, words[2])); // 6to4 2002:V4ADDR::/48 reaches the embedded IPv4
  if (w0 === 0x2001 && w1 === 0) {
    // Teredo 2001:0::/32: the server's IPv4 in plain, the client's XOR-ed with ffff:ffff; both must be public.
    return isPublicV4(v4(words[2], words[3])) && isPublicV4(v4(words[6] ^ 0xffff, words[7] ^ 0xffff));
  }
  if (w0 === 0x2001 && w1 === 0xdb8) return false; // documentation
  if (w0 === 0x2001 && w1 >= 0x10 && w1 <= 0x2f) return false; // ORCHID
  if (w0 === 0x100 && w1 === 0 && words[2] === 0 && words[3] === 0) return false; // discard-only 100::/64
  if ((w0 & 0xfe00) === 0xfc00) return false; // fc00::/7 unique local (fd00:ec2::254, AWS's metadata, among them)
  if ((w0 & 0xffc0) === 0xfe80) return false; // fe80::/10 link-local
  if ((w0 & 0xff00) === 0xff00) return false; // multicast
  return (w0 & 0xe000) === 0x2000; // 2000::/3 global unicast
}

/** An IPv6 address (any spelling: `::`, embedded IPv4, zone) as its eight 16-bit words. */
export function ipv6Words(address: string): number[] | undefined {
  let text = address.toLowerCase().replace(/%.*$/, '');
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number);
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const parse = (part: string) => (part ? part.split(':').map((w) => parseInt(w, 16)) : []);
  const head = parse(halves[0]);
  const tail = halves.length === 2 ? parse(halves[1]) : [];
  const fill = 8 - head.length - tail.length;
  if (halves.length === 1 ? head.length !== 8 : fill < 0) return undefined;
  const words = [...head, ...Array<number>(halves.length === 2 ? fill : 0).fill(0), ...tail];
  return words.length === 8 && words.every((w) => Number.isInteger(w) && w >= 0 && w <= 0xffff) ? words : undefined;
}

function isPublicV4(address: string): boolean {
  const [a, b, c] = address.split('.').map(Number);
  if (a === 0 || a === 10 || a === 127 || a >= 224) return false; // this network, private, loopback, multicast/reserved
  if (a === 169 && b === 254) return false; // link-local, cloud metadata (169.254.169.254)
  if (a === 172 && b >= 16 && b <= 31) return false;
  if (a === 192 && b === 168) return false;
  if (a === 100 && b >= 64 && b <= 127) return false; // carrier-grade NAT
  if (a === 192 && b === 0 && (c === 0 || c === 2)) return false; // IETF, documentation
  if (a === 192 && b === 88 && c === 99) return false; // 6to4 relay anycast (deprecated): reaches whatever relay answers
  if (a === 198 && (b === 18 || b === 19)) return false; // benchmarking
  if (a === 198 && b === 51 && c === 100) return false;
  if (a === 203 && b === 0 && c === 113) return false;
  return true;
}
