/**
 * The OTLP http/protobuf span exporter with this project's encoder (otlp-encoder.ts) in place of
 * the SDK's serializer: the SDK's own transport (the same HTTP agent, retries, timeouts, bounded
 * concurrent exports, error reporting through `diag`) built as the SDK's OTLPTraceExporter builds
 * it, only the serializer differs. Loaded only when tracing is on.
 */
import { OTLPExporterBase } from '@opentelemetry/otlp-exporter-base';
import { convertLegacyHttpOptions, createOtlpHttpExportDelegate } from '@opentelemetry/otlp-exporter-base/node-http';
import { ProtobufTraceSerializer, TraceExporterMetricsHelper, type ISerializer } from '@opentelemetry/otlp-transformer';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { encodeTraceExportRequest } from './otlp-encoder.js';

type Response = ReturnType<typeof ProtobufTraceSerializer.deserializeResponse>;

const serializer: ISerializer<ReadableSpan[], Response> = {
  serializeRequest: encodeTraceExportRequest,
  deserializeResponse: ProtobufTraceSerializer.deserializeResponse,
};

export class ProtobufSpanExporter extends OTLPExporterBase<ReadableSpan[]> {
  constructor(url: string) {
    super(createOtlpHttpExportDelegate(convertLegacyHttpOptions({ url }, 'TRACES', 'v1/traces', { 'Content-Type': 'application/x-protobuf' }), serializer, 'otlp_http_span_exporter', TraceExporterMetricsHelper, undefined));
  }
}
