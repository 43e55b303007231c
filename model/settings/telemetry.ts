/**
 * The OpenTelemetry SDK's standard variables, read by the data plane (both modes) and the operator.
 * Tracing is on only when an OTLP endpoint is set; unset, the SDK is never loaded (model/telemetry/).
 */
import { checkedText, choice, optionalWholeNumber, text, type Reader } from './declare.js';

const ALL: readonly Reader[] = ['dataplane', 'function-gateway', 'operator'];

export const OTEL_PROTOCOLS = ['http/protobuf', 'http/json'] as const;
export const OTEL_SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;

const isHttpUrl = (raw: string) => {
  try {
    return ['http:', 'https:'].includes(new URL(raw).protocol);
  } catch {
    return false;
  }
};
const isRatio = (raw: string) => raw.trim() !== '' && Number.isFinite(Number(raw)) && Number(raw) >= 0 && Number(raw) <= 1;
const isAttributeList = (raw: string) => raw.split(',').every((pair) => pair.trim() === '' || /^[^=\s]+=/.test(pair.trim()));

export const TELEMETRY_SETTINGS = {
  OTEL_EXPORTER_OTLP_ENDPOINT: checkedText('an http(s) URL', isHttpUrl, { description: 'OpenTelemetry: the OTLP/HTTP collector (traces go to `<endpoint>/v1/traces`); unset (and no traces endpoint): no tracing, the SDK is not even loaded', readers: ALL }),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: checkedText('an http(s) URL', isHttpUrl, { description: 'OpenTelemetry: the full URL traces are posted to (instead of `OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces`)', readers: ALL }),
  OTEL_EXPORTER_OTLP_PROTOCOL: choice(OTEL_PROTOCOLS, 'http/protobuf', { description: 'OpenTelemetry: the OTLP encoding', readers: ALL }),
  OTEL_SERVICE_NAME: text(undefined, { shownDefault: 'data-access-dataplane, data-access-function-gateway or data-access-operator', description: 'OpenTelemetry: `service.name` of the spans', readers: ALL }),
  OTEL_RESOURCE_ATTRIBUTES: checkedText('comma-separated key=value pairs', isAttributeList, { description: 'OpenTelemetry: more resource attributes (`deployment.environment.name=prod,…`)', readers: ALL }),
  OTEL_TRACES_SAMPLER: choice(OTEL_SAMPLERS, 'parentbased_always_on', { description: 'OpenTelemetry: which traces are recorded', readers: ALL }),
  OTEL_TRACES_SAMPLER_ARG: checkedText('a number from 0 to 1', isRatio, { shownDefault: '1', description: 'OpenTelemetry: the ratio of the `traceidratio` samplers', readers: ALL }),
  OTEL_BSP_SCHEDULE_DELAY: checkedText('a whole number of milliseconds', (raw) => /^\s*\d+\s*$/.test(raw), { shownDefault: '5000', description: 'OpenTelemetry: how long finished spans wait to be sent in one batch', readers: ALL }),
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: optionalWholeNumber({ min: 1, max: 8192 }, { shownDefault: '8192 with http/protobuf, 2048 with http/json', description: 'OpenTelemetry: the most spans sent in one export request (a full batch is sent at once, without waiting; with http/protobuf a batch is also sent at 4 MiB)', readers: ALL }),
};

/** What tracing needs, derived from the variables; undefined when no endpoint is set (tracing off). */
export interface TracingConfig {
  url: string;
  protocol: (typeof OTEL_PROTOCOLS)[number];
  serviceName: string;
  resourceAttributes: Record<string, string>;
  sampler: (typeof OTEL_SAMPLERS)[number];
  ratio: number;
  scheduleDelayMs: number;
  /** Spans per export request (unset: by protocol, tracing.ts). */
  exportBatchSpans?: number;
}

type TelemetrySettings = { readonly [K in keyof typeof TELEMETRY_SETTINGS]: (typeof TELEMETRY_SETTINGS)[K]['fallback'] };

/** `a=b,c=d` (values percent-decoded, as the specification says) into attributes. */
export function resourceAttributesOf(raw: string | undefined): Record<string, string> {
  const attributes: Record<string, string> = {};
  for (const pair of (raw ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    const value = pair.slice(at + 1).trim();
    try {
      attributes[pair.slice(0, at).trim()] = decodeURIComponent(value);
    } catch {
      attributes[pair.slice(0, at).trim()] = value;
    }
  }
  return attributes;
}

export function tracingConfigOf(s: TelemetrySettings, defaultServiceName: string): TracingConfig | undefined {
  const endpoint = s.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (s.OTEL_EXPORTER_OTLP_ENDPOINT ? `${s.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces` : undefined);
  if (!endpoint) return undefined;
  const resourceAttributes = resourceAttributesOf(s.OTEL_RESOURCE_ATTRIBUTES);
  return {
    url: endpoint,
    protocol: s.OTEL_EXPORTER_OTLP_PROTOCOL,
    serviceName: s.OTEL_SERVICE_NAME || resourceAttributes['service.name'] || defaultServiceName,
    resourceAttributes,
    sampler: s.OTEL_TRACES_SAMPLER,
    ratio: s.OTEL_TRACES_SAMPLER_ARG === undefined ? 1 : Number(s.OTEL_TRACES_SAMPLER_ARG),
    scheduleDelayMs: s.OTEL_BSP_SCHEDULE_DELAY === undefined ? 5000 : Number(s.OTEL_BSP_SCHEDULE_DELAY),
    exportBatchSpans: s.OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
  };
}

/** The variables the operator hands on to the workloads it renders (each workload names its own service). */
export function workloadTelemetryEnv(s: TelemetrySettings): { name: string; value: string }[] {
  const names = ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_RESOURCE_ATTRIBUTES', 'OTEL_TRACES_SAMPLER', 'OTEL_TRACES_SAMPLER_ARG', 'OTEL_BSP_SCHEDULE_DELAY', 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE'] as const;
  if (!s.OTEL_EXPORTER_OTLP_ENDPOINT && !s.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return [];
  return names.flatMap((name) => (s[name] === undefined ? [] : [{ name, value: String(s[name]) }]));
}
