/**
 * The http/protobuf export path of model/telemetry/tracing.ts (the SDK's transport with this
 * project's encoder), in this process against the test's OTLP receiver: what is still buffered is
 * sent when tracing stops, with names, kinds, parents and attributes intact; an unreachable
 * collector is reported once and never thrown into the code that makes spans.
 */
import { expect } from 'chai';
import * as api from '@opentelemetry/api';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { endSpan, inSpan, startServerSpan, startTracing } from '../../model/telemetry/tracing.js';
import type { TracingConfig } from '../../model/settings/telemetry.js';
import { startOtlpReceiver, stopped } from '../test-support/otlp-receiver.js';

const config = (url: string): TracingConfig => ({ url, protocol: 'http/protobuf', serviceName: 'export-test', resourceAttributes: {}, sampler: 'always_on', ratio: 1, scheduleDelayMs: 600_000 });

/** A read's two spans, as the data plane makes them. */
async function tracedRead(headers: Record<string, string> = {}): Promise<void> {
  const server = startServerSpan(headers, 'GET /{dataset}/{schema}/{id}', { 'http.request.method': 'GET', 'server.port': 8080 })!;
  await api.context.with(api.trace.setSpan(api.ROOT_CONTEXT, server), () =>
    inSpan('read demo.Company', () => ({ 'db.system': 'postgresql', 'db.operation.name': 'read', 'db.collection.name': 'demo.Company' }), async () => 'row', { kind: 'client', childOnly: true, current: false }),
  );
  server.setAttribute('http.response.status_code', 200);
  endSpan(server);
}

/** Polls until `holds` (no wall-clock assertion: the test's own timeout is the bound). */
async function until(holds: () => boolean): Promise<void> {
  while (!holds()) await new Promise((done) => setTimeout(done, 20));
}

describe('tracing export, http/protobuf (model/telemetry/tracing.ts in this process)', function () {
  this.timeout(60_000);

  it('stopping sends what is buffered: both spans of each read, the store call the child of the request', async () => {
    const receiver = await startOtlpReceiver();
    const errors: string[] = [];
    const tracing = await startTracing(config(`${receiver.endpoint}/v1/traces`), (message) => errors.push(message));
    const traceId = 'ab'.repeat(16);
    await tracedRead({ traceparent: `00-${traceId}-${'cd'.repeat(8)}-01` });
    for (let i = 0; i < 5; i++) await tracedRead();
    // The export delay is ten minutes: only the shutdown's flush can have sent them.
    expect(receiver.spans).to.have.length(0);
    await stopped(tracing);
    await receiver.close();
    expect(errors).to.deep.equal([]);
    expect(receiver.contentTypes).to.include('application/x-protobuf');
    expect(receiver.spans).to.have.length(12);
    const servers = receiver.spans.filter((s) => s.kind === 2);
    expect(servers).to.have.length(6);
    for (const server of servers) {
      expect(server).to.include({ service: 'export-test', name: 'GET /{dataset}/{schema}/{id}', statusCode: 0 });
      expect(server.attributes).to.deep.equal({ 'http.request.method': 'GET', 'server.port': 8080, 'http.response.status_code': 200 });
      const children = receiver.spans.filter((s) => s.parentSpanId === server.spanId);
      expect(children).to.have.length(1);
      expect(children[0]).to.include({ kind: 3, name: 'read demo.Company', traceId: server.traceId });
      expect(children[0].attributes).to.deep.equal({ 'db.system': 'postgresql', 'db.operation.name': 'read', 'db.collection.name': 'demo.Company' });
    }
    expect(servers.filter((s) => s.traceId === traceId && s.parentSpanId === 'cd'.repeat(8))).to.have.length(1);
  });

  it('a full batch (OTEL_BSP_MAX_EXPORT_BATCH_SIZE spans) is sent at once, not after the export delay; the rest at the shutdown', async () => {
    const receiver = await startOtlpReceiver();
    const tracing = await startTracing({ ...config(`${receiver.endpoint}/v1/traces`), exportBatchSpans: 4 }, () => undefined);
    await tracedRead();
    await tracedRead();
    // Four spans, a full batch: sent now, though the export delay is ten minutes.
    await until(() => receiver.spans.length === 4);
    await tracedRead();
    await stopped(tracing);
    await receiver.close();
    expect(receiver.spans).to.have.length(6);
  });

  it('an unreachable collector is reported once; making spans never throws', async () => {
    // A collector that takes each connection and drops it at once: every export fails.
    let connections = 0;
    const collector = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((done) => collector.listen(0, '127.0.0.1', done));
    const errors: string[] = [];
    const tracing = await startTracing({ ...config(`http://127.0.0.1:${(collector.address() as AddressInfo).port}/v1/traces`), scheduleDelayMs: 10 }, (message) => errors.push(message));
    await tracedRead();
    await until(() => errors.length > 0);
    // More spans, more failed exports after the first report: none of them is reported again.
    const before = connections;
    for (let i = 0; i < 3; i++) await tracedRead();
    await until(() => connections >= before + 2);
    await stopped(tracing).catch(() => undefined);
    await new Promise<void>((done) => collector.close(() => done()));
    expect(errors).to.have.length(1);
  });
});
