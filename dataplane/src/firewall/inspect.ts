/**
 * The firewall's verdict on one request: IP rules first, then the enabled managed rule sets, in
 * the order of MANAGED_RULES (cheap size checks before pattern scans). Pure: the request and the
 * config in, the first matching rule (id and message) or undefined out.
 *
 * `scope` lets the HTTP layer judge a request in two steps: `request` (IP, request line and
 * headers) before the body is read, `body` (body rules only) once it has been; `all` does both.
 */
import { compileFirewall, type FirewallConfig } from './config.js';
import { checkIpRules, type FirewallVerdict } from './ip-rules.js';
import { InspectedRequest, MANAGED_RULES, type FirewallRequest } from './managed-rules.js';

export type { FirewallVerdict } from './ip-rules.js';
export type { FirewallRequest } from './managed-rules.js';
export type InspectionScope = 'all' | 'request' | 'body';

export function inspect(request: FirewallRequest, config: FirewallConfig, scope: InspectionScope = 'all'): FirewallVerdict | undefined {
  const firewall = compileFirewall(config);
  if (scope !== 'body') {
    const ip = checkIpRules(request.clientAddress, firewall);
    if (ip) return ip;
  }
  if (firewall.managedRules.size === 0) return undefined;
  const inspected = new InspectedRequest(request);
  const hasBody = request.bodyText !== undefined || request.bodyBytes !== undefined;
  for (const rule of MANAGED_RULES) {
    if (!firewall.managedRules.has(rule.set)) continue;
    const reason = (scope !== 'body' ? rule.checkRequest?.(inspected) : undefined) ?? (scope !== 'request' && hasBody ? rule.checkBody?.(inspected) : undefined);
    if (reason) return { ruleId: rule.id, message: `${reason} (firewall rule ${rule.id})` };
  }
  return undefined;
}
