/**
 * The OTLP http/protobuf exporter of span batches (encoding-processor.ts): the SDK's own transport
 * (the same HTTP agent, retries, timeouts, bounded concurrent exports, error reporting through
 * `diag`) built as the SDK's OTLPTraceExporter builds it; only the serializer differs, sending the
 * batch's bytes (otlp-encoder.ts `SpanBatch`). Loaded only when tracing is on.
 */
import { OTLPExporterBase } from '@opentelemetry/otlp-exporter-base';
import { convertLegacyHttpOptions, createOtlpHttpExportDelegate } from '@opentelemetry/otlp-exporter-base/node-http';
import { ProtobufTraceSerializer, type ISerializer } from '@opentelemetry/otlp-transformer';
import type { SpanBatch } from './otlp-encoder.js';

type Response = ReturnType<typeof ProtobufTraceSerializer.deserializeResponse>;

const serializer: ISerializer<SpanBatch, Response> = {
  serializeRequest: (batch) => batch.request(),
  deserializeResponse: ProtobufTraceSerializer.deserializeResponse,
};

/** The exporter's self-metrics count spans (as the SDK's trace exporter's do), not batches. */
const spansOfBatch = { name: 'span' as const, countItems: (batch: SpanBatch) => batch.count };

export class ProtobufBatchExporter extends OTLPExporterBase<SpanBatch> {
  constructor(url: string) {
    super(createOtlpHttpExportDelegate(convertLegacyHttpOptions({ url }, 'TRACES', 'v1/traces', { 'Content-Type': 'application/x-protobuf' }), serializer, 'otlp_http_span_exporter', spansOfBatch, undefined));
  }
}
