/**
 * `npx tsx bench/tracing-micro.ts`: a tight loop of exactly the tracing work a traced read adds, a
 * few seconds in one process (no lock needed), CPU per read by process.cpuUsage. Parts, each
 * measured alone so that what costs what shows:
 *
 * - `ids`: the SDK's RandomIdGenerator against ours (model/telemetry/ids.ts), a trace id and two
 *   span ids per read;
 * - `spans`: the SDK's span work for the read's two spans (start, attributes, name by route, end)
 *   with a processor that drops them, then with the batch processor (exports discarded);
 * - `isolated`: the same two spans timed call by call, back to back and each after an idle wait (a
 *   server's read at a fixed rate runs alone, its caches and predictors cold): the SDK's tracer,
 *   the lean one the project uses (model/telemetry/lean-span.ts), and two plain records (the
 *   least a recorder could do);
 * - `encode`: the OTLP encoding of those spans (the SDK's serializers, as its exporters call them,
 *   and this project's protobuf encoder, model/telemetry/otlp-encoder.ts);
 * - `read`: the project's own path (model/telemetry/tracing.ts through dataplane/src/telemetry:
 *   startRequestSpan, nameRequestSpan, a store span, the answer) exporting to a sink in this process.
 *
 * MICRO_READS (200000) reads per part, MICRO_PARTS (all) a comma list of parts, MICRO_ROOT another
 * checkout whose tracing code the `read` part runs, MICRO_PROTOCOL (http/protobuf) its export's. Run it with Node 20
 * (`node --import tsx`) and the image's Node 24 (`~/.cache/data-access-node24/bin/node --import tsx`).
 */
import { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as api from '@opentelemetry/api';
import * as sdk from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { poolIdGenerator } from '../model/telemetry/ids.js';
import { SpanBatch } from '../model/telemetry/otlp-encoder.js';
import { LeanTracer } from '../model/telemetry/lean-span.js';
import type { LocationDriver } from '../dataplane/src/engine/contract.js';
import type { DatasetConfig } from '../model/types.js';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/** MICRO_ROOT=<another checkout>: the `read` part runs that checkout's tracing code (before/after of a change). */
const root = pathToFileURL(resolve(process.env.MICRO_ROOT ?? resolve(import.meta.dirname, '..'))).href;
const { startTracing } = (await import(`${root}/model/telemetry/tracing.ts`)) as typeof import('../model/telemetry/tracing.js');
const { nameRequestSpan, traceRequests } = (await import(`${root}/dataplane/src/telemetry/http.ts`)) as typeof import('../dataplane/src/telemetry/http.js');
const { tracedDriver } = (await import(`${root}/dataplane/src/telemetry/store-spans.ts`)) as typeof import('../dataplane/src/telemetry/store-spans.js');

const READS = Number(process.env.MICRO_READS ?? 200_000);
/**
 * MICRO_COLD_KB: before each read of the `read` part, write over a buffer this large, so that the
 * read finds the CPU's caches as a server's read does (everything else ran in between) rather than
 * hot from the previous iteration. The same for off and on: their difference is tracing's cost.
 */
const COLD_BYTES = Number(process.env.MICRO_COLD_KB ?? 0) * 1024;
/**
 * MICRO_PACE_MS: the `read` part waits this long (a timer, the process idle) before each read, as a
 * server at a fixed rate does, instead of running the reads back to back. The wait costs the same
 * for off and on; their difference is tracing's cost when each read runs alone after idling.
 */
const PACED_MS = Number(process.env.MICRO_PACE_MS ?? 0);
/** The warm-up runs back to back (the JIT's tiers up), the paced reads after it. */
let pacing = false;
const READ_WARM_UP = PACED_MS > 0 ? 100_000 : undefined;
const coldBuffer = new Uint32Array(COLD_BYTES / 4);
function evictCaches(): void {
  // One write per 64-byte line.
  for (let at = 0; at < coldBuffer.length; at += 16) coldBuffer[at]++;
}
const PARTS = (process.env.MICRO_PARTS ?? 'ids,spans,isolated,encode,read').split(',');

/** CPU µs per read of `work` run `reads` times (after a warm-up of a tenth). */
async function measure(label: string, reads: number, work: (i: number) => void | Promise<void>, warmUp = reads / 10): Promise<number> {
  pacing = false;
  for (let i = 0; i < warmUp; i++) await work(i);
  pacing = true;
  const start = process.cpuUsage();
  for (let i = 0; i < reads; i++) await work(i);
  const used = process.cpuUsage(start);
  const us = (used.user + used.system) / reads;
  console.log(`${label.padEnd(58)} ${us.toFixed(2).padStart(7)} µs per read`);
  return us;
}

const ROUTE_ATTRIBUTES = { 'http.request.method': 'GET', 'url.scheme': 'http', 'network.protocol.version': '1.1', 'server.address': 'iam.localhost', 'client.address': '127.0.0.1', 'user_agent.original': 'autocannon' };
const STORE_ATTRIBUTES = () => ({ 'db.system': 'postgresql', 'db.operation.name': 'read', 'das.dataset': 'demo', 'db.collection.name': 'demo.Company' });

/** The read's two spans, on `tracer`, as the project makes them. */
function twoSpans(tracer: api.Tracer): void {
  const server = tracer.startSpan('GET', { kind: api.SpanKind.SERVER }, api.ROOT_CONTEXT);
  server.setAttributes(ROUTE_ATTRIBUTES);
  server.updateName('GET /{dataset}/{schema}/{id}');
  server.setAttribute('http.route', '/{dataset}/{schema}/{id}');
  const store = tracer.startSpan('read demo.Company', { kind: api.SpanKind.CLIENT }, api.trace.setSpan(api.ROOT_CONTEXT, server));
  store.setAttributes(STORE_ATTRIBUTES());
  store.end();
  server.setAttribute('http.response.status_code', 200);
  server.end();
}

const resource = resourceFromAttributes({ 'service.name': 'micro' });
/** The provider's default span limits, as model/telemetry/tracing.ts gives both recorders. */
const LIMITS = { attributeCountLimit: 128, attributeValueLengthLimit: Infinity, eventCountLimit: 128, linkCountLimit: 128, attributePerEventCountLimit: 128, attributePerLinkCountLimit: 128 };
const collected: sdk.ReadableSpan[] = [];
const keep: sdk.SpanExporter = {
  export: (spans, done) => {
    if (collected.length < 4096) collected.push(...spans.slice(0, 4096 - collected.length));
    done({ code: 0 });
  },
  shutdown: async () => undefined,
};

if (PARTS.includes('ids')) {
  const theirs = new sdk.RandomIdGenerator();
  const ours = poolIdGenerator();
  await measure('ids: SDK RandomIdGenerator (trace id + 2 span ids)', READS * 5, () => {
    theirs.generateTraceId();
    theirs.generateSpanId();
    theirs.generateSpanId();
  });
  await measure('ids: pooled crypto ids (trace id + 2 span ids)', READS * 5, () => {
    ours.generateTraceId();
    ours.generateSpanId();
    ours.generateSpanId();
  });
}

if (PARTS.includes('spans')) {
  for (const [label, idGenerator] of [['SDK ids', undefined], ['pooled ids', poolIdGenerator()]] as const) {
    const dropping = new sdk.BasicTracerProvider({ resource, sampler: new sdk.AlwaysOnSampler(), idGenerator, spanProcessors: [new sdk.NoopSpanProcessor()] });
    await measure(`spans (${label}), processor dropping them`, READS, () => twoSpans(dropping.getTracer('micro')));
    const batch = new sdk.BasicTracerProvider({ resource, sampler: new sdk.AlwaysOnSampler(), idGenerator, spanProcessors: [new sdk.BatchSpanProcessor(keep, { maxExportBatchSize: 2048, maxQueueSize: 8192, scheduledDelayMillis: 5000 })] });
    await measure(`spans (${label}), BatchSpanProcessor (exports discarded)`, READS, (i) => {
      twoSpans(batch.getTracer('micro'));
      // The batch processor exports when 2048 spans wait; a turn of the loop lets its promise run.
      if (i % 1024 === 1023) return new Promise((done) => setImmediate(done));
    });
  }
}

if (PARTS.includes('isolated')) {
  // The read's two spans timed alone (process.cpuUsage around the call), back to back and then
  // each after a 2 ms idle wait as in a server at 400 reads/s; beside them the least a recorder
  // could do (two plain objects, ids, times), and nothing (what cpuUsage itself costs).
  const batch = new sdk.BasicTracerProvider({ resource, sampler: new sdk.AlwaysOnSampler(), idGenerator: poolIdGenerator(), spanProcessors: [new sdk.BatchSpanProcessor(keep, { maxExportBatchSize: 2048, maxQueueSize: 8192, scheduledDelayMillis: 5000 })] });
  const ids = poolIdGenerator();
  const kept: object[] = [];
  const plain = () => {
    const traceId = ids.generateTraceId();
    const server = { name: 'GET', kind: 1, traceId, spanId: ids.generateSpanId(), start: performance.now(), end: 0, attributes: { ...ROUTE_ATTRIBUTES } as api.Attributes };
    server.name = 'GET /{dataset}/{schema}/{id}';
    server.attributes['http.route'] = '/{dataset}/{schema}/{id}';
    kept.push({ name: 'read demo.Company', kind: 2, traceId, spanId: ids.generateSpanId(), parent: server.spanId, start: performance.now(), end: performance.now(), attributes: STORE_ATTRIBUTES() });
    server.attributes['http.response.status_code'] = 200;
    server.end = performance.now();
    kept.push(server);
    if (kept.length > 4096) kept.length = 0;
  };
  const leanProcessor = new sdk.BatchSpanProcessor(keep, { maxExportBatchSize: 2048, maxQueueSize: 8192, scheduledDelayMillis: 5000 });
  const lean = new LeanTracer({ resource, scope: { name: 'micro' }, sampler: new sdk.AlwaysOnSampler(), idGenerator: poolIdGenerator(), processor: leanProcessor, limits: LIMITS });
  const work: [string, () => void][] = [
    ['the SDK\'s two spans, batch processor', () => twoSpans(batch.getTracer('micro'))],
    ['the lean tracer\'s two spans, batch processor', () => twoSpans(lean)],
    ['two plain records', plain],
    ['nothing', () => undefined],
  ];
  for (const paceMs of [0, 2]) {
    for (const [label, run] of work) {
      for (let i = 0; i < 100_000; i++) {
        run();
        if (i % 1024 === 1023) await new Promise((done) => setImmediate(done));
      }
      let us = 0;
      for (let i = 0; i < 4000; i++) {
        await new Promise((done) => (paceMs ? setTimeout(done, paceMs) : setImmediate(done)));
        const start = process.cpuUsage();
        run();
        const used = process.cpuUsage(start);
        us += used.user + used.system;
      }
      console.log(`isolated: ${label}, ${paceMs ? `after ${paceMs} ms idle` : 'back to back'}`.padEnd(58), (us / 4000).toFixed(2).padStart(7), 'µs per read');
    }
  }
  await batch.shutdown();
  await leanProcessor.shutdown();
}

if (PARTS.includes('encode')) {
  if (collected.length < 2048) {
    const provider = new sdk.BasicTracerProvider({ resource, sampler: new sdk.AlwaysOnSampler(), spanProcessors: [new sdk.SimpleSpanProcessor(keep)] });
    for (let i = 0; i < 2048; i++) twoSpans(provider.getTracer('micro'));
  }
  const batch = collected.slice(0, 2048);
  const batches = Math.max(1, Math.round(READS / 1024));
  await measure('encode: ProtobufTraceSerializer, 2048 spans a batch', batches, () => void ProtobufTraceSerializer.serializeRequest(batch));
  await measure('encode: this project\'s encoder (otlp-encoder.ts SpanBatch: each span as it ends, then the request), 2048 spans', batches, () => {
    const encoded = new SpanBatch(batch[0].resource, batch[0].instrumentationScope);
    for (const span of batch) encoded.add(span);
    encoded.request();
  });
  await measure('encode: JsonTraceSerializer, 2048 spans a batch', batches, () => void JsonTraceSerializer.serializeRequest(batch));
  console.log('(encode figures are per batch of 1024 reads: divide by 1024 for per read)');
}

if (PARTS.includes('read')) {
  const sink = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  await new Promise<void>((done) => sink.listen(0, '127.0.0.1', done));
  const url = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/v1/traces`;
  const protocol = (process.env.MICRO_PROTOCOL ?? 'http/protobuf') as 'http/protobuf' | 'http/json';
  const read = readOnce();
  await measure('read: the same path, tracing off (the harness alone)', READS, read, READ_WARM_UP);
  const tracing = await startTracing({ url, protocol, serviceName: 'micro', resourceAttributes: {}, sampler: 'always_on', ratio: 1, scheduleDelayMs: 5000 }, (message) => console.error(message));
  await measure(`read: the project's path, ${protocol} export to a sink in-process`, READS, read, READ_WARM_UP);
  await tracing.stop();
  sink.close();
}

/** One read through traceRequests, nameRequestSpan and a traced driver (a driver answering at once). */
function readOnce(): (i: number) => Promise<void> {
  const driver = tracedDriver({ kind: 'postgres', read: async () => ({ id: 'bench-co' }) } as unknown as LocationDriver);
  const dataset = { id: 'demo' } as DatasetConfig;
  const route = { path: [':schema', ':id'] };
  const handler = traceRequests((req, res) => {
    nameRequestSpan(req, route);
    void driver.read(dataset, { schema: 'demo.Company', id: 'bench-co' } as never, {} as never).then(() => {
      res.statusCode = 200;
      (res as unknown as { writableFinished: boolean }).writableFinished = true;
      res.emit('close');
    });
  });
  const socket = { remoteAddress: '127.0.0.1' };
  const headers = { host: 'iam.localhost', 'user-agent': 'autocannon', authorization: 'Proxy demo-admin' };
  return async (i) => {
    if (COLD_BYTES > 0) evictCaches();
    if (PACED_MS > 0 && pacing) await new Promise((done) => setTimeout(done, PACED_MS));
    const req = Object.assign(new EventEmitter(), { method: 'GET', url: '/demo/demo.Company/bench-co', httpVersion: '1.1', headers, socket }) as unknown as IncomingMessage;
    const res = Object.assign(new EventEmitter(), { statusCode: 0, req }) as unknown as ServerResponse;
    await new Promise<void>((done) => {
      res.once('close', () => setImmediate(done));
      handler(req, res);
    });
    if (i % 4096 === 0) await new Promise((done) => setTimeout(done, 1));
  };
}
