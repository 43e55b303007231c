/**
 * The OTLP/protobuf encoder writes exactly the bytes of the SDK's ProtobufTraceSerializer for the
 * same spans (real SDK spans: every kind, remote and local parents, trace state, links, events,
 * error status, attributes of every type, two resources and scopes), including when its caches
 * are hit; and the pooled id generator gives valid W3C ids. Spans are encoded as they end into a
 * batch per resource and scope (`SpanBatch`), so each group is compared with the SDK's request for it.
 */
import { expect } from 'chai';
import * as api from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOnSampler, BasicTracerProvider, SimpleSpanProcessor, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { SpanBatch } from './otlp-encoder.js';
import { poolIdGenerator } from './ids.js';

/** Each (resource, scope) group's spans, in the order first seen, encoded through a SpanBatch. */
function encodedGroups(spans: readonly ReadableSpan[]): { spans: ReadableSpan[]; request: Buffer }[] {
  const groups: { batch: SpanBatch; spans: ReadableSpan[] }[] = [];
  for (const span of spans) {
    let group = groups.find((g) => g.batch.resource === span.resource && g.batch.scope === span.instrumentationScope);
    if (!group) groups.push((group = { batch: new SpanBatch(span.resource, span.instrumentationScope), spans: [] }));
    group.batch.add(span);
    group.spans.push(span);
  }
  return groups.map((g) => ({ spans: g.spans, request: Buffer.from(g.batch.request()) }));
}

/** Every group's request equals the SDK serializer's request of the same spans; how many groups there were. */
function sameAsTheSdk(spans: readonly ReadableSpan[]): number {
  const groups = encodedGroups(spans);
  for (const group of groups) {
    expect(group.request.equals(Buffer.from(ProtobufTraceSerializer.serializeRequest(group.spans)!))).to.equal(true);
  }
  expect(groups.reduce((n, g) => n + g.spans.length, 0)).to.equal(spans.length);
  return groups.length;
}

function recordedSpans(make: (tracers: api.Tracer[]) => void): ReadableSpan[] {
  const ended: ReadableSpan[] = [];
  const exporter: SpanExporter = { export: (spans, done) => (ended.push(...spans), done({ code: 0 })), shutdown: async () => undefined };
  const providers = [
    resourceFromAttributes({ 'service.name': 'data-access-dataplane', 'deployment.environment.name': 'prod', 'host.cpus': 2 }),
    resourceFromAttributes({ 'service.name': 'other', 'ümlaut': 'größe' }),
  ].map((resource) => new BasicTracerProvider({ resource, sampler: new AlwaysOnSampler(), idGenerator: poolIdGenerator(), spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  make([providers[0].getTracer('data-access'), providers[0].getTracer('other-scope', '1.2.3'), providers[1].getTracer('data-access')]);
  return ended;
}

const remoteParent = api.trace.setSpanContext(api.ROOT_CONTEXT, {
  traceId: '0af7651916cd43dd8448eb211c80319c',
  spanId: 'b7ad6b7169203331',
  traceFlags: 1,
  isRemote: true,
  traceState: new TraceState('vendor=value,other=x'),
});

function variedSpans(): ReadableSpan[] {
  return recordedSpans(([tracer, scoped, elsewhere]) => {
    for (let i = 0; i < 3; i++) {
      const server = tracer.startSpan('GET', { kind: api.SpanKind.SERVER }, i === 0 ? remoteParent : api.ROOT_CONTEXT);
      server.setAttributes({ 'http.request.method': 'GET', 'url.scheme': 'http', 'server.port': 8080, 'client.address': `10.0.0.${i}`, 'user_agent.original': 'curl/8 — ünïcödé \u{1F600}' });
      server.updateName('GET /{dataset}/{schema}/{id}');
      const store = tracer.startSpan('read demo.Company', { kind: api.SpanKind.CLIENT }, api.trace.setSpan(api.ROOT_CONTEXT, server));
      store.setAttributes({ 'db.system': 'postgresql', 'db.operation.name': 'read', 'db.collection.name': 'demo.Company', 'db.operation.batch.size': 1000 + i });
      store.end();
      server.setAttribute('http.response.status_code', i === 2 ? 503 : 200);
      if (i === 2) server.setStatus({ code: api.SpanStatusCode.ERROR, message: 'unavailable' });
      server.end();
    }
    const odd = scoped.startSpan('odd values', { kind: api.SpanKind.INTERNAL });
    odd.setAttributes({ negative: -5, big: 2 ** 40, huge: 2 ** 70, ratio: 0.25, flag: true, off: false, nan: Number.NaN, list: ['a', 'b'], numbers: [1, 2.5, -3], empty: '' });
    odd.addEvent('an event', { 'event.size': 3 });
    odd.addEvent('bare');
    odd.end();
    const linked = elsewhere.startSpan('deliver', { kind: api.SpanKind.CONSUMER, root: true, links: [{ context: api.trace.getSpanContext(remoteParent)!, attributes: { why: 'write' } }, { context: { traceId: 'ab'.repeat(16), spanId: 'cd'.repeat(8), traceFlags: 0 } }] });
    linked.end();
    tracer.startSpan('producer', { kind: api.SpanKind.PRODUCER }).end();
  });
}

/** The fields of a protobuf message (varints, fixed 32/64, length-delimited); throws where a length runs past the end. */
function fields(buf: Buffer): { no: number; value?: number; bytes?: Buffer }[] {
  const out: { no: number; value?: number; bytes?: Buffer }[] = [];
  let at = 0;
  const varint = () => {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = buf[at++];
      if (byte === undefined) throw new Error('truncated varint');
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
  };
  while (at < buf.length) {
    const tag = varint();
    const no = tag >>> 3;
    const wire = tag & 7;
    if (wire === 0) out.push({ no, value: varint() });
    else if (wire === 1 || wire === 5) at += wire === 1 ? 8 : 4;
    else if (wire === 2) {
      const length = varint();
      if (at + length > buf.length) throw new Error(`field ${no} runs past the end`);
      out.push({ no, bytes: buf.subarray(at, (at += length)) });
    } else throw new Error(`wire type ${wire}`);
  }
  if (at !== buf.length) throw new Error('a field runs past the end');
  return out;
}

const only = (buf: Buffer, no: number): Buffer => {
  const found = fields(buf).filter((f) => f.no === no);
  expect(found).to.have.length(1);
  return found[0].bytes!;
};

describe('OTLP/protobuf encoder (model/telemetry/otlp-encoder.ts)', () => {
  it('writes the bytes the SDK\'s ProtobufTraceSerializer writes, for spans of every shape', () => {
    const spans = variedSpans();
    expect(spans.length).to.equal(9);
    expect(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!).length).to.be.greaterThan(1000);
    // Two resources, one with two scopes: three batches.
    expect(sameAsTheSdk(spans)).to.equal(3);
    // Again, now with every attribute and name in its cache.
    expect(sameAsTheSdk(spans)).to.equal(3);
  });

  it('writes the same bytes for a batch big enough to need longer lengths and a bigger buffer', () => {
    const spans = recordedSpans(([tracer]) => {
      for (let i = 0; i < 2048; i++) {
        const span = tracer.startSpan(`GET /{dataset}/route${i % 50}`, { kind: api.SpanKind.SERVER });
        span.setAttributes({ 'http.route': `/route${i % 50}`, 'client.address': `10.0.${i >> 8}.${i & 255}`, long: 'x'.repeat(i % 300) });
        span.end();
      }
    });
    expect(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!).length).to.be.greaterThan(64 * 1024);
    // The batch's buffer starts at 16 KiB: it grows several times on the way.
    expect(sameAsTheSdk(spans)).to.equal(1);
  });

  it('past its caches\' bound (values an attacker chooses, new keys) it still writes the same bytes', () => {
    const spans = recordedSpans(([tracer]) => {
      for (let i = 0; i < 5000; i++) {
        const span = tracer.startSpan('GET', { kind: api.SpanKind.SERVER });
        span.setAttributes({ 'user_agent.original': `agent ${i}`, [`key${i}`]: i, 'http.request.method': 'GET' });
        span.end();
      }
    });
    expect(sameAsTheSdk(spans)).to.equal(1);
    expect(sameAsTheSdk(spans)).to.equal(1);
  });

  it('a batch in a buffer another batch used and released writes the same bytes, schema URLs included; its request is written once', () => {
    const spans = recordedSpans(([tracer]) => {
      for (let i = 0; i < 300; i++) {
        const span = tracer.startSpan(`GET /{dataset}/route${i % 7}`, { kind: api.SpanKind.SERVER });
        span.setAttributes({ 'client.address': `10.0.1.${i & 255}`, long: 'y'.repeat(i % 500) });
        span.end();
      }
    });
    const first = new SpanBatch(spans[0].resource, spans[0].instrumentationScope);
    spans.forEach((span) => first.add(span));
    expect(Buffer.from(first.request()).equals(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!))).to.equal(true);
    first.release();
    const withSchemas = new BasicTracerProvider({ resource: resourceFromAttributes({ 'service.name': 'schemas' }, { schemaUrl: 'https://opentelemetry.io/schemas/1.30.0' }), sampler: new AlwaysOnSampler() });
    const ended: ReadableSpan[] = [];
    const tracer = withSchemas.getTracer('data-access', '2.0.0', { schemaUrl: 'https://opentelemetry.io/schemas/1.29.0' });
    const second = (() => {
      for (let i = 0; i < 3; i++) {
        const span = tracer.startSpan('short', { kind: api.SpanKind.CLIENT });
        span.end();
        ended.push(span as unknown as ReadableSpan);
      }
      const batch = new SpanBatch(ended[0].resource, ended[0].instrumentationScope);
      ended.forEach((span) => batch.add(span));
      return batch;
    })();
    const theirs = Buffer.from(ProtobufTraceSerializer.serializeRequest(ended)!);
    expect(theirs.toString('latin1')).to.include('schemas/1.30.0').and.include('schemas/1.29.0');
    expect(Buffer.from(second.request()).equals(theirs)).to.equal(true);
    expect(Buffer.from(second.request()).equals(theirs)).to.equal(true);
  });

  it('an id\'s length is the bytes written: an id that is not all hex still leaves a well-formed message', () => {
    const [span] = recordedSpans(([tracer]) => tracer.startSpan('odd id', { kind: api.SpanKind.SERVER }).end());
    const context = span.spanContext();
    // Hex up to 'abcd', then characters Buffer.write('hex') stops at: two bytes, not eight.
    const odd: ReadableSpan = Object.assign(Object.create(span) as ReadableSpan, { spanContext: () => ({ ...context, spanId: 'abcd' + 'zz'.repeat(6) }) });
    const [{ request }] = encodedGroups([odd]);
    const spanMessage = only(only(only(request, 1), 2), 2);
    const fieldsOfSpan = fields(spanMessage);
    expect(fieldsOfSpan.find((f) => f.no === 1)?.bytes?.toString('hex')).to.equal(context.traceId);
    expect(fieldsOfSpan.find((f) => f.no === 2)?.bytes?.toString('hex')).to.equal('abcd');
    expect(fieldsOfSpan.find((f) => f.no === 5)?.bytes?.toString('utf8')).to.equal('odd id');
    expect(fieldsOfSpan.find((f) => f.no === 6)?.value).to.equal(api.SpanKind.SERVER + 1);
  });

});

describe('pooled id generator (model/telemetry/ids.ts)', () => {
  it('gives W3C ids: 32 and 16 lowercase hex characters, not all zeros, not repeating', () => {
    const ids = poolIdGenerator();
    const seen = new Set<string>();
    for (let i = 0; i < 5000; i++) {
      const traceId = ids.generateTraceId();
      const spanId = ids.generateSpanId();
      expect(traceId).to.match(/^[0-9a-f]{32}$/);
      expect(spanId).to.match(/^[0-9a-f]{16}$/);
      expect(api.isValidTraceId(traceId) && api.isValidSpanId(spanId)).to.equal(true);
      seen.add(traceId).add(spanId);
    }
    expect(seen.size).to.equal(10000);
  });
});
