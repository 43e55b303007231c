/**
 * The lean tracer (lean-span.ts) records what the SDK's tracer records, given the same provider
 * parts: the same calls on both, with the same id sequence, end in spans whose every ReadableSpan
 * field is equal (times apart: those are checked for their shape and duration = end − start), under
 * tight span limits; the configured sampler decides (called with the SDK's arguments, its
 * attributes and trace state honoured, NOT_RECORD giving the API's non-recording span).
 */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import * as api from '@opentelemetry/api';
import { TraceState, W3CTraceContextPropagator } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  ParentBasedSampler,
  SamplingDecision,
  TraceIdRatioBasedSampler,
  type ReadableSpan,
  type Sampler,
  type SpanLimits,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { LeanSpan, LeanTracer, contextWithSpan } from './lean-span.js';
import { AttributeTemplate } from './attribute-template.js';
import { SpanBatch } from './otlp-encoder.js';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { POOL_BYTES, poolIdGenerator, type IdGenerator } from './ids.js';

const DEFAULT_LIMITS: Required<SpanLimits> = { attributeCountLimit: 128, attributeValueLengthLimit: Infinity, eventCountLimit: 128, linkCountLimit: 128, attributePerEventCountLimit: 128, attributePerLinkCountLimit: 128 };
const TIGHT_LIMITS: Required<SpanLimits> = { attributeCountLimit: 4, attributeValueLengthLimit: 5, eventCountLimit: 2, linkCountLimit: 1, attributePerEventCountLimit: 1, attributePerLinkCountLimit: 1 };
const w3c = new W3CTraceContextPropagator();
const resource = resourceFromAttributes({ 'service.name': 'data-access-dataplane', 'deployment.environment.name': 'test' });

/** The same ids for both tracers: hashes of a counter (evenly spread, so a ratio sampler sees varied trace ids). */
function sequenceIds(): IdGenerator {
  let n = 0;
  const next = (length: number) => createHash('sha256').update(String(n++)).digest('hex').slice(0, length);
  return { generateTraceId: () => next(32), generateSpanId: () => next(16) };
}

interface Recorded {
  started: ReadableSpan[];
  ended: ReadableSpan[];
  made: api.Span[];
}

/** Runs `make` with the SDK's tracer and with the lean one, each over its own processor and id sequence. */
function both(sampler: Sampler, limits: Required<SpanLimits>, make: (tracer: api.Tracer, made: api.Span[]) => void): { sdk: Recorded; lean: Recorded } {
  const record = (tracerOf: (processor: SpanProcessor, ids: IdGenerator) => api.Tracer): Recorded => {
    const recorded: Recorded = { started: [], ended: [], made: [] };
    const processor: SpanProcessor = {
      onStart: (span) => void recorded.started.push(span),
      onEnd: (span) => void recorded.ended.push(span),
      forceFlush: async () => undefined,
      shutdown: async () => undefined,
    };
    make(tracerOf(processor, sequenceIds()), recorded.made);
    return recorded;
  };
  return {
    sdk: record((processor, idGenerator) => new BasicTracerProvider({ resource, sampler, idGenerator, spanLimits: limits, spanProcessors: [processor] }).getTracer('data-access')),
    lean: record((processor, idGenerator) => new LeanTracer({ resource, scope: { name: 'data-access', version: undefined, schemaUrl: undefined }, sampler, idGenerator, processor, limits })),
  };
}

const nanos = (time: api.HrTime) => BigInt(time[0]) * 1_000_000_000n + BigInt(time[1]);
const isHrTime = (time: api.HrTime) => Array.isArray(time) && time.length === 2 && time.every(Number.isInteger) && time[1] >= 0 && time[1] < 1e9;

function contextView(context: api.SpanContext | undefined) {
  return context && { ...context, traceState: context.traceState?.serialize() };
}

/** Every ReadableSpan field, times replaced by their checks. */
function view(span: ReadableSpan) {
  const times = [span.startTime, span.endTime, span.duration, ...span.events.map((event) => event.time)];
  return {
    name: span.name,
    kind: span.kind,
    spanContext: contextView(span.spanContext()),
    parentSpanContext: contextView(span.parentSpanContext),
    attributes: span.attributes,
    links: span.links.map((link) => ({ ...link, context: contextView(link.context) })),
    events: span.events.map((event) => ({ ...event, time: 'time' })),
    status: span.status,
    ended: span.ended,
    droppedAttributesCount: span.droppedAttributesCount,
    droppedEventsCount: span.droppedEventsCount,
    droppedLinksCount: span.droppedLinksCount,
    resourceIsTheProvidersOwn: span.resource === resource,
    instrumentationScope: span.instrumentationScope,
    timesAreHrTimes: times.every(isHrTime),
    durationIsEndMinusStart: !span.ended || nanos(span.duration) === nanos(span.endTime) - nanos(span.startTime),
  };
}

function expectSame(recorded: { sdk: Recorded; lean: Recorded }): void {
  expect(recorded.lean.started.map(view)).to.deep.equal(recorded.sdk.started.map(view));
  expect(recorded.lean.ended.map(view)).to.deep.equal(recorded.sdk.ended.map(view));
  expect(recorded.lean.made.map((span) => [span.constructor.name === 'LeanSpan' ? 'SpanImpl' : span.constructor.name, span.isRecording(), contextView(span.spanContext())])).to.deep.equal(
    recorded.sdk.made.map((span) => [span.constructor.name, span.isRecording(), contextView(span.spanContext())]),
  );
}

const REMOTE_TRACE = '0af7651916cd43dd8448eb211c80319c';
const remote = (sampled: boolean, traceState?: string) =>
  api.trace.setSpanContext(api.ROOT_CONTEXT, { traceId: REMOTE_TRACE, spanId: 'b7ad6b7169203331', traceFlags: sampled ? 1 : 0, isRemote: true, traceState: traceState ? new TraceState(traceState) : undefined });

/** The data plane's spans, as model/telemetry/tracing.ts makes them. */
function dataPlaneSpans(tracer: api.Tracer, made: api.Span[], parent: api.Context): void {
  // A request's SERVER span, attributes set after start, named by route.
  const server = tracer.startSpan('GET', { kind: api.SpanKind.SERVER }, parent);
  made.push(server);
  server.setAttributes({ 'http.request.method': 'GET', 'url.scheme': 'http', 'network.protocol.version': '1.1', 'server.address': 'iam.localhost', 'server.port': 8080 });
  server.updateName('GET /{dataset}/{schema}/{id}');
  server.setAttribute('http.route', '/{dataset}/{schema}/{id}');
  const inRequest = api.trace.setSpan(parent, server);
  // The store's CLIENT child, a leaf (explicit parent), then a write's span, current (its change carries the traceparent).
  const read = tracer.startSpan('read demo.Company', { kind: api.SpanKind.CLIENT }, inRequest);
  made.push(read);
  read.setAttributes({ 'db.system': 'postgresql', 'db.operation.name': 'read', 'das.dataset': 'demo', 'db.collection.name': 'demo.Company' });
  read.end();
  const write = tracer.startSpan('write demo.Company', { kind: api.SpanKind.CLIENT }, inRequest);
  made.push(write);
  write.setAttributes({ 'db.system': 'postgresql', 'db.operation.name': 'write', 'das.dataset': 'demo', 'db.collection.name': 'demo.Company', 'db.operation.batch.size': 2, 'das.consistency': 'ATOMIC' });
  const carrier: Record<string, string> = {};
  w3c.inject(api.trace.setSpan(inRequest, write), carrier, api.defaultTextMapSetter);
  // A failing store call: ERROR status and error.type.
  write.setStatus({ code: api.SpanStatusCode.ERROR });
  write.setAttribute('error.type', '23505');
  write.end();
  // A delivery: its own trace, linked to the write's.
  const linked = api.trace.getSpanContext(w3c.extract(api.ROOT_CONTEXT, carrier, api.defaultTextMapGetter));
  const delivery = tracer.startSpan('deliver demo.Company', { kind: api.SpanKind.CONSUMER, links: linked ? [{ context: linked }] : [], root: true }, inRequest);
  made.push(delivery);
  delivery.setAttributes({ 'das.dataset': 'demo', 'db.collection.name': 'demo.Company', 'das.change.op': 'update' });
  delivery.end();
  server.setAttribute('http.response.status_code', 503);
  server.setStatus({ code: api.SpanStatusCode.ERROR });
  server.setAttribute('error.type', '503');
  server.end();
}

/** Beyond the data plane's spans: every API call, under tight limits. */
function everyCall(tracer: api.Tracer, made: api.Span[]): void {
  const linkTo = { traceId: 'ab'.repeat(16), spanId: 'cd'.repeat(8), traceFlags: 1, isRemote: true, traceState: new TraceState('k=v') };
  const span = tracer.startSpan('every call', { kind: api.SpanKind.PRODUCER, attributes: { given: 'at start', long: 'longer than five' }, links: [{ context: linkTo, attributes: { a: 1, b: 2 } }, { context: { ...linkTo, spanId: 'ef'.repeat(8) } }] }, remote(true, 'vendor=value'));
  made.push(span);
  span.setAttributes({ text: 'a long string', int: 7, double: 1.5, flag: true, strings: ['abcdefgh', 'x'], over: 'the limit', undefinedValue: undefined });
  span.setAttribute('int', 8);
  span.setAttribute('', 'empty key');
  span.setAttribute('object', { not: 'a value' } as unknown as api.AttributeValue);
  span.addLink({ context: { ...linkTo, spanId: '12'.repeat(8) }, attributes: { only: 'one', of: 'two' } });
  span.addEvent('first', { a: 'long value', b: 2 });
  span.addEvent('second', [1, 2]);
  span.addEvent('third', { c: true }, 1_700_000_000_000);
  span.recordException(Object.assign(new Error('boom'), { code: 'E42', stack: 'Error: boom\n    at the same place' }));
  span.setStatus({ code: api.SpanStatusCode.OK });
  span.setStatus({ code: api.SpanStatusCode.ERROR, message: 'ignored after OK' });
  span.end();
  span.updateName('after the end');
  span.setAttribute('after', 'the end');
  const timed = tracer.startSpan('given times', { startTime: [1_700_000_000, 5] });
  made.push(timed);
  timed.end([1_700_000_001, 3]);
}

describe('the lean span recorder (model/telemetry/lean-span.ts) against the SDK\'s tracer', () => {
  it('records the data plane\'s spans as the SDK does: remote parent with trace state, no parent, leaf and current children, links, error status', () => {
    for (const parent of [remote(true, 'vendor=value,other=x'), api.ROOT_CONTEXT]) {
      const recorded = both(new AlwaysOnSampler(), DEFAULT_LIMITS, (tracer, made) => dataPlaneSpans(tracer, made, parent));
      expect(recorded.lean.ended).to.have.length(4);
      expectSame(recorded);
    }
  });

  it('applies the provider\'s span limits as SpanImpl does (attribute count and value length, links, events, per-link and per-event attributes)', () => {
    const recorded = both(new AlwaysOnSampler(), TIGHT_LIMITS, everyCall);
    const [span] = recorded.lean.ended;
    expect(span.droppedAttributesCount).to.be.greaterThan(0);
    expect(span.droppedLinksCount).to.equal(2);
    expect(span.attributes.long).to.equal('longe');
    expectSame(recorded);
    expectSame(both(new AlwaysOnSampler(), DEFAULT_LIMITS, everyCall));
  });

  it('the configured sampler decides: always_off, traceidratio, parentbased_* with a sampled and an unsampled remote parent', () => {
    const samplers: Record<string, Sampler> = {
      always_off: new AlwaysOffSampler(),
      traceidratio: new TraceIdRatioBasedSampler(0.5),
      parentbased_always_on: new ParentBasedSampler({ root: new AlwaysOnSampler() }),
      parentbased_always_off: new ParentBasedSampler({ root: new AlwaysOffSampler() }),
      parentbased_traceidratio: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(0.5) }),
    };
    for (const [name, sampler] of Object.entries(samplers)) {
      for (const parent of [remote(true), remote(false), api.ROOT_CONTEXT]) {
        const recorded = both(sampler, DEFAULT_LIMITS, (tracer, made) => {
          for (let i = 0; i < 8; i++) dataPlaneSpans(tracer, made, parent);
        });
        expectSame(recorded);
        const recording = recorded.lean.made.filter((span) => span.isRecording()).length;
        if (name === 'always_off' || (name.startsWith('parentbased') && parent !== api.ROOT_CONTEXT)) {
          // Decided by the parent (or always off): all or none.
          const expected = name === 'always_off' || name === 'parentbased_always_off' && parent === api.ROOT_CONTEXT ? 0 : parent === remote(true) ? 32 : undefined;
          if (expected !== undefined) expect(recording, `${name}`).to.equal(expected);
        }
      }
    }
    // The ratio sampler saw varied trace ids: some traces recorded, some not, on both.
    const ratio = both(samplers.traceidratio, DEFAULT_LIMITS, (tracer, made) => {
      for (let i = 0; i < 16; i++) dataPlaneSpans(tracer, made, api.ROOT_CONTEXT);
    });
    expect(ratio.lean.ended.length).to.be.within(1, 16 * 4 - 1);
    expectSame(ratio);
  });

  it('a span not recorded propagates its context (a non-recording span, the API\'s own), and its children continue its trace', () => {
    const recorded = both(new ParentBasedSampler({ root: new AlwaysOnSampler() }), DEFAULT_LIMITS, (tracer, made) => {
      const unsampled = tracer.startSpan('GET', { kind: api.SpanKind.SERVER }, remote(false, 'vendor=value'));
      made.push(unsampled);
      const child = tracer.startSpan('read demo.Company', { kind: api.SpanKind.CLIENT }, api.trace.setSpan(api.ROOT_CONTEXT, unsampled));
      made.push(child);
    });
    expectSame(recorded);
    const [unsampled, child] = recorded.lean.made;
    expect(unsampled.isRecording()).to.equal(false);
    expect(unsampled.spanContext().traceId).to.equal('0af7651916cd43dd8448eb211c80319c');
    expect(unsampled.spanContext().traceState?.serialize()).to.equal('vendor=value');
    expect(child.spanContext().traceId).to.equal('0af7651916cd43dd8448eb211c80319c');
    expect(recorded.lean.started).to.have.length(0);
  });

  it('calls the sampler with the SDK tracer\'s arguments and honours RECORD, its attributes and its trace state', () => {
    const calls: Record<'sdk' | 'lean', unknown[][]> = { sdk: [], lean: [] };
    let who: 'sdk' | 'lean' = 'sdk';
    let n = 0;
    const sampler: Sampler = {
      shouldSample(context, traceId, name, kind, attributes, links) {
        // The context as the samplers read it: its span's context.
        calls[who].push([contextView(api.trace.getSpanContext(context)), traceId, name, kind, { ...attributes }, links]);
        const decision = [SamplingDecision.RECORD, SamplingDecision.RECORD_AND_SAMPLED, SamplingDecision.NOT_RECORD][n++ % 3];
        return { decision, attributes: { 'sampler.says': 'hello', 'http.request.method': 'overridden' }, traceState: new TraceState(`sampler=${n}`) };
      },
    };
    const make = (tracer: api.Tracer, made: api.Span[]) => dataPlaneSpans(tracer, made, remote(true, 'vendor=value'));
    n = 0;
    who = 'sdk';
    const sdkSide = both(sampler, DEFAULT_LIMITS, (tracer, made) => {
      if (tracer instanceof LeanTracer) {
        who = 'lean';
        n = 0;
      }
      make(tracer, made);
    });
    expectSame(sdkSide);
    expect(calls.lean).to.have.length(4);
    expect(calls.lean).to.deep.equal(calls.sdk);
    // Decisions in turn: the server span RECORD (recorded, not sampled), its read RECORD_AND_SAMPLED, the write NOT_RECORD.
    const server = sdkSide.lean.ended.find((span) => span.kind === api.SpanKind.SERVER)!;
    expect(sdkSide.lean.ended.map((span) => span.name)).to.deep.equal(['read demo.Company', 'deliver demo.Company', 'GET /{dataset}/{schema}/{id}']);
    expect(server.attributes['sampler.says']).to.equal('hello');
    expect(server.spanContext().traceFlags).to.equal(api.TraceFlags.NONE);
    expect(server.spanContext().traceState?.serialize()).to.equal('sampler=1');
  });

  it('contextWithSpan is api.trace.setSpan in one object: the span current, the parent\'s other values kept, values set and deleted as on any context', () => {
    const key = api.createContextKey('a value of the caller');
    const other = api.createContextKey('another');
    const parent = api.ROOT_CONTEXT.setValue(key, 'kept');
    const { lean } = both(new AlwaysOnSampler(), DEFAULT_LIMITS, (tracer, made) => void made.push(tracer.startSpan('GET', { kind: api.SpanKind.SERVER }, parent)));
    const span = lean.made[0];
    const ours = contextWithSpan(parent, span);
    const theirs = api.trace.setSpan(parent, span);
    for (const context of [ours, theirs]) {
      expect(api.trace.getSpan(context)).to.equal(span);
      expect(context.getValue(key)).to.equal('kept');
      const more = context.setValue(other, 1);
      expect([api.trace.getSpan(more), more.getValue(key), more.getValue(other), context.getValue(other)]).to.deep.equal([span, 'kept', 1, undefined]);
      const without = context.deleteValue(key);
      expect([api.trace.getSpan(without), without.getValue(key)]).to.deep.equal([span, undefined]);
      expect([api.trace.getSpan(api.trace.deleteSpan(context)), api.trace.deleteSpan(context).getValue(key)]).to.deep.equal([undefined, 'kept']);
      const carrier: Record<string, string> = {};
      w3c.inject(context, carrier, api.defaultTextMapSetter);
      expect(carrier.traceparent).to.equal(`00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`);
    }
  });
});

/** A lean span takes a template by reference; an SDK span is given its attributes (what tracing.ts does for each). */
function useTemplate(span: api.Span, template: AttributeTemplate): void {
  if (span instanceof LeanSpan) span.useTemplate(template);
  else span.setAttributes(template.attributes);
}

const REQUEST = AttributeTemplate.of({ 'http.request.method': 'GET', 'url.scheme': 'http', 'network.protocol.version': '1.1', 'server.address': 'iam.localhost', 'server.port': 8080, 'user_agent.original': 'curl/8.5.0' })!;
const STORE = AttributeTemplate.of({ 'db.system': 'postgresql', 'db.operation.name': 'read', 'das.dataset': 'demo', 'db.collection.name': 'demo.Company' })!;

/** The data plane's read with its attributes from templates: a request span (template, then its own), its store span, a span setting a template key again, a template after other attributes. */
function templatedSpans(tracer: api.Tracer, made: api.Span[]): void {
  const server = tracer.startSpan('GET', { kind: api.SpanKind.SERVER }, remote(true));
  made.push(server);
  useTemplate(server, REQUEST);
  server.updateName('GET /{dataset}/{schema}/{id}');
  server.setAttribute('http.route', '/{dataset}/{schema}/{id}');
  const read = tracer.startSpan('read demo.Company', { kind: api.SpanKind.CLIENT }, api.trace.setSpan(api.ROOT_CONTEXT, server));
  made.push(read);
  useTemplate(read, STORE);
  read.end();
  const overridden = tracer.startSpan('read again', { kind: api.SpanKind.CLIENT }, api.trace.setSpan(api.ROOT_CONTEXT, server));
  made.push(overridden);
  useTemplate(overridden, STORE);
  overridden.setAttribute('extra', 1);
  overridden.setAttribute('db.operation.name', 'readMany');
  overridden.end();
  const late = tracer.startSpan('late template', { kind: api.SpanKind.INTERNAL });
  made.push(late);
  late.setAttribute('first', 'own');
  useTemplate(late, STORE);
  useTemplate(late, REQUEST);
  late.end();
  server.setAttribute('http.response.status_code', 200);
  server.end();
}

describe('the lean span recorder, attribute templates (model/telemetry/attribute-template.ts)', () => {
  it('a span given a template records what the SDK records when given its attributes, under the default and tight limits', () => {
    for (const limits of [DEFAULT_LIMITS, TIGHT_LIMITS]) {
      const recorded = both(new AlwaysOnSampler(), limits, templatedSpans);
      expect(recorded.lean.ended).to.have.length(4);
      expectSame(recorded);
    }
    const { lean } = both(new AlwaysOnSampler(), DEFAULT_LIMITS, templatedSpans);
    const [read, overridden, late, server] = lean.ended as unknown as LeanSpan[];
    // Kept by reference where the template came first and no key of it was set again; copied otherwise.
    expect([server.attributeTemplate, read.attributeTemplate, overridden.attributeTemplate, late.attributeTemplate]).to.deep.equal([REQUEST, STORE, undefined, undefined]);
    expect(Object.keys(server.attributes)).to.deep.equal([...Object.keys(REQUEST.attributes), 'http.route', 'http.response.status_code']);
    expect(overridden.attributes).to.deep.equal({ ...STORE.attributes, extra: 1, 'db.operation.name': 'readMany' });
    expect(Object.keys(overridden.attributes)).to.deep.equal([...Object.keys(STORE.attributes), 'extra']);
  });

  it('a templated span encodes to the bytes the SDK\'s serializer writes for it (the template\'s encoding made once, ids repeated across spans)', () => {
    const { lean } = both(new AlwaysOnSampler(), DEFAULT_LIMITS, (tracer, made) => {
      for (let i = 0; i < 3; i++) templatedSpans(tracer, made);
    });
    expect(lean.ended).to.have.length(12);
    const batch = new SpanBatch(lean.ended[0].resource, lean.ended[0].instrumentationScope);
    lean.ended.forEach((span) => batch.add(span));
    expect(Buffer.from(batch.request()).equals(Buffer.from(ProtobufTraceSerializer.serializeRequest(lean.ended)!))).to.equal(true);
  });

  it('a template keeps plain valid attributes only, frozen; anything else is left to a span\'s own checks', () => {
    const template = AttributeTemplate.of({ a: 'text', b: 2, c: false, gone: undefined, none: null })!;
    expect(template.attributes).to.deep.equal({ a: 'text', b: 2, c: false });
    expect(Object.isFrozen(template.attributes)).to.equal(true);
    expect([template.count, template.longestString]).to.deep.equal([3, 4]);
    expect(AttributeTemplate.of({ '': 'empty key' })).to.equal(undefined);
    expect(AttributeTemplate.of({ list: ['a'] })).to.equal(undefined);
    expect(AttributeTemplate.of({ object: { not: 'a value' } })).to.equal(undefined);
    expect(AttributeTemplate.of(JSON.parse('{"__proto__": "x"}') as Record<string, unknown>)).to.equal(undefined);
  });
});

describe('the lean span recorder with the pooled ids (model/telemetry/ids.ts)', () => {
  it('a child span runs on its parent\'s clock: it starts and ends within the parent, on the wall clock, and a given start time is still the one given', async () => {
    const ended: ReadableSpan[] = [];
    const processor: SpanProcessor = { onStart: () => undefined, onEnd: (span) => void ended.push(span), forceFlush: async () => undefined, shutdown: async () => undefined };
    const tracer = new LeanTracer({ resource, scope: { name: 'data-access', version: undefined, schemaUrl: undefined }, sampler: new AlwaysOnSampler(), idGenerator: poolIdGenerator(), processor, limits: DEFAULT_LIMITS });
    const before = Date.now();
    const server = tracer.startSpan('GET', { kind: api.SpanKind.SERVER });
    await new Promise((resolve) => setTimeout(resolve, 25));
    const read = tracer.startSpan('read demo.Company', { kind: api.SpanKind.CLIENT }, api.trace.setSpan(api.ROOT_CONTEXT, server));
    const childWall = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 5));
    read.end();
    const given = tracer.startSpan('given', { startTime: [1_700_000_000, 5] }, api.trace.setSpan(api.ROOT_CONTEXT, server));
    given.end([1_700_000_001, 0]);
    server.end();
    const [child, timed, parent] = ended;
    const ms = (time: api.HrTime) => time[0] * 1e3 + time[1] / 1e6;
    expect(ms(parent.startTime)).to.be.within(before - 1, before + 5);
    // 25 ms after the parent's start by the monotonic clock, and where the wall clock was then.
    expect(ms(child.startTime) - ms(parent.startTime)).to.be.within(24, 200);
    expect(ms(child.startTime)).to.be.within(childWall - 2, childWall + 2);
    expect(ms(child.endTime)).to.be.within(ms(child.startTime) + 4, ms(parent.endTime));
    expect(nanos(child.duration)).to.equal(nanos(child.endTime) - nanos(child.startTime));
    expect(timed.startTime).to.deep.equal([1_700_000_000, 5]);
    expect(timed.endTime).to.deep.equal([1_700_000_001, 0]);
  });

  it('spans keep where their ids\' bytes are, across pool refills, and encode to the bytes the SDK\'s serializer writes from the hex', () => {
    const ended: ReadableSpan[] = [];
    const processor: SpanProcessor = { onStart: () => undefined, onEnd: (span) => void ended.push(span), forceFlush: async () => undefined, shutdown: async () => undefined };
    const tracer = new LeanTracer({ resource, scope: { name: 'data-access', version: undefined, schemaUrl: undefined }, sampler: new AlwaysOnSampler(), idGenerator: poolIdGenerator(), processor, limits: DEFAULT_LIMITS });
    // A read takes 32 bytes of ids (16 under a remote caller, one in three): enough reads for the pool to be refilled three times on the way.
    const reads = Math.ceil((3 * POOL_BYTES) / ((2 * 32 + 16) / 3));
    for (let i = 0; i < reads; i++) {
      const server = tracer.startSpan('GET', { kind: api.SpanKind.SERVER }, i % 3 === 0 ? remote(true, 'vendor=value') : api.ROOT_CONTEXT);
      const read = tracer.startSpan('read demo.Company', { kind: api.SpanKind.CLIENT }, api.trace.setSpan(api.ROOT_CONTEXT, server));
      read.end();
      server.end();
    }
    const spans = ended as unknown as LeanSpan[];
    expect(spans).to.have.length(2 * reads);
    expect(new Set(spans.map((span) => span.spanIdBytes)).size).to.be.greaterThan(2);
    for (const span of spans) {
      const { traceId, spanId } = span.spanContext();
      expect(span.spanIdBytes!.toString('hex', span.spanIdAt, span.spanIdAt + 8)).to.equal(spanId);
      // A remote caller's ids are not the pool's: decoded from their hex at the export.
      if (traceId === REMOTE_TRACE) expect(span.traceIdBytes).to.equal(undefined);
      else expect(span.traceIdBytes!.toString('hex', span.traceIdAt, span.traceIdAt + 16)).to.equal(traceId);
      if (span.kind === api.SpanKind.CLIENT) expect(span.parentIdBytes!.toString('hex', span.parentIdAt, span.parentIdAt + 8)).to.equal(span.parentSpanContext!.spanId);
      else expect(span.parentIdBytes).to.equal(undefined);
    }
    expect(spans.filter((span) => span.traceIdBytes === undefined)).to.have.length(2 * Math.ceil(reads / 3));
    const batch = new SpanBatch(resource, spans[0].instrumentationScope);
    ended.forEach((span) => batch.add(span));
    expect(Buffer.from(batch.request()).equals(Buffer.from(ProtobufTraceSerializer.serializeRequest(ended)!))).to.equal(true);
  });
});
