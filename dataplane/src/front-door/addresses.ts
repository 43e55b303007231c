/**
 * Whether an address is public: the check every front door makes before the data plane connects
 * where a request says (bulk-load `https://` sources in transactions/locations.ts, the admin API's
 * DynamoDB endpoints and warehouse URLs in admin/admin-checks.ts), so that no request can make the
 * data plane reach a private network or a cloud metadata address.
 */
import { isIP } from 'node:net';

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
