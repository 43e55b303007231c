/** The API gateway firewall: pure inspection plus a thin Express middleware. */
export { resolveClientAddress } from './client-address.js';
export { compileFirewall, type CompiledFirewall, type FirewallConfig } from './config.js';
export { inspect, type FirewallRequest, type FirewallVerdict, type InspectionScope } from './inspect.js';
export { checkIpRules, IP_BLOCKED, IP_NOT_ALLOWED } from './ip-rules.js';
export { MANAGED_RULES, managedRuleById, type ManagedRule } from './managed-rules.js';
export { firewallBodyMiddleware, firewallMiddleware, type FirewallLogger } from './middleware.js';
