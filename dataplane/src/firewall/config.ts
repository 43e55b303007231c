/** The API gateway firewall's config (rendered from the Environment) and its compiled form. */
import { CidrSet } from '../../../model/cidr.js';
import type { EnvironmentConfig, ManagedRuleSet } from '../../../model/types.js';
import { WeakCache } from '../weak-cache.js';

export type FirewallConfig = EnvironmentConfig['gateways']['api']['firewall'];

export interface CompiledFirewall {
  allowed: CidrSet;
  blocked: CidrSet;
  trustedProxies: CidrSet;
  managedRules: ReadonlySet<ManagedRuleSet>;
}

const compiled = new WeakCache<FirewallConfig, CompiledFirewall>();

/**
 * Parses the CIDR lists once per config object (a hot-reloaded config is a new object, so it is
 * compiled afresh). Throws on an invalid CIDR: the firewall fails closed rather than open.
 */
export function compileFirewall(config: FirewallConfig): CompiledFirewall {
  let result = compiled.get(config);
  if (!result) {
    result = {
      allowed: new CidrSet(config.ipAddresses.allowed),
      blocked: new CidrSet(config.ipAddresses.blocked),
      trustedProxies: new CidrSet(config.trustedProxies),
      managedRules: new Set(config.managedRules),
    };
    compiled.set(config, result);
  }
  return result;
}
