/**
 * OpenTelemetry traces, shared by the data plane (both modes) and the operator. `startTracing` loads
 * the SDK (dynamic imports: with no endpoint configured it is never loaded) and makes the hooks below
 * record; until then every hook is one check of `active` and a direct call, so tracing off costs
 * nothing measurable.
 *
 * Spans carry no record data and no statement values: names are route templates and operation names.
 */
import type * as Api from '@opentelemetry/api';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { TracingConfig } from '../settings/telemetry.js';
import { AttributeTemplate } from './attribute-template.js';
import type { LeanSpan } from './lean-span.js';

export type SpanAttributes = Api.Attributes;
export type Span = Api.Span;
type Headers = Record<string, string | string[] | undefined>;

interface Active {
  api: typeof Api;
  tracer: Api.Tracer;
  /** `api.trace.setSpan`, in one small object (lean-span.ts). */
  withSpan: (parent: Api.Context, span: Span) => Api.Context;
  /** The lean tracer's span class: its spans take attribute templates by reference. */
  leanSpan: typeof LeanSpan;
  /**
   * The global context manager this module installed, called directly on the request path: the
   * API's `context.active()`/`context.with` look it up in the global registry (with a version
   * check) on every call.
   */
  contexts: Api.ContextManager;
  /** The options of the request path's spans, made once (read only by the tracers). */
  serverOptions: Api.SpanOptions;
  kindOptions: Record<SpanKindName, Api.SpanOptions>;
}

let active: Active | undefined;

/**
 * Spans per export request unless OTEL_BSP_MAX_EXPORT_BATCH_SIZE says, and the most waiting to be
 * exported (more are dropped and counted), by protocol. http/protobuf: 8192 spans a request (about
 * 2 MiB, and never over 4 MiB: encoding-processor.ts MAX_BATCH_BYTES), four batches queued as
 * bytes. Each export costs the loaded process far more than its bytes (an HTTP request, its
 * response, the transport's promises and timers): 8192 against 2048 spans a request took tracing
 * at full load from ×1.14 to ×1.04 CPU per read (docs/performance.md, "Tracing: fewer, larger exports").
 * http/json keeps the SDK's processor, which queues span objects (~1–2 KiB of heap each): 2048.
 */
const EXPORT_BATCH_SPANS = { 'http/protobuf': 8192, 'http/json': 2048 } as const;
const QUEUED_SPANS = { 'http/protobuf': 32768, 'http/json': 8192 } as const;

/** The instrumentation scope of every span. */
const TRACER_NAME = 'data-access';

/** The provider's span limits (the SDK's defaults, written out: the lean tracer applies the same). */
const SPAN_LIMITS = {
  attributeCountLimit: 128,
  attributeValueLengthLimit: Infinity,
  eventCountLimit: 128,
  linkCountLimit: 128,
  attributePerEventCountLimit: 128,
  attributePerLinkCountLimit: 128,
};

/** True once `startTracing` ran: callers that would build attributes check it first. */
export const tracingOn = (): boolean => active !== undefined;

export interface Tracing {
  /** Sends what is still buffered, then stops (the process's last step before exit). */
  stop(): Promise<void>;
}

/**
 * Loads the SDK and starts exporting, as `config` says (settings/telemetry.ts). Spans are recorded
 * by lean-span.ts; `recorder: 'sdk'` records them with the SDK's own tracer instead (the test that
 * proves both export the same spans, lean-span.test.ts).
 */
export async function startTracing(config: TracingConfig, onExportError: (message: string) => void, recorder: 'lean' | 'sdk' = 'lean'): Promise<Tracing> {
  const [api, core, sdk, resources, contextHooks, ids, lean] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/core'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/context-async-hooks'),
    import('./ids.js'),
    import('./lean-span.js'),
  ]);
  const ratio = new sdk.TraceIdRatioBasedSampler(config.ratio);
  const root = {
    always_on: new sdk.AlwaysOnSampler(),
    always_off: new sdk.AlwaysOffSampler(),
    traceidratio: ratio,
    parentbased_always_on: new sdk.AlwaysOnSampler(),
    parentbased_always_off: new sdk.AlwaysOffSampler(),
    parentbased_traceidratio: ratio,
  }[config.sampler];
  const sampler = config.sampler.startsWith('parentbased_') ? new sdk.ParentBasedSampler({ root }) : root;
  const resource = resources.resourceFromAttributes({ ...config.resourceAttributes, 'service.name': config.serviceName });
  // Ids cut from a pool of random bytes: the SDK's generator calls Math.random per 4 bytes, per id.
  const idGenerator = ids.poolIdGenerator();
  // Bigger batches than the SDK's 512: fewer export requests (each one an HTTP request and its
  // encoding's fixed cost on the event loop) when every request is sampled; spans queued longer
  // were measured to cost no more collections (docs/performance.md). The queue stays bounded.
  const batching = { scheduledDelayMillis: config.scheduleDelayMs, maxExportBatchSize: config.exportBatchSpans ?? EXPORT_BATCH_SPANS[config.protocol], maxQueueSize: QUEUED_SPANS[config.protocol] };
  // http/protobuf: spans encoded as they end into their batch (encoding-processor.ts: the same
  // batching, nothing queued on the heap), sent by the SDK's transport; http/json: the SDK's
  // processor and exporter as they are.
  const processor: SpanProcessor =
    config.protocol === 'http/json'
      ? new sdk.BatchSpanProcessor(new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter({ url: config.url }), batching)
      : new (await import('./encoding-processor.js')).EncodingBatchProcessor(new (await import('./otlp-exporter.js')).ProtobufBatchExporter(config.url), batching);
  const provider = new sdk.BasicTracerProvider({ resource, sampler, idGenerator, spanLimits: SPAN_LIMITS, spanProcessors: [processor] });
  // An unreachable collector is reported, never thrown into a request.
  let reported = false;
  api.diag.setLogger(
    {
      error: (message: string) => {
        if (!reported) onExportError(message);
        reported = true;
      },
      warn: () => undefined,
      info: () => undefined,
      debug: () => undefined,
      verbose: () => undefined,
    },
    api.DiagLogLevel.ERROR,
  );
  const contexts = new contextHooks.AsyncLocalStorageContextManager().enable();
  api.context.setGlobalContextManager(contexts);
  api.propagation.setGlobalPropagator(new core.W3CTraceContextPropagator());
  api.trace.setGlobalTracerProvider(provider);
  // The provider's parts, recorded by lean spans (lean-span.ts) instead of the SDK's SpanImpl.
  const scope = { name: TRACER_NAME, version: undefined, schemaUrl: undefined };
  active = {
    api,
    tracer: recorder === 'sdk' ? provider.getTracer(TRACER_NAME) : new lean.LeanTracer({ resource, scope, sampler, idGenerator, processor, limits: SPAN_LIMITS }),
    withSpan: recorder === 'sdk' ? api.trace.setSpan : lean.contextWithSpan,
    leanSpan: lean.LeanSpan,
    contexts,
    serverOptions: Object.freeze({ kind: api.SpanKind.SERVER }),
    kindOptions: { internal: Object.freeze({ kind: api.SpanKind.INTERNAL }), client: Object.freeze({ kind: api.SpanKind.CLIENT }), consumer: Object.freeze({ kind: api.SpanKind.CONSUMER }) },
  };
  return {
    async stop() {
      active = undefined;
      await provider.shutdown();
    },
  };
}

/** A SERVER span continuing the caller's trace (W3C `traceparent`/`tracestate`); undefined when tracing is off. */
export function startServerSpan(headers: Headers, name: string, attributes: SpanAttributes | AttributeTemplate): Span | undefined {
  if (!active) return undefined;
  const { api, tracer } = active;
  // Without a traceparent the W3C propagator extracts nothing (tracestate alone is ignored).
  const parent = headers.traceparent === undefined ? api.ROOT_CONTEXT : api.propagation.extract(api.ROOT_CONTEXT, headers);
  return withAttributes(tracer.startSpan(name, active.serverOptions, parent), attributes);
}

/**
 * Sets `attributes` on a recorded span, once validated (the SDK's setAttribute). Given to
 * `startSpan` they would be sanitised twice more (copied for the sampler, then merged with its
 * answer) and built for unsampled spans too; none of the samplers here reads them.
 */
function withAttributes(span: Span, attributes: SpanAttributes | AttributeTemplate | (() => SpanAttributes)): Span {
  if (!span.isRecording()) return span;
  if (attributes instanceof AttributeTemplate) {
    // A lean span keeps the template by reference (attribute-template.ts); any other span gets its attributes.
    if (span instanceof active!.leanSpan) span.useTemplate(attributes);
    else span.setAttributes(attributes.attributes);
  } else span.setAttributes(typeof attributes === 'function' ? attributes() : attributes);
  return span;
}

/** Runs `fn` with `span` as the current span, so the spans started inside are its children. */
export function withSpan<T>(span: Span | undefined, fn: () => T): T {
  if (!active || !span) return fn();
  const { contexts } = active;
  return contexts.with(active.withSpan(contexts.active(), span), fn);
}

/** `withSpan` for a function of two arguments, passed through (no closure per call: the request path's). */
export function withSpanCall<A, B, T>(span: Span, fn: (a: A, b: B) => T, a: A, b: B): T {
  if (!active) return fn(a, b);
  const { contexts } = active;
  return contexts.with(active.withSpan(contexts.active(), span), fn, undefined, a, b);
}

/** Ends a span; with an error (or an `error.type` text), its status is ERROR. */
export function endSpan(span: Span, error?: unknown): void {
  if (error !== undefined && active) {
    const code = (error as { code?: unknown } | undefined)?.code;
    const type = typeof error === 'string' ? error : code !== undefined ? String(code) : error instanceof Error ? error.name : 'error';
    span.setStatus({ code: active.api.SpanStatusCode.ERROR });
    span.setAttribute('error.type', type);
  }
  span.end();
}

export type SpanKindName = 'internal' | 'client' | 'consumer';

export interface InSpanOptions {
  kind?: SpanKindName;
  /** Contexts of other traces this work follows from (a subscription delivery's write). */
  links?: readonly TraceParent[];
  /**
   * Only as the child of a recorded span (store calls): with none, `fn` runs without a span, and
   * nothing is built for one (an unsampled request's store calls cost one lookup).
   */
  childOnly?: boolean;
  /**
   * False: `fn` does not run with the span as the current one (no `context.with`, so no context
   * manager work per call), for leaf spans nothing inside starts a span of or reads the context.
   */
  current?: boolean;
}

/**
 * Runs `fn` in a child span of the current one (kind `internal` by default). `attributes` is a
 * function (or a template made once) so that nothing is built when tracing is off or the span is
 * not recorded. Not async: one `then` on `fn`'s promise instead of an async frame (it runs for
 * every store call of a traced request); `fn` throwing is a rejected promise, as from an async function.
 */
export function inSpan<T>(name: string, attributes: AttributeTemplate | (() => SpanAttributes), fn: () => Promise<T>, options: InSpanOptions = {}): Promise<T> {
  if (!active) return fn();
  const { api, tracer, withSpan: contextWith, contexts } = active;
  const parent = contexts.active();
  if (options.childOnly && !api.trace.getSpan(parent)?.isRecording()) return fn();
  const span = withAttributes(tracer.startSpan(name, options.links === undefined ? active.kindOptions[options.kind ?? 'internal'] : { kind: kindOf(api, options.kind), links: linksOf(api, options.links) }, parent), attributes);
  let running: Promise<T>;
  try {
    running = options.current === false ? fn() : contexts.with(contextWith(parent, span), fn);
  } catch (err) {
    endSpan(span, err);
    return Promise.reject(err);
  }
  return running.then(
    (result) => {
      span.end();
      return result;
    },
    (err: unknown) => {
      endSpan(span, err);
      throw err;
    },
  );
}

function kindOf(api: typeof Api, kind: SpanKindName | undefined): Api.SpanKind {
  return kind === 'client' ? api.SpanKind.CLIENT : kind === 'consumer' ? api.SpanKind.CONSUMER : api.SpanKind.INTERNAL;
}

function linksOf(api: typeof Api, links: readonly TraceParent[] | undefined): Api.Link[] | undefined {
  return links?.flatMap((link) => {
    const context = api.trace.getSpanContext(api.propagation.extract(api.ROOT_CONTEXT, link));
    return context && api.isSpanContextValid(context) ? [{ context }] : [];
  });
}

/**
 * A span of a moment, started and ended at once, in a trace of its own (a subscription delivery:
 * its links say which write it follows from). A no-op when tracing is off.
 */
export function recordRootSpan(name: string, attributes: () => SpanAttributes, options: Omit<InSpanOptions, 'childOnly'> = {}): void {
  if (!active) return;
  const { api, tracer } = active;
  withAttributes(tracer.startSpan(name, { kind: kindOf(api, options.kind), links: linksOf(api, options.links), root: true }), attributes).end();
}

/** W3C trace-context headers of a span (what a change remembers of the write that made it). */
export interface TraceParent {
  traceparent: string;
  tracestate?: string;
}

/** Adds `traceparent`/`tracestate` of the current span to outgoing headers (no-op when tracing is off). */
export function injectTraceContext(headers: Record<string, string>): void {
  if (!active) return;
  active.api.propagation.inject(active.api.context.active(), headers);
}

/** The current span's trace context as headers, or undefined (tracing off, or no span). */
export function currentTraceParent(): TraceParent | undefined {
  if (!active) return undefined;
  const carrier: Record<string, string> = {};
  active.api.propagation.inject(active.api.context.active(), carrier);
  return carrier.traceparent ? (carrier as unknown as TraceParent) : undefined;
}
