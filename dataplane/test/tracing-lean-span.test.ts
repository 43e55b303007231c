/**
 * The lean span recorder (model/telemetry/lean-span.ts) exports exactly what the SDK's own tracer
 * exports for the data plane's spans: the same requests through the data plane's tracing code
 * (dataplane/src/telemetry: request spans over a real HTTP server, store spans of a traced driver,
 * a write whose change keeps its traceparent, a delivery linked to it, a failing store call, a 503),
 * once with `startTracing(…, 'sdk')` and once with the lean recorder, each through the SDK's batch
 * processor and exporter to the test's OTLP receiver, in http/protobuf (this project's encoder) and
 * http/json (the SDK's exporter). The bodies are compared whole, ids and times normalised.
 */
import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { currentTraceParent, startTracing, type TraceParent } from '../../model/telemetry/tracing.js';
import type { TracingConfig } from '../../model/settings/telemetry.js';
import type { DatasetConfig } from '../../model/types.js';
import type { LocationDriver, RecordChange } from '../src/engine/contract.js';
import { nameRequestSpan, traceRequests } from '../src/telemetry/http.js';
import { tracedDriver } from '../src/telemetry/store-spans.js';
import { traceDelivery } from '../src/telemetry/delivery-spans.js';
import { protobufFields, startOtlpReceiver, stopped } from '../test-support/otlp-receiver.js';

const REMOTE_TRACE = '0af7651916cd43dd8448eb211c80319c';
const REMOTE_SPAN = 'b7ad6b7169203331';
const dataset = { id: 'demo' } as DatasetConfig;

/** A driver answering at once: a write remembers the trace context its change would carry (change-log.ts does so). */
function fakeDriver(writes: TraceParent[]): LocationDriver {
  return {
    kind: 'postgres',
    read: async (_dataset: DatasetConfig, key: { schema: string }) => {
      if (key.schema === 'demo.Broken') throw Object.assign(new Error('terminating connection'), { code: '57P01' });
      return { id: 'acme' };
    },
    write: async () => {
      const trace = currentTraceParent();
      if (trace) writes.push(trace);
      return [];
    },
  } as unknown as LocationDriver;
}

/** The data plane's request handling, reduced to its tracing: named route, store calls, delivery, answer. */
function dataPlaneServer(): Server {
  const writes: TraceParent[] = [];
  const driver = tracedDriver(fakeDriver(writes));
  return createServer(
    traceRequests((req, res) => {
      const broken = req.url!.includes('Broken');
      nameRequestSpan(req, { path: [':schema', ':id'] });
      void (async () => {
        try {
          await driver.read(dataset, { schema: broken ? 'demo.Broken' : 'demo.Company', id: 'acme' } as never, {} as never);
          if (req.method === 'PUT') {
            await driver.write(dataset, [{ schema: 'demo.Company', id: 'acme' }, { schema: 'demo.Company', id: 'other' }] as never, 'ATOMIC' as never, {} as never);
            traceDelivery('demo', { schema: 'demo.Company', op: 'update', writeTrace: writes.pop() } as unknown as RecordChange);
          }
          res.writeHead(200).end('{}');
        } catch {
          res.writeHead(503).end('{}');
        }
      })();
    }),
  );
}

async function requests(base: string): Promise<void> {
  const send = async (method: string, path: string, headers: Record<string, string> = {}) => expect((await fetch(base + path, { method, headers })).status).to.be.oneOf([200, 503]);
  await send('PUT', '/demo/demo.Company/acme', { traceparent: `00-${REMOTE_TRACE}-${REMOTE_SPAN}-01`, tracestate: 'vendor=value,other=x', 'user-agent': 'u'.repeat(300) });
  await send('GET', '/demo/demo.Company/acme');
  await send('GET', '/demo/demo.Broken/acme', { traceparent: `00-${REMOTE_TRACE}-${REMOTE_SPAN}-01` });
  // An unsampled caller: parentbased_always_on records nothing of it, on either recorder.
  await send('PUT', '/demo/demo.Company/acme', { traceparent: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-00` });
}

/** Ids seen for the first time become id1, id2, … (the caller's own stay as they are); times become 'time'. */
function idNames(): (id: string) => string {
  const names = new Map<string, string>([[REMOTE_TRACE, REMOTE_TRACE], [REMOTE_SPAN, REMOTE_SPAN], ['', '']]);
  return (id) => {
    let name = names.get(id);
    if (name === undefined) names.set(id, (name = `id${names.size}`));
    return name;
  };
}

// Paths of field numbers in ExportTraceServiceRequest: resource_spans(1).scope_spans(2).spans(2).…
const MESSAGES = new Set(['.1', '.1.2', '.1.2.2', '.1.2.2.11', '.1.2.2.13', '.1.2.2.15']);
const IDS = new Set(['.1.2.2.1', '.1.2.2.2', '.1.2.2.4', '.1.2.2.13.1', '.1.2.2.13.2']);
const TIMES = new Set(['.1.2.2.7', '.1.2.2.8', '.1.2.2.11.1']);

function protobufView(body: Buffer, id: (id: string) => string, path = ''): unknown[] {
  return protobufFields(body).map((field) => {
    const at = `${path}.${field.no}`;
    if (MESSAGES.has(at)) return [field.no, protobufView(field.bytes!, id, at)];
    if (IDS.has(at)) return [field.no, id(field.bytes!.toString('hex'))];
    if (TIMES.has(at)) return [field.no, 'time'];
    return [field.no, field.bytes ? field.bytes.toString('hex') : String(field.int)];
  });
}

function jsonView(value: unknown, id: (id: string) => string): unknown {
  if (Array.isArray(value)) return value.map((item) => jsonView(item, id));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [key, /^(traceId|spanId|parentSpanId)$/.test(key) ? id(String(item)) : /TimeUnixNano$/.test(key) ? 'time' : jsonView(item, id)]),
  );
}

/** Every span's end is at or after its start (fixed64 nanoseconds). */
function timesInOrder(body: Buffer): boolean {
  return protobufFields(body).every((rs) =>
    protobufFields(rs.bytes!).filter((f) => f.no === 2).every((ss) =>
      protobufFields(ss.bytes!).filter((f) => f.no === 2).every((span) => {
        const time = (no: number) => protobufFields(span.bytes!).find((f) => f.no === no)!.bytes!.readBigUInt64LE(0);
        return time(8) >= time(7) && time(7) > 1_600_000_000_000_000_000n;
      }),
    ),
  );
}

describe('lean spans export what the SDK\'s spans export (model/telemetry/lean-span.ts through the data plane\'s tracing)', function () {
  this.timeout(60_000);
  let server: Server;
  let base: string;

  before(async () => {
    server = dataPlaneServer();
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((done) => server.close(() => done())));

  for (const protocol of ['http/protobuf', 'http/json'] as const) {
    it(`${protocol}: the same export body, ids and times apart`, async () => {
      const exported: Record<'sdk' | 'lean', { bodies: Buffer[]; names: string[] }> = { sdk: { bodies: [], names: [] }, lean: { bodies: [], names: [] } };
      for (const recorder of ['sdk', 'lean'] as const) {
        const receiver = await startOtlpReceiver();
        const errors: string[] = [];
        const config: TracingConfig = { url: `${receiver.endpoint}/v1/traces`, protocol, serviceName: 'lean-test', resourceAttributes: { 'deployment.environment.name': 'test' }, sampler: 'parentbased_always_on', ratio: 1, scheduleDelayMs: 600_000 };
        const tracing = await startTracing(config, (message) => errors.push(message), recorder);
        await requests(base);
        await stopped(tracing);
        await receiver.close();
        expect(errors).to.deep.equal([]);
        exported[recorder] = { bodies: receiver.bodies, names: receiver.spans.map((span) => span.name) };
      }
      const { sdk, lean } = exported;
      // Not vacuous: the three traced requests' spans, and both deliveries (a trace of their own, root spans: recorded
      // for the unsampled caller's write too, linked to its trace).
      expect(lean.names).to.have.members(['read demo.Company', 'write demo.Company', 'deliver demo.Company', 'PUT /{dataset}/{schema}/{id}', 'read demo.Company', 'GET /{dataset}/{schema}/{id}', 'read demo.Broken', 'GET /{dataset}/{schema}/{id}', 'deliver demo.Company']);
      expect(lean.bodies).to.have.length(1);
      if (protocol === 'http/protobuf') {
        expect(timesInOrder(lean.bodies[0])).to.equal(true);
        expect(protobufView(lean.bodies[0], idNames())).to.deep.equal(protobufView(sdk.bodies[0], idNames()));
      } else {
        expect(jsonView(JSON.parse(lean.bodies[0].toString('utf8')), idNames())).to.deep.equal(jsonView(JSON.parse(sdk.bodies[0].toString('utf8')), idNames()));
      }
    });
  }
});
