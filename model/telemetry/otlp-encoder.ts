/**
 * OTLP/protobuf encoding of an export request (ExportTraceServiceRequest), byte for byte what the
 * SDK's ProtobufTraceSerializer writes for the same spans (otlp-encoder.test.ts compares them), at
 * a fraction of its cost, each span encoded as it ends (`SpanBatch`, encoding-processor.ts): the spans of a data plane repeat the same few attributes (route, method,
 * store, schema), so each attribute's encoded KeyValue and each span name is encoded once and
 * copied after; ids go from hex to bytes natively; each message is written once (the SDK's walks
 * every span twice, to estimate the size, then to write).
 *
 * The caches are bounded (ENCODED_CACHE_ENTRIES): past that, values are encoded each time, so
 * attacker-chosen values (a User-Agent) cannot grow memory.
 */
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { Attributes, AttributeValue, HrTime, Link, SpanContext } from '@opentelemetry/api';
import type { AttributeTemplate } from './attribute-template.js';

const ENCODED_CACHE_ENTRIES = 4096;
const MIN_64_BIT_INT = -(2 ** 63);
const MAX_64_BIT_INT = 2 ** 63;
const SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE = 0x100;
const SPAN_FLAGS_CONTEXT_IS_REMOTE = 0x200;

type Resource = ReadableSpan['resource'];
type Scope = ReadableSpan['instrumentationScope'];

/** A growable buffer with protobuf's primitive writes. */
class Writer {
  buffer: Buffer;
  pos = 0;
  constructor(sizeOrBuffer: number | Buffer) {
    this.buffer = typeof sizeOrBuffer === 'number' ? Buffer.allocUnsafe(sizeOrBuffer) : sizeOrBuffer;
  }

  ensure(size: number): void {
    if (this.pos + size <= this.buffer.length) return;
    let length = this.buffer.length * 2;
    while (length < this.pos + size) length *= 2;
    const bigger = Buffer.allocUnsafe(length);
    this.buffer.copy(bigger, 0, 0, this.pos);
    this.buffer = bigger;
  }

  tag(field: number, wireType: number): void {
    this.varint((field << 3) | wireType);
  }

  varint(value: number): void {
    this.ensure(10);
    const buffer = this.buffer;
    if (value >= 0 && value <= 0xffffffff) {
      let v = value >>> 0;
      while (v > 0x7f) {
        buffer[this.pos++] = (v & 0x7f) | 0x80;
        v >>>= 7;
      }
      buffer[this.pos++] = v;
      return;
    }
    // 64-bit, two's complement for negatives, as the SDK's writer.
    const abs = Math.abs(value);
    let low = abs >>> 0;
    let high = (abs / 0x100000000) >>> 0;
    if (value < 0) {
      low = (~low + 1) >>> 0;
      high = ~high >>> 0;
      if (low === 0) high = (high + 1) >>> 0;
    }
    while (high > 0 || low > 0x7f) {
      buffer[this.pos++] = (low & 0x7f) | 0x80;
      low = ((low >>> 7) | (high << 25)) >>> 0;
      high >>>= 7;
    }
    buffer[this.pos++] = low & 0x7f;
  }

  fixed32(value: number): void {
    this.ensure(4);
    // Byte by byte: writeUInt32LE checks its arguments on each of the six calls per span.
    const v = value >>> 0;
    const buffer = this.buffer;
    const pos = this.pos;
    buffer[pos] = v & 0xff;
    buffer[pos + 1] = (v >>> 8) & 0xff;
    buffer[pos + 2] = (v >>> 16) & 0xff;
    buffer[pos + 3] = v >>> 24;
    this.pos = pos + 4;
  }

  /** An HrTime as nanoseconds since the epoch (fixed64), computed in 32-bit halves exactly as the SDK's serializer. */
  time(time: HrTime): void {
    this.ensure(8);
    this.pos = nanosAt(this.buffer, this.pos, time);
  }

  double(value: number): void {
    this.ensure(8);
    this.buffer.writeDoubleLE(value, this.pos);
    this.pos += 8;
  }

  string(text: string): void {
    const length = Buffer.byteLength(text, 'utf8');
    this.varint(length);
    this.ensure(length);
    this.pos += this.buffer.write(text, this.pos, length, 'utf8');
  }

  /** Hex text as bytes, its length the bytes written (Buffer.write stops at the first character that is not hex). */
  hexBytes(hex: string): void {
    const most = hex.length >>> 1;
    const reserved = varintSize(most);
    const at = this.start(reserved);
    this.ensure(most);
    this.pos += this.buffer.write(hex, this.pos, most, 'hex');
    this.finish(at, reserved);
  }

  /** An id's `length` bytes from `source` at `at`, with their length: a loop, cheaper than a native copy's call for 8 or 16 bytes. */
  idBytes(source: Buffer, at: number, length: number): void {
    this.ensure(length + 1);
    this.pos = idAt(this.buffer, this.pos, source, at, length);
  }

  bytes(bytes: Uint8Array): void {
    this.varint(bytes.length);
    this.raw(bytes);
  }

  raw(bytes: Uint8Array): void {
    this.ensure(bytes.length);
    this.buffer.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  /** Leaves `reserved` bytes for a length written by `finish`. */
  start(reserved: number): number {
    this.ensure(reserved);
    const at = this.pos;
    this.pos += reserved;
    return at;
  }

  /** Writes the length of what follows `at + reserved`, moving it when the length takes another size. */
  finish(at: number, reserved: number): void {
    const length = this.pos - at - reserved;
    const size = varintSize(length);
    if (size !== reserved) {
      this.ensure(size - reserved);
      this.buffer.copyWithin(at + size, at + reserved, this.pos);
      this.pos += size - reserved;
    }
    let v = length;
    let p = at;
    while (v > 0x7f) {
      this.buffer[p++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    this.buffer[p] = v;
  }
}

/** An id's `length` bytes from `source` at `at`, after their length, at `pos` of a buffer with room; returns the position after. */
function idAt(buffer: Buffer, pos: number, source: Buffer, at: number, length: number): number {
  buffer[pos++] = length;
  for (let i = 0; i < length; i++) buffer[pos++] = source[at + i];
  return pos;
}

/** An HrTime as fixed64 nanoseconds at `pos` of a buffer with room (`Writer.time`); returns the position after. */
function nanosAt(buffer: Buffer, pos: number, time: HrTime): number {
  const [seconds, nanos] = time;
  const fromLow16 = (seconds & 0xffff) * 1_000_000_000;
  const fromHigh = ((seconds / 0x10000) >>> 0) * 1_000_000_000;
  const low = (fromLow16 >>> 0) + (((fromHigh & 0xffff) * 0x10000) >>> 0) + nanos;
  const high = Math.floor(fromLow16 / 0x100000000) + ((fromHigh / 0x10000) >>> 0) + Math.floor(low / 0x100000000);
  const l = low >>> 0;
  const h = high >>> 0;
  buffer[pos] = l & 0xff;
  buffer[pos + 1] = (l >>> 8) & 0xff;
  buffer[pos + 2] = (l >>> 16) & 0xff;
  buffer[pos + 3] = l >>> 24;
  buffer[pos + 4] = h & 0xff;
  buffer[pos + 5] = (h >>> 8) & 0xff;
  buffer[pos + 6] = (h >>> 16) & 0xff;
  buffer[pos + 7] = h >>> 24;
  return pos + 8;
}

const varintSize = (value: number) => (value < 0x80 ? 1 : value < 0x4000 ? 2 : value < 0x200000 ? 3 : value < 0x10000000 ? 4 : 5);

/** A bounded cache of encodings: once full, what is not in it is encoded each time. */
class Encodings<K> {
  private readonly map = new Map<K, Buffer>();
  private static entries = 0;
  get(key: K): Buffer | undefined {
    return this.map.get(key);
  }
  static full(): boolean {
    return Encodings.entries >= ENCODED_CACHE_ENTRIES;
  }
  remember(key: K, encoded: Buffer): void {
    if (Encodings.full()) return;
    Encodings.entries++;
    this.map.set(key, encoded);
  }
}

function writeAnyValue(w: Writer, value: AttributeValue | Attributes | Uint8Array | null | undefined): void {
  const type = typeof value;
  if (type === 'string') {
    w.tag(1, 2);
    w.string(value as string);
  } else if (type === 'boolean') {
    w.tag(2, 0);
    w.varint(value ? 1 : 0);
  } else if (type === 'number') {
    const number = value as number;
    if (Number.isInteger(number) && number >= MIN_64_BIT_INT && number < MAX_64_BIT_INT) {
      w.tag(3, 0);
      w.varint(number);
    } else {
      w.tag(4, 1);
      w.double(number);
    }
  } else if (value instanceof Uint8Array) {
    w.tag(7, 2);
    w.bytes(value);
  } else if (Array.isArray(value)) {
    w.tag(5, 2);
    const array = w.start(1);
    for (const item of value) {
      w.tag(1, 2);
      const at = w.start(1);
      writeAnyValue(w, item as AttributeValue);
      w.finish(at, 1);
    }
    w.finish(array, 1);
  } else if (type === 'object' && value != null) {
    w.tag(6, 2);
    const list = w.start(1);
    const object = value as Attributes;
    for (const key in object) {
      if (!Object.hasOwn(object, key)) continue;
      w.tag(1, 2);
      const at = w.start(1);
      writeKeyValue(w, key, object[key]);
      w.finish(at, 1);
    }
    w.finish(list, 1);
  }
}

function writeKeyValue(w: Writer, key: string, value: AttributeValue | undefined): void {
  w.tag(1, 2);
  w.string(key);
  w.tag(2, 2);
  const at = w.start(1);
  writeAnyValue(w, value);
  w.finish(at, 1);
}

/** Encoded `KeyValue` messages (without their field tag) by key, then value: strings, booleans and integers. */
const keyValues = new Map<string, Encodings<AttributeValue>>();
const scratch = new Writer(4096);

function encodedKeyValue(key: string, value: AttributeValue | undefined): Buffer | undefined {
  const type = typeof value;
  if (type !== 'string' && type !== 'boolean' && !(type === 'number' && Number.isSafeInteger(value))) return undefined;
  let byValue = keyValues.get(key);
  const cached = byValue?.get(value!);
  if (cached) return cached;
  // Past the bound nothing new is kept (a new key's first pair counts too): the caller writes the pair in place.
  if (Encodings.full()) return undefined;
  scratch.pos = 0;
  writeKeyValue(scratch, key, value);
  const encoded = Buffer.from(scratch.buffer.subarray(0, scratch.pos));
  if (!byValue) keyValues.set(key, (byValue = new Encodings()));
  byValue.remember(value!, encoded);
  return encoded;
}

function writeAttributes(w: Writer, attributes: Attributes | undefined, field: number): void {
  for (const key in attributes) {
    if (!Object.hasOwn(attributes, key)) continue;
    const value = attributes[key];
    w.tag(field, 2);
    const encoded = encodedKeyValue(key, value);
    if (encoded) w.bytes(encoded);
    else {
      const at = w.start(1);
      writeKeyValue(w, key, value);
      w.finish(at, 1);
    }
  }
}

/** Span names as encoded strings (field 5 with its length). */
const names = new Encodings<string>();

function writeName(w: Writer, name: string): void {
  let encoded = names.get(name);
  if (!encoded && Encodings.full()) {
    w.tag(5, 2);
    w.string(name);
    return;
  }
  if (!encoded) {
    scratch.pos = 0;
    scratch.tag(5, 2);
    scratch.string(name);
    encoded = Buffer.from(scratch.buffer.subarray(0, scratch.pos));
    names.remember(name, encoded);
  }
  w.raw(encoded);
}

/** A lean span's attributes in two parts (lean-span.ts): a template shared by many spans, then its own. */
interface TemplatedSpan {
  attributeTemplate: AttributeTemplate | undefined;
  ownAttributes: Attributes;
}

/** Each template's attributes encoded once (as span attributes, field 9), kept on the template (attribute-template.ts `encoding`). */
function encodedTemplate(template: AttributeTemplate): Uint8Array {
  let encoded = template.encoding;
  if (encoded === undefined) {
    const w = new Writer(256);
    writeAttributes(w, template.attributes, 9);
    template.encoding = encoded = w.buffer.subarray(0, w.pos);
  }
  return encoded;
}

const spanFlags = (traceFlags: number, isRemote: boolean | undefined) => (traceFlags & 0xff) | SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE | (isRemote ? SPAN_FLAGS_CONTEXT_IS_REMOTE : 0);

/** Where a lean span's ids are as bytes (lean-span.ts, from the id pool): copied instead of decoded from hex. */
interface IdBytes {
  spanIdBytes: Buffer | undefined;
  spanIdAt: number;
  traceIdBytes: Buffer | undefined;
  traceIdAt: number;
  parentIdBytes: Buffer | undefined;
  parentIdAt: number;
}

/** Trace id, span id and trace state: fields 1–3 of a span and of a link alike. */
function writeContext(w: Writer, context: SpanContext, ids?: Partial<IdBytes>): void {
  w.tag(1, 2);
  if (ids?.traceIdBytes !== undefined) w.idBytes(ids.traceIdBytes, ids.traceIdAt!, 16);
  else w.hexBytes(context.traceId);
  w.tag(2, 2);
  if (ids?.spanIdBytes !== undefined) w.idBytes(ids.spanIdBytes, ids.spanIdAt!, 8);
  else w.hexBytes(context.spanId);
  const traceState = context.traceState?.serialize();
  if (traceState) {
    w.tag(3, 2);
    w.string(traceState);
  }
}

function writeLink(w: Writer, link: Link & { droppedAttributesCount?: number }): void {
  const context = link.context;
  writeContext(w, context);
  if (link.attributes) writeAttributes(w, link.attributes, 4);
  w.tag(5, 0);
  w.varint(link.droppedAttributesCount || 0);
  w.tag(6, 5);
  w.fixed32(spanFlags(context.traceFlags, context.isRemote));
}

function writeSpan(w: Writer, span: ReadableSpan): void {
  const context = span.spanContext();
  const ids = span as ReadableSpan & Partial<IdBytes>;
  writeContext(w, context, ids);
  const parent = span.parentSpanContext;
  if (parent?.spanId) {
    w.tag(4, 2);
    if (ids.parentIdBytes !== undefined) w.idBytes(ids.parentIdBytes, ids.parentIdAt!, 8);
    else w.hexBytes(parent.spanId);
  }
  writeName(w, span.name);
  const kind = span.kind == null ? 0 : span.kind + 1;
  if (kind !== 0) {
    w.tag(6, 0);
    w.varint(kind);
  }
  w.tag(7, 1);
  w.time(span.startTime);
  w.tag(8, 1);
  w.time(span.endTime);
  const templated = span as ReadableSpan & Partial<TemplatedSpan>;
  if (templated.attributeTemplate !== undefined) {
    w.raw(encodedTemplate(templated.attributeTemplate));
    writeAttributes(w, templated.ownAttributes, 9);
  } else if (span.attributes) writeAttributes(w, span.attributes, 9);
  w.tag(10, 0);
  w.varint(span.droppedAttributesCount);
  for (const event of span.events) {
    w.tag(11, 2);
    const at = w.start(1);
    w.tag(1, 1);
    w.time(event.time);
    w.tag(2, 2);
    w.string(event.name);
    if (event.attributes) writeAttributes(w, event.attributes, 3);
    w.tag(4, 0);
    w.varint(event.droppedAttributesCount || 0);
    w.finish(at, 1);
  }
  w.tag(12, 0);
  w.varint(span.droppedEventsCount);
  for (const link of span.links) {
    w.tag(13, 2);
    const at = w.start(1);
    writeLink(w, link);
    w.finish(at, 1);
  }
  w.tag(14, 0);
  w.varint(span.droppedLinksCount);
  w.tag(15, 2);
  const status = w.start(1);
  if (span.status.message) {
    w.tag(2, 2);
    w.string(span.status.message);
  }
  w.tag(3, 0);
  w.varint(span.status.code);
  w.finish(status, 1);
  w.tag(16, 5);
  w.fixed32(spanFlags(context.traceFlags, parent?.isRemote));
}

/** What `writeLeanSpan` reads of a lean span (lean-span.ts) beside the `ReadableSpan` fields. */
type LeanFields = ReadableSpan & IdBytes & TemplatedSpan;

/**
 * A lean span as `writeSpan` writes it, in one pass over a buffer made large enough once: the
 * data plane's spans (pooled ids, no events, links, trace state or status message, names and
 * attributes from the caches) are fixed-size fields around copied encodings, so the per-field
 * calls, capacity checks and generic branches of `writeSpan` are left out (measured: about half
 * of a span's encoding time). Any other span goes through `writeSpan`; the bytes are the same
 * (lean-span.test.ts, otlp-encoder.test.ts compare them with the SDK serializer's).
 */
function writeLeanSpan(w: Writer, span: ReadableSpan & Partial<LeanFields>): boolean {
  const traceBytes = span.traceIdBytes;
  const spanBytes = span.spanIdBytes;
  if (traceBytes === undefined || spanBytes === undefined) return false;
  const context = span.spanContext();
  const parent = span.parentSpanContext;
  const name = names.get(span.name);
  if (
    (parent?.spanId && span.parentIdBytes === undefined) ||
    context.traceState !== undefined ||
    name === undefined ||
    span.events.length !== 0 ||
    span.links.length !== 0 ||
    span.status.message ||
    span.droppedAttributesCount > 0x7f ||
    span.droppedEventsCount > 0x7f ||
    span.droppedLinksCount > 0x7f
  )
    return false;
  const template = span.attributeTemplate === undefined ? undefined : encodedTemplate(span.attributeTemplate);
  const start = span.startTime;
  const end = span.endTime;
  // Ids 2 + 16 + 2 + 8 + 2 + 8, kind 2, times 2 × 9: at most 58 bytes before the name and the template.
  w.ensure(58 + name.length + (template === undefined ? 0 : template.length));
  const buffer = w.buffer;
  let pos = w.pos;
  buffer[pos++] = 0x0a; // 1: trace id
  pos = idAt(buffer, pos, traceBytes, span.traceIdAt!, 16);
  buffer[pos++] = 0x12; // 2: span id
  pos = idAt(buffer, pos, spanBytes, span.spanIdAt!, 8);
  if (parent?.spanId) {
    buffer[pos++] = 0x22; // 4: parent span id
    pos = idAt(buffer, pos, span.parentIdBytes!, span.parentIdAt!, 8);
  }
  buffer.set(name, pos); // 5: the name, its tag included
  pos += name.length;
  const kind = span.kind == null ? 0 : span.kind + 1;
  if (kind !== 0) {
    buffer[pos++] = 0x30; // 6: kind (at most 5)
    buffer[pos++] = kind;
  }
  buffer[pos++] = 0x39; // 7: start, fixed64
  pos = nanosAt(buffer, pos, start);
  buffer[pos++] = 0x41; // 8: end, fixed64
  pos = nanosAt(buffer, pos, end);
  if (template !== undefined) {
    buffer.set(template, pos); // 9: the template's attributes
    pos += template.length;
  }
  w.pos = pos;
  writeAttributes(w, template === undefined ? span.attributes : span.ownAttributes, 9);
  // 10, 12, 14: the dropped counts (each under 128: one byte); 15: status; 16: flags.
  w.ensure(20);
  const tail = w.buffer;
  pos = w.pos;
  tail[pos++] = 0x50;
  tail[pos++] = span.droppedAttributesCount;
  tail[pos++] = 0x60;
  tail[pos++] = span.droppedEventsCount;
  tail[pos++] = 0x70;
  tail[pos++] = span.droppedLinksCount;
  tail[pos++] = 0x7a;
  tail[pos++] = 2;
  tail[pos++] = 0x18;
  tail[pos++] = span.status.code;
  tail[pos++] = 0x85; // (16 << 3) | 5 as a varint
  tail[pos++] = 0x01;
  w.pos = pos;
  w.fixed32(spanFlags(context.traceFlags, parent?.isRemote));
  return true;
}

function writeScope(w: Writer, scope: Scope): void {
  w.tag(1, 2);
  const at = w.start(1);
  w.tag(1, 2);
  w.string(scope.name);
  if (scope.version) {
    w.tag(2, 2);
    w.string(scope.version);
  }
  const { attributes, droppedAttributesCount } = scope as Scope & { attributes?: Attributes; droppedAttributesCount?: number };
  if (attributes) writeAttributes(w, attributes, 3);
  if (droppedAttributesCount) {
    w.tag(4, 0);
    w.varint(droppedAttributesCount);
  }
  w.finish(at, 1);
}

function writeResource(w: Writer, resource: Resource): void {
  w.tag(1, 2);
  const at = w.start(1);
  if (resource.attributes) writeAttributes(w, resource.attributes, 1);
  w.tag(2, 0);
  w.varint(0);
  w.finish(at, 1);
}

/**
 * Buffers of sent batches, kept for the next ones. A batch's buffer grows to about 0.5 MB (2048
 * spans); a fresh buffer that size is memory the allocator maps anew for each batch and the kernel
 * faults in page by page, which was measured as most of tracing's CPU per read at full load
 * (docs/performance.md, "Spans encoded into reused buffers"). At most POOLED_BUFFERS are kept.
 */
const POOLED_BUFFERS = 4;
const FIRST_BATCH_BYTES = 64 * 1024;
const freeBuffers: Buffer[] = [];

/** `value` as a varint at `at` (its size known: varintSize). */
function varintAt(buffer: Buffer, at: number, value: number): void {
  let v = value;
  while (v > 0x7f) {
    buffer[at++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  buffer[at] = v;
}

/** Where a message part is encoded on its own (never `scratch`: the attribute cache writes there). */
const parts = new Writer(4096);

/** A message part encoded on its own (the resource, the scope). */
function encodedPart(write: (w: Writer) => void): Buffer {
  parts.pos = 0;
  write(parts);
  return Buffer.from(parts.buffer.subarray(0, parts.pos));
}

/**
 * Spans of one resource and instrumentation scope, each encoded when it ends, appended to one
 * buffer: the batch of encoding-processor.ts. `request()` writes the ExportTraceServiceRequest's
 * header into room left before the spans (no copy of them), the bytes the SDK's serializer writes
 * for the same spans (otlp-encoder.test.ts). A queued span is bytes in this buffer, not objects on
 * the heap; the buffer is reused once the batch is sent (`release`).
 */
export class SpanBatch {
  private readonly w: Writer;
  /** Field 1 of ResourceSpans (the resource) and of ScopeSpans (the scope), encoded. */
  private readonly resourcePart: Buffer;
  private readonly scopePart: Buffer;
  /** Where the spans start: room for the header (two tags, two lengths of up to 5 bytes, the parts). */
  private readonly head: number;
  count = 0;

  /** Bytes of the spans encoded so far (the request is these, the header and the schema URLs). */
  get spanBytes(): number {
    return this.w.pos - this.head;
  }

  constructor(
    readonly resource: Resource,
    readonly scope: Scope,
  ) {
    this.resourcePart = encodedPart((w) => writeResource(w, resource));
    this.scopePart = encodedPart((w) => writeScope(w, scope));
    this.head = 12 + this.resourcePart.length + this.scopePart.length;
    this.w = new Writer(freeBuffers.pop() ?? Buffer.allocUnsafeSlow(FIRST_BATCH_BYTES));
    this.w.ensure(this.head);
    this.w.pos = this.head;
  }

  /** Encodes `span` (ended: nothing changes it after) at the end of the batch, as a ScopeSpans field. */
  add(span: ReadableSpan): void {
    const w = this.w;
    w.tag(2, 2);
    const at = w.start(2);
    if (!writeLeanSpan(w, span)) writeSpan(w, span);
    w.finish(at, 2);
    this.count++;
  }

  private encoded: Uint8Array | undefined;

  /** The ExportTraceServiceRequest of this batch, as OTLP/protobuf (a view of the batch's buffer: valid until `release`). */
  request(): Uint8Array {
    return (this.encoded ??= this.finishRequest());
  }

  private finishRequest(): Uint8Array {
    const w = this.w;
    if (this.scope.schemaUrl) {
      w.tag(3, 2);
      w.string(this.scope.schemaUrl);
    }
    const scopeSpans = this.scopePart.length + w.pos - this.head;
    const scopeEnd = w.pos;
    if (this.resource.schemaUrl) {
      w.tag(3, 2);
      w.string(this.resource.schemaUrl);
    }
    const resourceSpans = this.resourcePart.length + 1 + varintSize(scopeSpans) + scopeSpans + (w.pos - scopeEnd);
    // The header, right to left, ending where the spans start.
    const buffer = w.buffer;
    let at = this.head - this.scopePart.length;
    this.scopePart.copy(buffer, at);
    at -= varintSize(scopeSpans);
    varintAt(buffer, at, scopeSpans);
    buffer[--at] = (2 << 3) | 2;
    at -= this.resourcePart.length;
    this.resourcePart.copy(buffer, at);
    at -= varintSize(resourceSpans);
    varintAt(buffer, at, resourceSpans);
    buffer[--at] = (1 << 3) | 2;
    return buffer.subarray(at, w.pos);
  }

  /** The request was sent (or failed for good): its buffer serves a later batch. */
  release(): void {
    if (freeBuffers.length < POOLED_BUFFERS) freeBuffers.push(this.w.buffer);
  }
}
