/**
 * An OTLP/HTTP trace receiver for tests: a node:http server on 127.0.0.1 that takes
 * `POST /v1/traces` in http/json or http/protobuf (decoded here from the wire format, by the field
 * numbers of opentelemetry/proto/trace/v1) and keeps every span, flattened.
 */
import * as api from '@opentelemetry/api';
import { createServer, type Server } from 'node:http';
import type { Tracing } from '../../model/telemetry/tracing.js';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  traceState: string;
  name: string;
  /** 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string }[];
  statusCode: number;
}

export interface OtlpReceiver {
  endpoint: string;
  spans: ReceivedSpan[];
  /** The content types of the exports received. */
  contentTypes: string[];
  /** Each export request's body as received. */
  bodies: Buffer[];
  /** Resolves once `match` holds for the spans received (polls; no wall-clock assertion). */
  waitFor(match: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

// ---- protobuf wire format: just enough to read ExportTraceServiceRequest ----

export type Field = { no: number; wire: number; bytes?: Buffer; int?: bigint };

function varint(buf: Buffer, at: number): [bigint, number] {
  let value = 0n;
  let shift = 0n;
  for (;;) {
    const byte = buf[at++];
    value |= BigInt(byte & 0x7f) << shift;
    if (byte < 0x80) return [value, at];
    shift += 7n;
  }
}

/** The fields of a protobuf message, in order (nested messages left as bytes). */
export function protobufFields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let at = 0;
  while (at < buf.length) {
    const [tag, next] = varint(buf, at);
    at = next;
    const no = Number(tag >> 3n);
    const wire = Number(tag & 7n);
    if (wire === 0) {
      const [int, after] = varint(buf, at);
      out.push({ no, wire, int });
      at = after;
    } else if (wire === 1) {
      out.push({ no, wire, bytes: buf.subarray(at, at + 8) });
      at += 8;
    } else if (wire === 2) {
      const [length, after] = varint(buf, at);
      out.push({ no, wire, bytes: buf.subarray(after, after + Number(length)) });
      at = after + Number(length);
    } else if (wire === 5) {
      out.push({ no, wire, bytes: buf.subarray(at, at + 4) });
      at += 4;
    } else throw new Error(`unexpected wire type ${wire}`);
  }
  return out;
}

const all = (buf: Buffer, no: number) => protobufFields(buf).filter((f) => f.no === no);
const one = (buf: Buffer, no: number) => protobufFields(buf).find((f) => f.no === no);

function anyValue(buf: Buffer): unknown {
  const f = protobufFields(buf)[0];
  if (!f) return undefined;
  if (f.no === 1) return f.bytes!.toString('utf8');
  if (f.no === 2) return f.int !== 0n;
  if (f.no === 3) return Number(BigInt.asIntN(64, f.int!));
  if (f.no === 4) return f.bytes!.readDoubleLE(0);
  return f.bytes?.toString('hex');
}

function protoAttributes(fieldsOf: Field[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of fieldsOf) {
    const key = one(kv.bytes!, 1)?.bytes?.toString('utf8') ?? '';
    const value = one(kv.bytes!, 2)?.bytes;
    out[key] = value ? anyValue(value) : undefined;
  }
  return out;
}

function fromProtobuf(body: Buffer): ReceivedSpan[] {
  return all(body, 1).flatMap((rs) => {
    const resource = one(rs.bytes!, 1)?.bytes;
    const service = String((resource ? protoAttributes(all(resource, 1)) : {})['service.name'] ?? '');
    return all(rs.bytes!, 2).flatMap((ss) =>
      all(ss.bytes!, 2).map((span) => {
        const b = span.bytes!;
        const hex = (no: number) => one(b, no)?.bytes?.toString('hex') ?? '';
        const status = one(b, 15)?.bytes;
        return {
          service,
          traceId: hex(1),
          spanId: hex(2),
          traceState: one(b, 3)?.bytes?.toString('utf8') ?? '',
          parentSpanId: hex(4),
          name: one(b, 5)?.bytes?.toString('utf8') ?? '',
          kind: Number(one(b, 6)?.int ?? 0n),
          attributes: protoAttributes(all(b, 9)),
          links: all(b, 13).map((l) => ({ traceId: one(l.bytes!, 1)?.bytes?.toString('hex') ?? '', spanId: one(l.bytes!, 2)?.bytes?.toString('hex') ?? '' })),
          statusCode: Number((status && one(status, 3)?.int) ?? 0n),
        };
      }),
    );
  });
}

// ---- http/json ----

type JsonValue = { stringValue?: string; boolValue?: boolean; intValue?: string | number; doubleValue?: number };
type JsonKeyValue = { key: string; value: JsonValue };

const jsonAttributes = (list: JsonKeyValue[] | undefined) =>
  Object.fromEntries((list ?? []).map(({ key, value }) => [key, value.stringValue ?? value.boolValue ?? (value.intValue !== undefined ? Number(value.intValue) : value.doubleValue)]));

function fromJson(body: Buffer): ReceivedSpan[] {
  const request = JSON.parse(body.toString('utf8'));
  return (request.resourceSpans ?? []).flatMap((rs: any) => {
    const service = String(jsonAttributes(rs.resource?.attributes)['service.name'] ?? '');
    return (rs.scopeSpans ?? []).flatMap((ss: any) =>
      (ss.spans ?? []).map((s: any) => ({
        service,
        traceId: s.traceId,
        spanId: s.spanId,
        traceState: s.traceState ?? '',
        parentSpanId: s.parentSpanId ?? '',
        name: s.name,
        kind: s.kind,
        attributes: jsonAttributes(s.attributes),
        links: (s.links ?? []).map((l: any) => ({ traceId: l.traceId, spanId: l.spanId })),
        statusCode: s.status?.code ?? 0,
      })),
    );
  });
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const bodies: Buffer[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('error', () => res.destroy());
    req.on('end', () => {
      const type = String(req.headers['content-type'] ?? '');
      contentTypes.push(type);
      bodies.push(Buffer.concat(chunks));
      try {
        if (req.url !== '/v1/traces' || req.method !== 'POST') throw new Error(`unexpected ${req.method} ${req.url}`);
        spans.push(...(type.startsWith('application/json') ? fromJson(Buffer.concat(chunks)) : fromProtobuf(Buffer.concat(chunks))));
        res.writeHead(200, { 'content-type': type.startsWith('application/json') ? 'application/json' : 'application/x-protobuf' });
        res.end(type.startsWith('application/json') ? '{}' : '');
      } catch (err) {
        res.writeHead(400);
        res.end(String(err));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    endpoint,
    spans,
    contentTypes,
    bodies,
    async waitFor(match, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      while (!match(spans)) {
        if (Date.now() > deadline) throw new Error(`spans never matched; received: ${JSON.stringify(spans.map((s) => `${s.service} ${s.name}`))}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      return spans;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Stops tracing started in the test's own process and clears the API's globals, so that the next test can start it anew. */
export function stopped(tracing: Tracing): Promise<void> {
  return tracing.stop().finally(() => {
    api.trace.disable();
    api.context.disable();
    api.propagation.disable();
    api.diag.disable();
  });
}
