/**
 * The firewall's verdict on one request: IP rules first, then the enabled managed rule sets, in
 * the order of MANAGED_RULES (cheap size checks before pattern scans). Pure: the request and the
 * config in, the first matching rule (id and message) or undefined out.
 *
 * `scope` lets the HTTP layer judge a request in two steps: `request` (IP, request line and
 * headers) before the body is read, `body` (body rules only) once it has been; `all` does both.
 */
import { compileFirewall, type CompiledFirewall, type FirewallConfig } from './config.js';
import { checkIpRules, type FirewallVerdict } from './ip-rules.js';
import { InspectedRequest, MANAGED_RULES, type FirewallRequest, type ManagedRule } from './managed-rules.js';

export type { FirewallVerdict } from './ip-rules.js';
export type { FirewallRequest } from './managed-rules.js';
export type InspectionScope = 'all' | 'request' | 'body';

export function inspect(request: FirewallRequest, config: FirewallConfig, scope: InspectionScope = 'all'): FirewallVerdict | undefined {
  const firewall = compileFirewall(config);
  if (scope !== 'body') {
    const ip = checkIpRules(request.clientAddress, firewall);
    if (ip) return ip;
  }
  const rules = enabledRules(firewall)[scope];
  if (rules.length === 0) return undefined;
  const inspected = new InspectedRequest(request);
  const hasBody = request.bodyText !== undefined || request.bodyBytes !== undefined;
  for (const { rule, checkRequest, checkBody } of rules) {
    const reason = checkRequest?.(inspected) ?? (hasBody ? checkBody?.(inspected) : undefined);
    if (reason) return { ruleId: rule.id, message: `${reason} (firewall rule ${rule.id})` };
  }
  return undefined;
}

/** One enabled rule's checks that apply in a scope (a check that does not apply is left out). */
interface ScopedRule {
  rule: ManagedRule;
  checkRequest?: (request: InspectedRequest) => string | undefined;
  checkBody?: (request: InspectedRequest) => string | undefined;
}

/** The enabled rules per scope, in MANAGED_RULES order: worked out once per compiled config, not per request. */
const rulesByFirewall = new WeakMap<CompiledFirewall, Record<InspectionScope, ScopedRule[]>>();

function enabledRules(firewall: CompiledFirewall): Record<InspectionScope, ScopedRule[]> {
  let rules = rulesByFirewall.get(firewall);
  if (!rules) {
    const enabled = MANAGED_RULES.filter((rule) => firewall.managedRules.has(rule.set));
    const scoped = (request: boolean, body: boolean): ScopedRule[] =>
      enabled
        .map((rule) => ({ rule, checkRequest: request ? rule.checkRequest : undefined, checkBody: body ? rule.checkBody : undefined }))
        .filter((r) => r.checkRequest || r.checkBody);
    rules = { all: scoped(true, true), request: scoped(true, false), body: scoped(false, true) };
    rulesByFirewall.set(firewall, rules);
  }
  return rules;
}
