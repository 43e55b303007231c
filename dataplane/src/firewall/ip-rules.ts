/**
 * IP address rules of the API gateway firewall: `ipAddresses.blocked` always wins; when
 * `ipAddresses.allowed` is non-empty, every address outside it is blocked too. Both lists take
 * IPv4 and IPv6 CIDR ranges; IPv4-mapped IPv6 clients are matched as IPv4.
 */
import type { CompiledFirewall } from './config.js';

export interface FirewallVerdict {
  /** Stable rule id, e.g. `ip.blocked` or `common.path-traversal`. */
  ruleId: string;
  /** What was blocked and why, fit for the response. Never echoes the offending input. */
  message: string;
}

export const IP_BLOCKED = 'ip.blocked';
export const IP_NOT_ALLOWED = 'ip.not-allowed';

export function checkIpRules(clientAddress: string, firewall: Pick<CompiledFirewall, 'allowed' | 'blocked'>): FirewallVerdict | undefined {
  if (firewall.blocked.size > 0 && firewall.blocked.contains(clientAddress)) {
    return { ruleId: IP_BLOCKED, message: `the client address ${shown(clientAddress)} is in a blocked range of the API gateway firewall` };
  }
  if (firewall.allowed.size > 0 && !firewall.allowed.contains(clientAddress)) {
    return { ruleId: IP_NOT_ALLOWED, message: `the client address ${shown(clientAddress)} is not in the allowed ranges of the API gateway firewall` };
  }
  return undefined;
}

function shown(address: string): string {
  return /^[0-9A-Fa-f.:]{1,45}$/.test(address) ? address : '(unrecognised)';
}
