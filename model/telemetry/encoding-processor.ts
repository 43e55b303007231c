/**
 * The span processor of the http/protobuf exporter: batches as the SDK's BatchSpanProcessor does
 * (OTEL_BSP_* settings, a bounded queue whose overflow is dropped and counted, a batch sent at once
 * when full or after the schedule delay, one export at a time, each under a timeout, everything
 * queued sent on flush and shutdown, failures reported through the SDK's global error handler),
 * but a span is encoded as it ends into its batch's buffer (otlp-encoder.ts `SpanBatch`) instead
 * of being queued as the span object and encoded at the export.
 *
 * Why: measured (docs/performance.md, "Spans encoded into reused buffers"), the export path's
 * fresh buffer of half a megabyte or more per batch (the serializer's, mapped anew and faulted in
 * page by page) was the largest part of tracing's CPU per read at full load that was not the
 * spans themselves; here a batch's buffer is reused once its export is answered, and nothing of a
 * span is kept on the heap. The export itself stays the SDK's (otlp-exporter.ts: its HTTP
 * transport, retries, timeouts).
 */
import { context, diag, TraceFlags } from '@opentelemetry/api';
import { ExportResultCode, globalErrorHandler, suppressTracing, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { SpanBatch } from './otlp-encoder.js';

/**
 * Under 4 MiB, every OTLP receiver's default limit (the Collector's HTTP receiver and its
 * distributions' take 20 MiB, a gRPC hop behind them 4 MiB): the 64 KiB left are room for the
 * last span added (attributes are bounded: names, a 256-character user agent, a trace state) and
 * the request's header.
 */
export const MAX_BATCH_BYTES = 4 * 1024 * 1024 - 64 * 1024;

/** Sends one batch; `done` is called once with the result (a late call after the timeout is ignored). */
export interface BatchExporter {
  export(batch: SpanBatch, done: (result: ExportResult) => void): void;
  shutdown(): Promise<void>;
}

export interface EncodingBatchOptions {
  maxExportBatchSize: number;
  /**
   * A batch is also sent once its encoded spans reach this many bytes (default MAX_BATCH_BYTES), so
   * no export request grows past what receivers take whatever the spans carry.
   */
  maxBatchBytes?: number;
  maxQueueSize: number;
  scheduledDelayMillis: number;
  /** The SDK's default: 30 s. */
  exportTimeoutMillis?: number;
}

export class EncodingBatchProcessor implements SpanProcessor {
  /** The batch spans are added to. */
  private current: SpanBatch | undefined;
  /** Full (or flushed) batches waiting for their export, oldest first. */
  private readonly sealed: SpanBatch[] = [];
  private inFlight: SpanBatch | undefined;
  /** Spans in `current`, `sealed` and `inFlight`: the queue the SDK's maxQueueSize bounds. */
  private queued = 0;
  private dropped = 0;
  private timer: NodeJS.Timeout | undefined;
  private closing = false;
  private shutDown: Promise<void> | undefined;
  /** Resolves flushes: each waits for the export of the last batch queued when it was called. */
  private readonly waiters = new Map<SpanBatch, (() => void)[]>();
  private readonly maxExportBatchSize: number;
  private readonly maxBatchBytes: number;

  constructor(
    private readonly exporter: BatchExporter,
    private readonly options: EncodingBatchOptions,
  ) {
    this.maxExportBatchSize = Math.min(options.maxExportBatchSize, options.maxQueueSize);
    this.maxBatchBytes = options.maxBatchBytes ?? MAX_BATCH_BYTES;
  }

  onStart(): void {}

  onEnd(span: ReadableSpan): void {
    if (this.closing || (span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
    if (this.queued >= this.options.maxQueueSize) {
      if (this.dropped++ === 0) diag.debug('maxQueueSize reached, dropping spans');
      return;
    }
    if (this.dropped > 0) {
      diag.warn(`Dropped ${this.dropped} spans because maxQueueSize reached`);
      this.dropped = 0;
    }
    let batch = this.current;
    // One resource and scope per batch (the request groups by them); another starts a batch of its own.
    if (batch === undefined || batch.resource !== span.resource || batch.scope !== span.instrumentationScope) {
      this.seal();
      batch = this.current = new SpanBatch(span.resource, span.instrumentationScope);
    }
    batch.add(span);
    this.queued++;
    if (batch.count >= this.maxExportBatchSize || batch.spanBytes >= this.maxBatchBytes) {
      this.seal();
      this.exportNext();
    } else if (this.timer === undefined && this.inFlight === undefined) this.startTimer();
  }

  forceFlush(): Promise<void> {
    this.seal();
    const last = this.sealed.at(-1) ?? this.inFlight;
    if (last === undefined) return Promise.resolve();
    return new Promise((resolve) => {
      const waiting = this.waiters.get(last);
      if (waiting) waiting.push(resolve);
      else this.waiters.set(last, [resolve]);
      this.exportNext();
    });
  }

  shutdown(): Promise<void> {
    this.shutDown ??= this.forceFlush().then(() => {
      this.closing = true;
      this.clearTimer();
      return this.exporter.shutdown();
    });
    // Spans ending after shutdown was asked for are not taken (as the SDK's processor).
    this.closing = true;
    return this.shutDown;
  }

  private startTimer(): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.seal();
      this.exportNext();
    }, this.options.scheduledDelayMillis);
    this.timer.unref();
  }

  private clearTimer(): void {
    if (this.timer === undefined) return;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private seal(): void {
    if (this.current !== undefined && this.current.count > 0) this.sealed.push(this.current);
    this.current = undefined;
  }

  /** Sends the oldest sealed batch unless one is being sent; with none sealed, waits for the current batch's delay. */
  private exportNext(): void {
    if (this.inFlight !== undefined) return;
    const batch = this.sealed.shift();
    if (batch === undefined) {
      if (this.current !== undefined && this.timer === undefined && !this.closing) this.startTimer();
      return;
    }
    this.clearTimer();
    this.inFlight = batch;
    let finished = false;
    const done = (result: ExportResult, timedOut = false): void => {
      if (finished) return;
      finished = true;
      // After a timeout the transport may still be writing the request: its buffer is not reused.
      if (!timedOut) batch.release();
      clearTimeout(deadline);
      this.inFlight = undefined;
      this.queued -= batch.count;
      if (result.code !== ExportResultCode.SUCCESS) globalErrorHandler(result.error ?? new Error('span export failed'));
      const waiting = this.waiters.get(batch);
      this.waiters.delete(batch);
      this.exportNext();
      for (const resolve of waiting ?? []) resolve();
    };
    const deadline = setTimeout(() => done({ code: ExportResultCode.FAILED, error: new Error('Timeout') }, true), this.options.exportTimeoutMillis ?? 30_000);
    deadline.unref();
    // The export's own calls (HTTP) start no spans.
    context.with(suppressTracing(context.active()), () => {
      try {
        this.exporter.export(batch, done);
      } catch (error) {
        done({ code: ExportResultCode.FAILED, error: error as Error });
      }
    });
  }
}
