/**
 * The client address the firewall judges: the socket peer, unless the peer is a trusted proxy
 * (`trustedProxies`), in which case `X-Forwarded-For` is walked from right to left, skipping
 * trusted proxies; the first hop that is not a trusted proxy is the client. A client cannot forge
 * its way past this: every proxy appends the address it saw, so the hops left of the first
 * untrusted one are never consulted. When every hop is trusted, the leftmost one is the client.
 *
 * IPv4-mapped IPv6 addresses (`::ffff:192.0.2.1`, as dual-stack sockets report IPv4 peers) are
 * normalised to IPv4.
 */
import { isIP } from 'node:net';
import { normalizeAddress, type CidrSet } from '../../../model/cidr.js';

/** At most this many X-Forwarded-For hops are examined (a longer chain is not walked further). */
export const MAX_FORWARDED_HOPS = 32;

export function resolveClientAddress(
  remoteAddress: string | undefined,
  forwardedFor: string | string[] | undefined,
  trustedProxies: CidrSet,
): string {
  const peer = normalizeAddress(stripZone(remoteAddress ?? ''));
  if (!forwardedFor || trustedProxies.size === 0 || !trustedProxies.contains(peer)) return peer;
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor)
    .split(',')
    .map((hop) => hop.trim())
    .filter((hop) => hop !== '');
  let client = peer;
  for (let i = hops.length - 1, seen = 0; i >= 0 && seen < MAX_FORWARDED_HOPS; i--, seen++) {
    client = parseHop(hops[i]);
    // An unparseable hop is not an address of a trusted proxy: it is the client (and matches no range).
    if (isIP(client) === 0 || !trustedProxies.contains(client)) return client;
  }
  return client;
}

/** Accepts `a.b.c.d`, `a.b.c.d:port`, `x::y`, `[x::y]`, `[x::y]:port`; anything else is returned as is. */
export function parseHop(hop: string): string {
  let value = hop.replace(/^"|"$/g, '');
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(value);
  if (bracketed) value = bracketed[1];
  else if (/^\d+\.\d+\.\d+\.\d+:\d+$/.test(value)) value = value.slice(0, value.lastIndexOf(':'));
  return normalizeAddress(stripZone(value));
}

function stripZone(address: string): string {
  const percent = address.indexOf('%');
  return percent >= 0 && address.includes(':') ? address.slice(0, percent) : address;
}
