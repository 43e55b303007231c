/**
 * The http/protobuf span processor (encoding-processor.ts) batches as the SDK's BatchSpanProcessor:
 * a full batch sent at once, a partial one after the schedule delay, one export at a time, a
 * bounded queue (overflow dropped and counted), failures and timeouts reported and the next batch
 * sent, flush and shutdown sending everything queued; each request is the bytes the SDK's
 * serializer writes for the same spans.
 */
import { expect } from 'chai';
import * as api from '@opentelemetry/api';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOnSampler, BasicTracerProvider, SamplingDecision, type ReadableSpan, type Sampler, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { EncodingBatchProcessor, type BatchExporter, type EncodingBatchOptions } from './encoding-processor.js';
import type { SpanBatch } from './otlp-encoder.js';

const resource = resourceFromAttributes({ 'service.name': 'data-access-dataplane' });

/** An exporter that keeps each batch's request and its `done`, answered when the test says (or at once). */
class HeldExporter implements BatchExporter {
  readonly requests: Buffer[] = [];
  readonly pending: ((result: ExportResult) => void)[] = [];
  shutdowns = 0;
  constructor(private readonly answer?: () => ExportResult) {}
  export(batch: SpanBatch, done: (result: ExportResult) => void): void {
    this.requests.push(Buffer.from(batch.request()));
    if (this.answer) {
      const result = this.answer();
      setImmediate(() => done(result));
    } else this.pending.push(done);
  }
  release(result: ExportResult = { code: ExportResultCode.SUCCESS }): void {
    this.pending.shift()!(result);
  }
  async shutdown(): Promise<void> {
    this.shutdowns++;
  }
}

const ok = (): ExportResult => ({ code: ExportResultCode.SUCCESS });

/** A provider whose spans go to the processor under test and, in the same order, to `ended`. */
function setup(options: Partial<EncodingBatchOptions>, exporter: BatchExporter, sampler: Sampler = new AlwaysOnSampler()) {
  const processor = new EncodingBatchProcessor(exporter, { maxExportBatchSize: 3, maxQueueSize: 100, scheduledDelayMillis: 60_000, ...options });
  const ended: ReadableSpan[] = [];
  const recorder: SpanProcessor = { onStart: () => undefined, onEnd: (span) => void ended.push(span), forceFlush: async () => undefined, shutdown: async () => undefined };
  const provider = new BasicTracerProvider({ resource, sampler, spanProcessors: [recorder, processor] });
  const tracer = provider.getTracer('data-access');
  const spans = (count: number, from = tracer) => {
    for (let i = 0; i < count; i++) {
      const span = from.startSpan(`GET /{dataset}/{schema}/{id}`, { kind: api.SpanKind.SERVER });
      span.setAttributes({ 'http.request.method': 'GET', 'client.address': `10.0.0.${i}` });
      span.end();
    }
  };
  return { processor, ended, spans, provider };
}

const theSdks = (spans: ReadableSpan[]) => Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!);
const tick = () => new Promise((resolve) => setImmediate(resolve));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** diag's messages while `fn` runs. */
async function diagnostics(fn: () => Promise<void>): Promise<{ level: string; message: string }[]> {
  const seen: { level: string; message: string }[] = [];
  const log = (level: string) => (message: string, ...args: unknown[]) => void seen.push({ level, message: [message, ...args.map(String)].join(' ') });
  api.diag.setLogger({ error: log('error'), warn: log('warn'), info: log('info'), debug: log('debug'), verbose: log('verbose') }, api.DiagLogLevel.ALL);
  try {
    await fn();
  } finally {
    api.diag.disable();
  }
  return seen;
}

describe('encoding span processor (model/telemetry/encoding-processor.ts)', () => {
  it('sends a full batch at once and the rest on flush; each request is the SDK serializer\'s for those spans, in order', async () => {
    const exporter = new HeldExporter(ok);
    const { processor, ended, spans } = setup({}, exporter);
    spans(7);
    // The first full batch is sent as it fills; the second waits for the first export's answer.
    expect(exporter.requests).to.have.length(1);
    await tick();
    expect(exporter.requests).to.have.length(2);
    await processor.forceFlush();
    expect(exporter.requests).to.have.length(3);
    expect(exporter.requests[0].equals(theSdks(ended.slice(0, 3)))).to.equal(true);
    expect(exporter.requests[1].equals(theSdks(ended.slice(3, 6)))).to.equal(true);
    expect(exporter.requests[2].equals(theSdks(ended.slice(6)))).to.equal(true);
  });

  it('sends a batch once its spans reach maxBatchBytes, before it has maxExportBatchSize spans; no request is much larger', async () => {
    // A span's bytes in a request: the request of ten spans less the request of one, over nine.
    const probe = setup({ maxExportBatchSize: 100 }, new HeldExporter(ok));
    probe.spans(10);
    const perSpan = (theSdks(probe.ended).length - theSdks(probe.ended.slice(0, 1)).length) / 9;
    // Room for three and a half spans: the fourth sends the batch.
    const exporter = new HeldExporter(ok);
    const { processor, ended, spans } = setup({ maxExportBatchSize: 100, maxBatchBytes: Math.round(3.5 * perSpan) }, exporter);
    spans(10);
    await processor.forceFlush();
    expect(exporter.requests).to.have.length(3);
    expect(exporter.requests[0].equals(theSdks(ended.slice(0, 4)))).to.equal(true);
    expect(exporter.requests[1].equals(theSdks(ended.slice(4, 8)))).to.equal(true);
    expect(exporter.requests[2].equals(theSdks(ended.slice(8)))).to.equal(true);
  });

  it('sends fewer spans than a batch after the schedule delay, not before', async () => {
    const exporter = new HeldExporter(ok);
    const { ended, spans } = setup({ scheduledDelayMillis: 80 }, exporter);
    spans(2);
    await sleep(20);
    expect(exporter.requests).to.have.length(0);
    await sleep(150);
    expect(exporter.requests).to.have.length(1);
    expect(exporter.requests[0].equals(theSdks(ended))).to.equal(true);
  });

  it('sends one batch at a time', async () => {
    const exporter = new HeldExporter();
    const { spans } = setup({}, exporter);
    spans(9);
    await tick();
    expect(exporter.requests).to.have.length(1);
    exporter.release();
    await tick();
    expect(exporter.requests).to.have.length(2);
    exporter.release();
    exporter.release();
    expect(exporter.requests).to.have.length(3);
  });

  it('bounds the queue: spans past maxQueueSize are dropped and counted, and it takes spans again once an export ends', async () => {
    const exporter = new HeldExporter();
    const { ended, spans } = setup({ maxExportBatchSize: 2, maxQueueSize: 4 }, exporter);
    const seen = await diagnostics(async () => {
      spans(10);
      // Two batches queued (one being sent): 4 spans; the other 6 dropped.
      expect(exporter.requests).to.have.length(1);
      exporter.release();
      spans(2);
      exporter.release();
      exporter.release();
    });
    expect(seen.filter((d) => d.level === 'warn').map((d) => d.message)).to.deep.equal(['Dropped 6 spans because maxQueueSize reached']);
    expect(exporter.requests).to.have.length(3);
    expect(exporter.requests[2].equals(theSdks(ended.slice(10, 12)))).to.equal(true);
  });

  it('reports a failed export and one that times out through the global error handler, then sends the next batch; a late answer changes nothing', async () => {
    const exporter = new HeldExporter();
    const { spans, processor } = setup({ exportTimeoutMillis: 300 }, exporter);
    const seen = await diagnostics(async () => {
      spans(9);
      exporter.release({ code: ExportResultCode.FAILED, error: new Error('collector said 400') });
      expect(exporter.requests).to.have.length(2);
      // The second never answers: after the timeout the third goes.
      await sleep(100);
      expect(exporter.requests).to.have.length(2);
      while (exporter.requests.length < 3) await sleep(10);
      const late = exporter.pending.shift()!;
      exporter.release();
      late({ code: ExportResultCode.SUCCESS });
      spans(1);
      const flushed = processor.forceFlush();
      expect(exporter.requests).to.have.length(4);
      exporter.release();
      await flushed;
    });
    expect(exporter.requests).to.have.length(4);
    const errors = seen.filter((d) => d.level === 'error').map((d) => d.message);
    expect(errors, errors.join('\n')).to.have.length(2);
    expect(errors[0]).to.include('collector said 400');
    expect(errors[1]).to.include('Timeout');
  });

  it('leaves out spans that are recorded but not sampled', async () => {
    const exporter = new HeldExporter(ok);
    const recordOnly: Sampler = { shouldSample: () => ({ decision: SamplingDecision.RECORD }), toString: () => 'record only' };
    const { processor, ended, spans } = setup({}, exporter, recordOnly);
    spans(4);
    await processor.forceFlush();
    expect(ended).to.have.length(4);
    expect(exporter.requests).to.have.length(0);
  });

  it('puts spans of another instrumentation scope in a batch of their own, in the order they ended', async () => {
    const exporter = new HeldExporter(ok);
    const { processor, ended, spans, provider } = setup({ maxExportBatchSize: 10 }, exporter);
    const other = provider.getTracer('other-scope', '1.0.0');
    spans(2);
    spans(1, other);
    spans(2);
    await processor.forceFlush();
    expect(exporter.requests).to.have.length(3);
    expect(exporter.requests.map((request, i) => request.equals(theSdks([ended.slice(0, 2), ended.slice(2, 3), ended.slice(3)][i])))).to.deep.equal([true, true, true]);
  });

  it('flushes at once with nothing queued; shutdown sends everything queued, shuts the exporter down once, and takes no span after', async () => {
    const exporter = new HeldExporter(ok);
    const { processor, ended, spans } = setup({ maxExportBatchSize: 4 }, exporter);
    await processor.forceFlush();
    expect(exporter.requests).to.have.length(0);
    spans(6);
    const first = processor.shutdown();
    spans(3);
    await Promise.all([first, processor.shutdown()]);
    expect(exporter.shutdowns).to.equal(1);
    expect(exporter.requests).to.have.length(2);
    expect(exporter.requests[1].equals(theSdks(ended.slice(4, 6)))).to.equal(true);
  });
});
