/**
 * Containment of CIDR ranges (IPv4 and IPv6), for turning the API gateway firewall into
 * NetworkPolicy ipBlocks: Kubernetes rejects an `except` that is not a strict subset of its `cidr`.
 */
import { BlockList } from 'node:net';
import { parseCidr, type Cidr } from '../../../model/cidr.js';

function mustParse(range: string): Cidr {
  const cidr = parseCidr(range);
  if (!cidr) throw new Error(`invalid CIDR range: ${JSON.stringify(range)}`);
  return cidr;
}

/** Whether every address of `inner` is inside `outer` (equal ranges count as contained). */
export function cidrContains(outer: string, inner: string): boolean {
  const o = mustParse(outer);
  const i = mustParse(inner);
  if (o.family !== i.family || i.prefix < o.prefix) return false;
  // Aligned blocks either nest or are disjoint, so one address of `inner` decides it.
  const list = new BlockList();
  list.addSubnet(o.address, o.prefix, o.family);
  return list.check(i.address, i.family);
}

/** Whether `inner` is inside `outer` and smaller: what NetworkPolicy accepts as an `except`. */
export function cidrStrictlyContains(outer: string, inner: string): boolean {
  return mustParse(inner).prefix > mustParse(outer).prefix && cidrContains(outer, inner);
}

export interface IpBlock {
  cidr: string;
  /** Always present (possibly empty), so that a removed exception shows up as a difference. */
  except: string[];
}

export const ALL_IPV4 = '0.0.0.0/0';
export const ALL_IPV6 = '::/0';

/**
 * The ipBlocks that admit exactly the addresses the firewall allows.
 *
 * With an allowed list, each allowed range becomes a block; the blocked ranges inside it become its
 * `except`, and a block that a blocked range covers entirely is dropped (blocked wins). Without an
 * allowed list, all IPv4 and all IPv6 addresses are allowed but the blocked ones. The result may be
 * empty: then nothing is admitted by address, and the caller must not emit an empty `from`.
 */
export function firewallIpBlocks(allowed: readonly string[], blocked: readonly string[]): IpBlock[] {
  [...allowed, ...blocked].forEach(mustParse); // validated upstream; fail loudly if not
  const ranges = allowed.length > 0 ? allowed : [ALL_IPV4, ALL_IPV6];
  const blocks: IpBlock[] = [];
  for (const range of ranges) {
    if (blocked.some((b) => cidrContains(b, range))) continue;
    const except = unique(blocked.filter((b) => cidrStrictlyContains(range, b)));
    blocks.push({ cidr: range, except });
  }
  return blocks;
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}
