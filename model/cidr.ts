/** CIDR parsing and matching for the API gateway firewall (IPv4 and IPv6). */
import { BlockList, isIP } from 'node:net';

export interface Cidr {
  address: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
}

/** Parses `a.b.c.d/n` or `x:y::z/n`; returns undefined when it is not a valid CIDR. */
export function parseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf('/');
  if (slash <= 0 || slash !== text.lastIndexOf('/')) return undefined;
  const address = text.slice(0, slash);
  const prefixText = text.slice(slash + 1);
  if (!/^[0-9]{1,3}$/.test(prefixText)) return undefined;
  const prefix = Number(prefixText);
  const version = isIP(address);
  if (version === 4 && prefix <= 32) return { address, prefix, family: 'ipv4' };
  if (version === 6 && prefix <= 128) return { address, prefix, family: 'ipv6' };
  return undefined;
}

/** IPv4-mapped IPv6 addresses (::ffff:a.b.c.d), as Node reports IPv4 clients on dual-stack sockets. */
export function normalizeAddress(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped ? mapped[1] : address;
}

/** A set of CIDR ranges with a membership test. */
export class CidrSet {
  private readonly list = new BlockList();
  readonly size: number;

  constructor(ranges: readonly string[]) {
    for (const range of ranges) {
      const cidr = parseCidr(range);
      if (!cidr) throw new Error(`invalid CIDR range: ${JSON.stringify(range)}`);
      this.list.addSubnet(cidr.address, cidr.prefix, cidr.family);
    }
    this.size = ranges.length;
  }

  /** Recent answers: BlockList.check allocates per call, and clients repeat their address. */
  private readonly recent = new Map<string, boolean>();

  contains(address: string): boolean {
    const known = this.recent.get(address);
    if (known !== undefined) return known;
    const normalized = normalizeAddress(address);
    const version = isIP(normalized);
    const result = version !== 0 && this.list.check(normalized, version === 4 ? 'ipv4' : 'ipv6');
    if (this.recent.size >= 4096) this.recent.clear();
    this.recent.set(address, result);
    return result;
  }
}
