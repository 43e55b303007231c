/**
 * A span recorder of our own behind the OpenTelemetry SDK: `LeanTracer.startSpan` returns a
 * `LeanSpan` (the API's `Span` and the SDK's `ReadableSpan`) in place of the SDK's `SpanImpl`.
 *
 * Why: measured (docs/performance.md, "A lean span behind the SDK"), the SDK's work for a read's two
 * spans costs 70–85 µs after an idle wait (how a server at a steady rate runs each read) against
 * 16–17 µs for plain objects with the same ids, times and attributes: `Tracer.startSpan` builds
 * per-span metrics records, copies attributes for the sampler, `SpanImpl` takes `Date.now()` and a
 * performance offset, `setAttribute` checks each value through several calls.
 *
 * What stays the SDK's: the sampler (called with the SDK tracer's arguments, its decision, attributes
 * and trace state honoured), the id generator's interface (the pool of ids.ts also says where each
 * id's bytes are, kept for the encoder), resource, span limits (the provider's, applied as
 * `SpanImpl` applies them), the span processor given (with http/json the SDK's
 * `BatchSpanProcessor`; with http/protobuf encoding-processor.ts, the same batching rules), the
 * exporters' transport, the context manager and propagator, `diag` reporting, and
 * `NonRecordingSpan` for spans not recorded. Attributes many spans share can be given as a
 * template (attribute-template.ts), kept by reference. `lean-span.test.ts` proves the exported
 * spans equal the SDK tracer's for the data plane's spans. Loaded only when tracing is on.
 */
import * as api from '@opentelemetry/api';
import { addHrTimes, hrTimeDuration, isAttributeValue, isTimeInput, isTimeInputHrTime, isTracingSuppressed, millisToHrTime, sanitizeAttributes, type InstrumentationScope } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan, Sampler, SpanLimits, SpanProcessor, TimedEvent } from '@opentelemetry/sdk-trace-base';
import type { IdGenerator, PoolIdGenerator } from './ids.js';
import type { AttributeTemplate } from './attribute-template.js';

export interface LeanTracerOptions {
  resource: Resource;
  scope: InstrumentationScope;
  sampler: Sampler;
  idGenerator: IdGenerator;
  /** The provider's processor (the same `BatchSpanProcessor` instance the provider shuts down). */
  processor: SpanProcessor;
  /** The provider's span limits, every one set (as the provider fills them in). */
  limits: Required<SpanLimits>;
}

const UNSET: api.SpanStatus = Object.freeze({ code: api.SpanStatusCode.UNSET });
const NO_LINKS: api.Link[] = Object.freeze([]) as unknown as api.Link[];
const NO_ATTRIBUTES: api.Attributes = Object.freeze({});
const NO_EVENTS: TimedEvent[] = Object.freeze([]) as unknown as TimedEvent[];
const hasOwn = Object.prototype.hasOwnProperty;

/** The API's `Tracer`, deciding and filling spans exactly as the SDK's `Tracer.startSpan` does (minus its no-op span metrics). */
export class LeanTracer implements api.Tracer {
  /** The pool's generator (ids.ts), when it is the one given: it says where each id's bytes are. */
  private readonly pooled: PoolIdGenerator | undefined;

  constructor(readonly options: LeanTracerOptions) {
    this.pooled = 'lastBytes' in options.idGenerator ? (options.idGenerator as PoolIdGenerator) : undefined;
  }

  startSpan(name: string, options: api.SpanOptions = {}, context: api.Context = api.context.active()): api.Span {
    if (options.root) context = api.trace.deleteSpan(context);
    if (isTracingSuppressed(context)) return api.trace.wrapSpanContext(api.INVALID_SPAN_CONTEXT);
    const { sampler, idGenerator } = this.options;
    const parentSpan = api.trace.getSpan(context);
    const parent = parentSpan?.spanContext();
    const { pooled } = this;
    const spanId = idGenerator.generateSpanId();
    const spanIdBytes = pooled?.lastBytes;
    const spanIdAt = pooled === undefined ? 0 : pooled.lastAt;
    let traceId: string;
    let traceState: api.TraceState | undefined;
    let validParent: api.SpanContext | undefined;
    // Where the trace id's and the parent's span id's bytes are, when known (generated here, or a lean parent's).
    let traceIdBytes: Buffer | undefined;
    let traceIdAt = 0;
    let parentIdBytes: Buffer | undefined;
    let parentIdAt = 0;
    // A lean span's ids are valid by construction (generated, or its valid parent's): no hex checks for it.
    if (!parent || !(parentSpan instanceof LeanSpan || api.trace.isSpanContextValid(parent))) {
      traceId = idGenerator.generateTraceId();
      traceIdBytes = pooled?.lastBytes;
      if (pooled !== undefined) traceIdAt = pooled.lastAt;
    } else {
      traceId = parent.traceId;
      traceState = parent.traceState;
      validParent = parent;
      if (parentSpan instanceof LeanSpan) {
        traceIdBytes = parentSpan.traceIdBytes;
        traceIdAt = parentSpan.traceIdAt;
        parentIdBytes = parentSpan.spanIdBytes;
        parentIdAt = parentSpan.spanIdAt;
      }
    }
    const kind = options.kind ?? api.SpanKind.INTERNAL;
    // None given (the data plane's spans but deliveries): the sampler sees shared empty ones (no sampler here writes to them).
    const links = options.links === undefined ? NO_LINKS : options.links.map((link) => ({ context: link.context, attributes: sanitizeAttributes(link.attributes) }));
    const attributes = options.attributes === undefined ? NO_ATTRIBUTES : sanitizeAttributes(options.attributes);
    const sampled = sampler.shouldSample(context, traceId, name, kind, attributes, links);
    traceState = sampled.traceState ?? traceState;
    const traceFlags = sampled.decision === api.SamplingDecision.RECORD_AND_SAMPLED ? api.TraceFlags.SAMPLED : api.TraceFlags.NONE;
    const spanContext: api.SpanContext = { traceId, spanId, traceFlags, traceState };
    if (sampled.decision === api.SamplingDecision.NOT_RECORD) return api.trace.wrapSpanContext(spanContext);
    // A lean parent's clock: a child's start is the parent's plus the monotonic time since (no Date.now() per child).
    const span = new LeanSpan(this.options, spanContext, name, kind, validParent, options.startTime, parentSpan instanceof LeanSpan ? parentSpan : undefined);
    if (spanIdBytes !== undefined) {
      span.spanIdBytes = spanIdBytes;
      span.spanIdAt = spanIdAt;
      span.traceIdBytes = traceIdBytes;
      span.traceIdAt = traceIdAt;
      span.parentIdBytes = parentIdBytes;
      span.parentIdAt = parentIdAt;
    }
    for (const link of links) span.addLink(link);
    // The SDK merges the sampler's attributes into the options' and sets them once; none given, nothing to set.
    if (options.attributes !== undefined || sampled.attributes !== undefined) span.setAttributes(sanitizeAttributes({ ...attributes, ...sampled.attributes }));
    this.options.processor.onStart(span as unknown as Parameters<SpanProcessor['onStart']>[0], context);
    return span;
  }

  startActiveSpan<F extends (span: api.Span) => unknown>(name: string, ...rest: [F] | [api.SpanOptions, F] | [api.SpanOptions, api.Context, F]): ReturnType<F> {
    const fn = rest[rest.length - 1] as F;
    const options = rest.length > 1 ? (rest[0] as api.SpanOptions) : undefined;
    const parent = rest.length > 2 ? (rest[1] as api.Context) : api.context.active();
    const span = this.startSpan(name, options, parent);
    return api.context.with(api.trace.setSpan(parent, span), fn as (span: api.Span) => ReturnType<F>, undefined, span);
  }
}

/**
 * A recorded span: plain fields the exporters read (`ReadableSpan`), the API's `Span` methods
 * with `SpanImpl`'s rules (limits, truncation, ended checks, status precedence, times).
 */
export class LeanSpan implements api.Span, ReadableSpan {
  /**
   * Where this span's ids are as bytes (the id pool's buffers, ids.ts), for the encoder: set by the
   * lean tracer when it knows them (the parent's only for a lean parent), else the hex is decoded.
   */
  spanIdBytes: Buffer | undefined = undefined;
  spanIdAt = 0;
  traceIdBytes: Buffer | undefined = undefined;
  traceIdAt = 0;
  parentIdBytes: Buffer | undefined = undefined;
  parentIdAt = 0;
  /** The first attributes, shared with other spans (`useTemplate`): never written; a key of it set again copies it into `own`. */
  private template: AttributeTemplate | undefined;
  /** The attributes set one by one (all of them, without a template). */
  private own: api.Attributes = {};
  /** Shared empty lists until the first link or event (most spans have none): two arrays fewer per span. */
  links: api.Link[] = NO_LINKS;
  events: TimedEvent[] = NO_EVENTS;
  status: api.SpanStatus = UNSET;
  ended = false;
  droppedAttributesCount = 0;
  droppedEventsCount = 0;
  droppedLinksCount = 0;
  readonly resource: Resource;
  readonly instrumentationScope: InstrumentationScope;
  private attributeCount = 0;
  private readonly limits: Required<SpanLimits>;
  private readonly processor: SpanProcessor;
  /**
   * Epoch milliseconds at the start and performance.now() then and at the end: HrTimes are made
   * from them when read (by the exporter, batched). The first two are a child span's clock.
   */
  readonly startMs: number;
  readonly performanceStart: number;
  private performanceEnd = 0;
  private readonly startTimeProvided: boolean;
  private start: api.HrTime | undefined;
  private finish: api.HrTime | undefined;
  private elapsed: api.HrTime | undefined;

  constructor(
    options: LeanTracerOptions,
    private readonly context: api.SpanContext,
    public name: string,
    readonly kind: api.SpanKind,
    readonly parentSpanContext: api.SpanContext | undefined,
    startTime: api.TimeInput | undefined,
    clock?: LeanSpan,
  ) {
    // As SpanImpl: the start in epoch milliseconds, the end as the start plus performance.now()'s
    // elapsed time. A child takes its parent's epoch start plus the monotonic time since: the same
    // clock (the wall clock read once per trace root, as SpanImpl reads it per span), within a
    // request's lifetime, where the two cannot drift apart.
    this.performanceStart = performance.now();
    this.startMs = clock === undefined ? Date.now() : clock.startMs + (this.performanceStart - clock.performanceStart);
    this.startTimeProvided = startTime != null;
    this.resource = options.resource;
    this.instrumentationScope = options.scope;
    this.limits = options.limits;
    this.processor = options.processor;
    if (startTime != null) this.start = this.timeOf(startTime);
  }

  get startTime(): api.HrTime {
    return (this.start ??= millisToHrTime(this.startMs));
  }

  get endTime(): api.HrTime {
    if (this.finish === undefined && this.performanceEnd > 0) this.finish = addHrTimes(this.startTime, millisToHrTime(this.performanceEnd - this.performanceStart));
    return this.finish ?? [0, 0];
  }

  get duration(): api.HrTime {
    if (this.elapsed === undefined && (this.finish !== undefined || this.performanceEnd > 0)) this.elapsed = hrTimeDuration(this.startTime, this.endTime);
    return this.elapsed ?? [-1, -1];
  }

  spanContext(): api.SpanContext {
    return this.context;
  }

  /** Every attribute, the template's first (a copy when there is a template: the encoder reads the parts). */
  get attributes(): api.Attributes {
    return this.template === undefined ? this.own : { ...this.template.attributes, ...this.own };
  }

  /** The attributes as the encoder reads them: the shared template (encoded once), then the span's own. */
  get attributeTemplate(): AttributeTemplate | undefined {
    return this.template;
  }

  get ownAttributes(): api.Attributes {
    return this.own;
  }

  /**
   * Sets the template's attributes, as `setAttributes(template.attributes)` would: kept by reference
   * when they are the span's first and within its limits, else set one by one.
   */
  useTemplate(template: AttributeTemplate): this {
    const { attributeCountLimit, attributeValueLengthLimit } = this.limits;
    const fits = template.count <= attributeCountLimit && (attributeValueLengthLimit === Infinity || attributeValueLengthLimit <= 0 || template.longestString <= attributeValueLengthLimit);
    if (this.attributeCount > 0 || this.template !== undefined || !fits || this.ended) return this.setAttributes(template.attributes);
    this.template = template;
    this.attributeCount = template.count;
    return this;
  }

  setAttribute(key: string, value: api.AttributeValue | undefined): this {
    if (value == null || this.endedWarn()) return this;
    // A key of the template set again: the template is copied into the span's own attributes first (keeping their order).
    if (this.template !== undefined && this.template.keys.has(key)) {
      this.own = { ...this.template.attributes, ...this.own };
      this.template = undefined;
    }
    if (key.length === 0) {
      api.diag.warn(`Invalid attribute key: ${key}`);
      return this;
    }
    const type = typeof value;
    if (type !== 'string' && type !== 'number' && type !== 'boolean' && !isAttributeValue(value)) {
      api.diag.warn(`Invalid attribute value set for key: ${key}`);
      return this;
    }
    const isNewKey = !hasOwn.call(this.own, key);
    if (isNewKey && this.attributeCount >= this.limits.attributeCountLimit) {
      this.droppedAttributesCount++;
      return this;
    }
    this.own[key] = this.truncated(value);
    if (isNewKey) this.attributeCount++;
    return this;
  }

  setAttributes(attributes: api.Attributes): this {
    for (const key in attributes) if (hasOwn.call(attributes, key)) this.setAttribute(key, attributes[key]);
    return this;
  }

  addEvent(name: string, attributesOrTime?: api.Attributes | api.TimeInput, time?: api.TimeInput): this {
    if (this.endedWarn()) return this;
    const { eventCountLimit, attributePerEventCountLimit } = this.limits;
    if (eventCountLimit === 0) {
      api.diag.warn('No events allowed.');
      this.droppedEventsCount++;
      return this;
    }
    if (this.events === NO_EVENTS) this.events = [];
    if (this.events.length >= eventCountLimit) {
      this.events.shift();
      this.droppedEventsCount++;
    }
    if (isTimeInput(attributesOrTime)) {
      if (!isTimeInput(time)) time = attributesOrTime;
      attributesOrTime = undefined;
    }
    const [attributes, droppedAttributesCount] = this.limited(sanitizeAttributes(attributesOrTime), attributePerEventCountLimit);
    this.events.push({ name, attributes, time: this.timeOf(time), droppedAttributesCount });
    return this;
  }

  addLink(link: api.Link): this {
    if (this.endedWarn()) return this;
    const { linkCountLimit, attributePerLinkCountLimit } = this.limits;
    if (linkCountLimit === 0) {
      this.droppedLinksCount++;
      return this;
    }
    if (this.links === NO_LINKS) this.links = [];
    if (this.links.length >= linkCountLimit) {
      this.links.shift();
      this.droppedLinksCount++;
    }
    const [attributes, droppedAttributesCount] = this.limited(sanitizeAttributes(link.attributes), attributePerLinkCountLimit);
    const kept: api.Link = { context: link.context };
    if (Object.keys(attributes).length > 0) kept.attributes = attributes;
    if (droppedAttributesCount > 0) kept.droppedAttributesCount = droppedAttributesCount;
    this.links.push(kept);
    return this;
  }

  addLinks(links: api.Link[]): this {
    for (const link of links) this.addLink(link);
    return this;
  }

  setStatus(status: api.SpanStatus): this {
    if (this.endedWarn() || status.code === api.SpanStatusCode.UNSET || this.status.code === api.SpanStatusCode.OK) return this;
    const next: api.SpanStatus = { code: status.code };
    if (status.code === api.SpanStatusCode.ERROR) {
      if (typeof status.message === 'string') next.message = status.message;
      else if (status.message != null) api.diag.warn(`Dropping invalid status.message of type '${typeof status.message}', expected 'string'`);
    }
    this.status = next;
    return this;
  }

  updateName(name: string): this {
    if (!this.endedWarn()) this.name = name;
    return this;
  }

  end(endTime?: api.TimeInput): void {
    if (this.ended) {
      api.diag.error(`${this.name} ${this.context.traceId}-${this.context.spanId} - You can only call end() on a span once.`);
      return;
    }
    if (endTime === undefined && !this.startTimeProvided) this.performanceEnd = performance.now();
    else {
      // Times given: made now, and an end before the start is the start (as SpanImpl).
      this.finish = this.timeOf(endTime);
      this.elapsed = hrTimeDuration(this.startTime, this.finish);
      if (this.elapsed[0] < 0) {
        this.finish = this.startTime.slice() as api.HrTime;
        this.elapsed = [0, 0];
      }
    }
    this.processor.onEnding?.(this as unknown as Parameters<NonNullable<SpanProcessor['onEnding']>>[0]);
    this.ended = true;
    this.processor.onEnd(this);
  }

  isRecording(): boolean {
    return !this.ended;
  }

  recordException(exception: api.Exception, time?: api.TimeInput): void {
    const attributes: api.Attributes = {};
    if (typeof exception === 'string') attributes['exception.message'] = exception;
    else if (exception) {
      if (exception.code) attributes['exception.type'] = exception.code.toString();
      else if (exception.name) attributes['exception.type'] = exception.name;
      if (exception.message) attributes['exception.message'] = exception.message;
      if (exception.stack) attributes['exception.stacktrace'] = exception.stack;
    }
    if (attributes['exception.type'] || attributes['exception.message']) this.addEvent('exception', attributes, time);
    else api.diag.warn(`Failed to record an exception ${String(exception)}`);
  }

  private endedWarn(): boolean {
    if (this.ended) api.diag.warn(`Cannot execute the operation on ended Span {traceId: ${this.context.traceId}, spanId: ${this.context.spanId}}`);
    return this.ended;
  }

  /** SpanImpl's `_getTime`: performance timestamps, epoch milliseconds, Dates, HrTimes; none: the start plus the elapsed time. */
  private timeOf(input: api.TimeInput | undefined): api.HrTime {
    if (typeof input === 'number') {
      if (input > performance.now()) return millisToHrTime(input);
      // A performance timestamp, corrected by the start's offset between the two clocks.
      const offset = this.startMs - (this.performanceStart + performance.timeOrigin);
      return addHrTimes(millisToHrTime(performance.timeOrigin), millisToHrTime(input + offset));
    }
    if (input instanceof Date) return millisToHrTime(input.getTime());
    if (isTimeInputHrTime(input)) return input;
    if (this.startTimeProvided) return millisToHrTime(Date.now());
    return addHrTimes(this.startTime, millisToHrTime(performance.now() - this.performanceStart));
  }

  /** Strings (and strings in arrays) cut to the provider's value length limit. */
  private truncated(value: api.AttributeValue): api.AttributeValue {
    const limit = this.limits.attributeValueLengthLimit;
    if (limit === Infinity || limit <= 0) return value;
    if (typeof value === 'string') return value.length <= limit ? value : value.substring(0, limit);
    if (Array.isArray(value)) return value.map((item: unknown) => (typeof item === 'string' && item.length > limit ? item.substring(0, limit) : item)) as api.AttributeValue;
    return value;
  }

  /** An event's or link's attributes within `limit`, and how many were dropped. */
  private limited(sanitized: api.Attributes, limit: number): [api.Attributes, number] {
    const kept: api.Attributes = {};
    let count = 0;
    let dropped = 0;
    for (const key in sanitized) {
      if (!hasOwn.call(sanitized, key)) continue;
      if (count >= limit) dropped++;
      else {
        kept[key] = this.truncated(sanitized[key]!);
        count++;
      }
    }
    return [kept, dropped];
  }
}

/** The API's key of the current span in a context, read once through `trace.getSpan` (the API does not export it). */
const SPAN_KEY: symbol = (() => {
  let key: symbol | undefined;
  api.trace.getSpan({ getValue: (k: symbol) => void (key = k), setValue: () => api.ROOT_CONTEXT, deleteValue: () => api.ROOT_CONTEXT });
  return key!;
})();

/**
 * `parent` with `span` as its current span, what `api.trace.setSpan` returns, without copying the
 * parent's values into a new Map and making three closures (the API's BaseContext): one small
 * object per request. Other keys are the parent's; a value set on it makes a BaseContext as usual.
 */
class SpanContextFrame implements api.Context {
  constructor(
    private readonly parent: api.Context,
    private readonly span: api.Span,
  ) {}
  getValue(key: symbol): unknown {
    return key === SPAN_KEY ? this.span : this.parent.getValue(key);
  }
  setValue(key: symbol, value: unknown): api.Context {
    return this.parent.setValue(SPAN_KEY, this.span).setValue(key, value);
  }
  deleteValue(key: symbol): api.Context {
    return key === SPAN_KEY ? this.parent.deleteValue(key) : this.parent.setValue(SPAN_KEY, this.span).deleteValue(key);
  }
}

export function contextWithSpan(parent: api.Context, span: api.Span): api.Context {
  return new SpanContextFrame(parent, span);
}
