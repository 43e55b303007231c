/**
 * What JSON Schema (and a 1.20 API server's CRD schema) cannot say about a workload's sizing:
 * autoscaling bounds in order, a request for every resource the autoscaler targets, requests not
 * above limits. The operator reports these in the Environment's conditions (invalid).
 */
import type { Quantity, ResourceRequirements, WorkloadSpec } from './types.js';

export interface WorkloadProblem {
  path: string;
  message: string;
}

/** CPU percentage the autoscaler aims at when the spec names none. */
export const DEFAULT_TARGET_CPU_PERCENT = 70;
export const DEFAULT_MIN_REPLICAS = 1;

/**
 * The data plane's resources when the spec names none. The limit leaves room for the default
 * subscription cap: ~38 KB of RSS per idle subscriber (bench:subscriptions) × 10,000 ≈ 370 MiB on
 * top of a ~100 MiB baseline, plus queued events and request bursts (512Mi left a busy replica to
 * the OOM killer). The CPU request is what the autoscaler's percentage is of.
 */
export const DATAPLANE_DEFAULT_RESOURCES: ResourceRequirements = { requests: { cpu: '250m', memory: '256Mi' }, limits: { memory: '768Mi' } };
/** The function gateway only forwards HTTP. */
export const FUNCTION_GATEWAY_DEFAULT_RESOURCES: ResourceRequirements = { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '256Mi' } };

const SUFFIXES: Record<string, number> = {
  n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
};

/** A quantity's value (cores, bytes…), or undefined when it is not one (the schema reports that). */
export function quantityValue(quantity: Quantity): number | undefined {
  if (typeof quantity === 'number') return Number.isFinite(quantity) ? quantity : undefined;
  const match = /^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:([eE][+-]?[0-9]+(?:\.[0-9]*)?)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$/.exec(quantity);
  if (!match) return undefined;
  if (match[2]) return Number(match[1] + match[2]);
  return Number(match[1]) * SUFFIXES[match[3] ?? ''];
}

/** The request Kubernetes applies for `resource`: the request, else the limit (the API server's defaulting). */
function effectiveRequest(resources: ResourceRequirements, resource: string): Quantity | undefined {
  return resources.requests?.[resource] ?? resources.limits?.[resource];
}

/**
 * `defaults`: the resources the workload gets when the spec names none (a spec's `resources`
 * replaces them whole, as in a Pod).
 */
export function checkWorkload(spec: WorkloadSpec | undefined, defaults: ResourceRequirements, base: string): WorkloadProblem[] {
  if (!spec) return [];
  const problems: WorkloadProblem[] = [];
  const resources = spec.resources ?? defaults;
  for (const [resource, request] of Object.entries(resources.requests ?? {})) {
    const limit = resources.limits?.[resource];
    if (limit === undefined) continue;
    const [r, l] = [quantityValue(request), quantityValue(limit)];
    if (r !== undefined && l !== undefined && r > l) {
      problems.push({ path: `${base}.resources.requests.${resource}`, message: `request ${request} is above the limit ${limit}` });
    }
  }
  const scaling = spec.autoscaling;
  if (scaling) {
    const min = scaling.minReplicas ?? DEFAULT_MIN_REPLICAS;
    if (min > scaling.maxReplicas) {
      problems.push({ path: `${base}.autoscaling.minReplicas`, message: `minReplicas (${min}) must not exceed maxReplicas (${scaling.maxReplicas})` });
    }
    const targets: [string, string | undefined][] = [
      ['cpu', 'targetCPUUtilizationPercentage'],
      ['memory', scaling.targetMemoryUtilizationPercentage === undefined ? undefined : 'targetMemoryUtilizationPercentage'],
    ];
    for (const [resource, target] of targets) {
      if (target && effectiveRequest(resources, resource) === undefined) {
        problems.push({ path: `${base}.autoscaling.${target}`, message: `a utilization target needs resources.requests.${resource} (the percentage is of the request)` });
      }
    }
  }
  return problems;
}

const DECIMAL_SUFFIXES: Record<number, string> = { [-9]: 'n', [-6]: 'u', [-3]: 'm', 0: '', 3: 'k', 6: 'M', 9: 'G', 12: 'T', 15: 'P', 18: 'E' };
const BINARY_SUFFIXES = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];
const NANO = 10n ** 9n;

/** The value in nano units, rounded up (the API server keeps no precision below nano). */
function nanos(digits: string, exponent: number): bigint {
  const [whole, fraction = ''] = digits.split('.');
  let value = BigInt(whole + fraction || '0');
  let scale = exponent + 9 - fraction.length;
  if (scale >= 0) return value * 10n ** BigInt(scale);
  const divisor = 10n ** BigInt(-scale);
  const rounded = value / divisor;
  return value % divisor === 0n ? rounded : rounded + 1n;
}

function decimalForm(valueNanos: bigint, exponentSuffix: boolean): string {
  if (valueNanos === 0n) return '0';
  let mantissa = valueNanos;
  let exponent = -9;
  while (mantissa % 1000n === 0n && (exponentSuffix || exponent < 18)) {
    mantissa /= 1000n;
    exponent += 3;
  }
  if (exponentSuffix) return exponent === 0 ? `${mantissa}` : `${mantissa}e${exponent}`;
  return `${mantissa}${DECIMAL_SUFFIXES[exponent]}`;
}

/**
 * A quantity as the API server stores it ("1024Mi" → "1Gi", "0.5" → "500m", 2 → "2"): the operator
 * renders this form, so that comparing what it wants with what the server holds finds no difference
 * and never writes the same Deployment again. Keeps the input's notation (binary, decimal, exponent),
 * as resource.Quantity's canonical form does; undefined when it is not a quantity.
 */
export function canonicalQuantity(quantity: Quantity): string | undefined {
  const text = typeof quantity === 'number' ? String(quantity) : quantity;
  const match = /^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$/.exec(text);
  if (!match) return undefined;
  const [, digits, exponentText, suffix = ''] = match;
  if (exponentText !== undefined) return decimalForm(nanos(digits, Number(exponentText)), true);
  const binary = BINARY_SUFFIXES.indexOf(suffix);
  if (binary > 0) {
    const bytesNanos = nanos(digits, 0) * 1024n ** BigInt(binary);
    // Whole numbers of at least 1Ki keep a binary suffix (the largest that divides them); the rest is decimal.
    if (bytesNanos % NANO === 0n && bytesNanos >= 1024n * NANO) {
      let value = bytesNanos / NANO;
      let power = 0;
      while (value % 1024n === 0n && power < BINARY_SUFFIXES.length - 1) {
        value /= 1024n;
        power++;
      }
      return `${value}${BINARY_SUFFIXES[power]}`;
    }
    return decimalForm(bytesNanos, false);
  }
  const exponent = Number(Object.entries(DECIMAL_SUFFIXES).find(([, s]) => s === suffix)![0]);
  return decimalForm(nanos(digits, exponent), false);
}

/** Resources with every quantity in the API server's canonical form. */
export function canonicalResources(resources: ResourceRequirements): { requests?: Record<string, string>; limits?: Record<string, string> } {
  const canon = (q: Record<string, Quantity> | undefined) => q && Object.fromEntries(Object.entries(q).map(([k, v]) => [k, canonicalQuantity(v) ?? String(v)]));
  return { ...(resources.requests ? { requests: canon(resources.requests) } : {}), ...(resources.limits ? { limits: canon(resources.limits) } : {}) };
}
