/**
 * OpenTelemetry traces through the real entry points (main.ts as a process, in both modes) with an
 * OTLP receiver in the test: W3C trace context continued from each incoming request (HTTP, WebSocket
 * upgrade, function-gateway invocation) and passed on by the function gateway; SERVER spans named by
 * route template; store spans on PostgreSQL, DynamoDB Local and the Snowflake test peer; bulk-load
 * chunks; subscription deliveries linked to the write's trace; http/protobuf and http/json.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import WebSocket from 'ws';
import { freePort } from '../src/db/embedded.js';
import { call } from '../test-support/http.js';
import { startMain, startReadyMain, stopMain, waitReady, type MainProcess, type ReadyMain } from '../test-support/main-process.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../test-support/otlp-receiver.js';
import { dynamoDbSecrets, dynamoDbTransactionManifests } from '../test-support/dynamodb.js';
import { writePeopleParquet } from '../test-support/transactions.js';
import { warehouseDemoManifests } from '../test-support/snowflake-peer.js';

const admin = { host: 'iam.localhost', headers: { authorization: 'Proxy demo-admin' } };
const FUNCTION = 'service-local-function-service-gateway';
const SERVER = 2;
const CLIENT = 3;
const CONSUMER = 5;

/** A caller's trace context: a fresh trace id and parent span id. */
function callerContext() {
  const traceId = randomBytes(16).toString('hex');
  const parentId = randomBytes(8).toString('hex');
  return { traceId, parentId, headers: { traceparent: `00-${traceId}-${parentId}-01`, tracestate: 'caller=1' } };
}

const otel = (receiver: OtlpReceiver, protocol: string) => ({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: protocol, OTEL_BSP_SCHEDULE_DELAY: '50' });
const inTrace = (spans: ReceivedSpan[], traceId: string) => spans.filter((s) => s.traceId === traceId);
const childrenOf = (spans: ReceivedSpan[], parent: ReceivedSpan) => spans.filter((s) => s.parentSpanId === parent.spanId && s.traceId === parent.traceId);

describe('OpenTelemetry traces (main.ts processes, an OTLP receiver in the test)', function () {
  this.timeout(180_000);
  let receiver: OtlpReceiver;
  let dataPlane: ReadyMain | undefined;
  const importDir = mkdtempSync(join(tmpdir(), 'das-traces-imports-'));

  before(async () => {
    receiver = await startOtlpReceiver();
    dataPlane = await startReadyMain({ ...otel(receiver, 'http/protobuf'), DAS_IMPORT_ROOT: join(importDir, 'imports'), DAS_BULK_CHUNK_ROWS: '50', DAS_BULK_POLL_MS: '100' });
  });
  after(async () => {
    await stopMain(dataPlane);
    await receiver?.close();
  });

  it('PostgreSQL, http/protobuf: SERVER spans named by route template continue the caller\'s trace, store calls are their children', async () => {
    const url = dataPlane!.url;
    const id = `traced-${randomBytes(4).toString('hex')}`;
    const write = callerContext();
    const created = await call(url, { ...admin, headers: { ...admin.headers, ...write.headers }, path: '/demo', body: { create: { schema: 'demo.Company', id, data: { name: 'Traced Co' } } } });
    expect(created.status).to.equal(201);
    const read = callerContext();
    const got = await call(url, { ...admin, headers: { ...admin.headers, ...read.headers }, path: `/demo/demo.Company/${id}` });
    expect(got.status).to.equal(200);

    const spans = await receiver.waitFor((all) => inTrace(all, read.traceId).length >= 2 && inTrace(all, write.traceId).length >= 2);
    const readServer = inTrace(spans, read.traceId).find((s) => s.kind === SERVER)!;
    expect(readServer).to.include({ name: 'GET /{dataset}/{schema}/{id}', parentSpanId: read.parentId, traceState: 'caller=1', service: 'data-access-dataplane' });
    expect(readServer.attributes).to.include({ 'http.request.method': 'GET', 'http.route': '/{dataset}/{schema}/{id}', 'http.response.status_code': 200, 'server.address': 'iam.localhost' });
    const [readStore] = childrenOf(spans, readServer);
    expect(readStore).to.include({ name: 'read demo.Company', kind: CLIENT });
    expect(readStore.attributes).to.include({ 'db.system': 'postgresql', 'db.operation.name': 'read', 'db.collection.name': 'demo.Company' });

    const writeServer = inTrace(spans, write.traceId).find((s) => s.kind === SERVER)!;
    expect(writeServer).to.include({ name: 'POST /{dataset}', parentSpanId: write.parentId });
    expect(writeServer.attributes).to.include({ 'http.response.status_code': 201 });
    expect(childrenOf(spans, writeServer).map((s) => s.name)).to.include('write demo.Company');
    // No id and no value anywhere in a span.
    const text = JSON.stringify(spans);
    expect(text).not.to.contain(id);
    expect(text).not.to.contain('Traced Co');
    expect(receiver.contentTypes).to.include('application/x-protobuf');
  });

  it('a subscription delivery is a span of its own, linked to the trace of the write that made the change (PostgreSQL change log)', async () => {
    const caller = callerContext();
    const ws = new WebSocket(`ws://127.0.0.1:${dataPlane!.port}/demo/graphql`, 'graphql-transport-ws', { headers: { ...admin.headers, host: admin.host } });
    const received: unknown[] = [];
    const subscribed = new Promise<void>((resolve, reject) => {
      ws.once('error', reject);
      ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init' })));
      ws.on('message', (data) => {
        const message = JSON.parse(String(data));
        if (message.type === 'connection_ack') {
          ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: 'subscription { demo_Company { op record { id } } }' } }));
          // The subscription takes its start position before its first event; a short pause is not relied on: the write repeats until one arrives.
          resolve();
        } else if (message.type === 'next') received.push(message.payload);
      });
    });
    try {
      await subscribed;
      const id = `delivered-${randomBytes(4).toString('hex')}`;
      // EVENTUAL: a single statement that appends its own change row. A write under another trace
      // goes first, so a statement reused across writes must still carry each write's own context.
      const earlier = callerContext();
      const warm = await call(dataPlane!.url, { ...admin, headers: { ...admin.headers, ...earlier.headers }, path: '/demo', body: { create: { schema: 'demo.Company', id: `${id}-earlier`, data: { name: 'Earlier Co' }, consistency: 'EVENTUAL' } } });
      expect(warm.status).to.equal(201);
      for (let attempt = 0; received.length === 0 && attempt < 100; attempt++) {
        const written = await call(dataPlane!.url, { ...admin, headers: { ...admin.headers, ...caller.headers }, path: '/demo', body: { create: { schema: 'demo.Company', id: `${id}-${attempt}`, data: { name: 'Delivered Co' }, consistency: 'EVENTUAL' } } });
        expect(written.status).to.equal(201);
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(received.length).to.be.greaterThan(0);
      const spans = await receiver.waitFor((all) => all.some((s) => s.name === 'deliver demo.Company' && s.links.some((l) => l.traceId === caller.traceId)));
      const delivery = spans.find((s) => s.name === 'deliver demo.Company' && s.links.some((l) => l.traceId === caller.traceId))!;
      expect(delivery).to.include({ kind: CONSUMER, parentSpanId: '', service: 'data-access-dataplane' });
      expect(delivery.traceId).not.to.equal(caller.traceId);
      expect(delivery.attributes).to.include({ 'das.dataset': 'demo', 'db.collection.name': 'demo.Company', 'das.change.op': 'CREATE' });
      // The link points at the write's store call, a child of the write's SERVER span.
      const [link] = delivery.links;
      const writeServer = inTrace(spans, caller.traceId).find((s) => s.kind === SERVER)!;
      const writeStore = inTrace(spans, caller.traceId).find((s) => s.spanId === link.spanId)!;
      expect(writeStore).to.include({ name: 'write demo.Company', parentSpanId: writeServer.spanId });
      expect(JSON.stringify(delivery)).not.to.contain(id);
    } finally {
      ws.close();
    }
  });

  it('a bulk load: a span per chunk written, with its size and transaction, no data', async () => {
    writePeopleParquet(importDir, 'traced.parquet', 120, { prefix: 'bulk-traced-' });
    const started = await call(dataPlane!.url, {
      ...admin,
      path: '/demo',
      body: { create: { schema: 'Transaction', data: { actions: [{ locationUri: pathToFileURL(join(importDir, 'imports', 'traced.parquet')).href, operation: 'UPSERT', format: 'PARQUET', schema: 'demo.Person' }] } } },
    });
    expect(started.status, started.text).to.equal(202);
    const transaction = started.json.id as string;
    const ofThisLoad = (all: ReceivedSpan[]) => all.filter((s) => s.name === 'bulk-load chunk demo.Person' && s.attributes['das.transaction.id'] === transaction);
    // 120 rows in chunks of 50: three chunks.
    const chunks = ofThisLoad(await receiver.waitFor((all) => ofThisLoad(all).length >= 3));
    expect(chunks.map((c) => c.attributes['db.operation.batch.size']).sort()).to.deep.equal([20, 50, 50]);
    for (const chunk of chunks) {
      expect(chunk.kind).to.equal(CLIENT);
      expect(chunk.attributes).to.include({ 'db.system': 'postgresql', 'db.operation.name': 'bulk-load chunk', 'db.collection.name': 'demo.Person', 'das.load.operation': 'UPSERT' });
    }
    expect(JSON.stringify(chunks)).not.to.contain('bulk-traced-');
  });

  it('a WebSocket upgrade continues the caller\'s trace: one SERVER span, 101', async () => {
    const caller = callerContext();
    const ws = new WebSocket(`ws://127.0.0.1:${dataPlane!.port}/demo/graphql`, 'graphql-transport-ws', { headers: { ...admin.headers, host: admin.host, ...caller.headers } });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    ws.close();
    const [span] = await receiver.waitFor((all) => inTrace(all, caller.traceId).length >= 1).then((all) => inTrace(all, caller.traceId));
    expect(span).to.include({ name: 'GET /{dataset}/graphql', kind: SERVER, parentSpanId: caller.parentId });
    expect(span.attributes).to.include({ 'http.response.status_code': 101, 'http.route': '/{dataset}/graphql' });
  });

  it('the function gateway (http/json) continues the invocation\'s trace and passes it on to the data plane', async () => {
    const port = await freePort();
    const gatewayUrl = `http://127.0.0.1:${port}`;
    let gateway: MainProcess | undefined = startMain({ DAS_MODE: 'function-gateway', DAS_UPSTREAM_URL: dataPlane!.url, DAS_FUNCTION_NAME: FUNCTION, PORT: String(port), HOST: '127.0.0.1', ...otel(receiver, 'http/json') });
    try {
      await waitReady(gatewayUrl, gateway);
      const caller = callerContext();
      const invoked = await call(gatewayUrl, { path: '/', headers: caller.headers, body: { operation: 'get', dataset: { id: 'demo' }, schema: 'demo.Company', id: 'no-such-company' } });
      expect(invoked.json.status.code).to.equal(404);
      const spans = await receiver.waitFor((all) => inTrace(all, caller.traceId).length >= 3);
      const trace = inTrace(spans, caller.traceId);
      const gatewayServer = trace.find((s) => s.kind === SERVER && s.service === 'data-access-function-gateway')!;
      expect(gatewayServer).to.include({ name: 'POST /', parentSpanId: caller.parentId });
      const [upstream] = childrenOf(trace, gatewayServer);
      // The gateway's `get` is the structured endpoint's read (POST /{dataset}).
      expect(upstream).to.include({ kind: CLIENT, name: 'POST' });
      const dataPlaneServer = trace.find((s) => s.service === 'data-access-dataplane' && s.kind === SERVER)!;
      expect(dataPlaneServer).to.include({ parentSpanId: upstream.spanId, name: 'POST /{dataset}' });
      expect(childrenOf(trace, dataPlaneServer).map((s) => s.attributes['db.system'])).to.include('postgresql');
      expect(receiver.contentTypes).to.include('application/json');
    } finally {
      await stopMain(gateway);
      gateway = undefined;
    }
  });

  it('DynamoDB Local (http/json): store spans say dynamodb', async () => {
    const secrets = await dynamoDbSecrets();
    const manifests = await dynamoDbTransactionManifests(secrets.name);
    const onDynamo = await startReadyMain({ DAS_MANIFESTS: manifests, DAS_SECRETS_DIR: secrets.dir, ...otel(receiver, 'http/json'), OTEL_SERVICE_NAME: 'dp-on-dynamodb' });
    try {
      const caller = callerContext();
      const got = await call(onDynamo.url, { ...admin, headers: { ...admin.headers, ...caller.headers }, path: '/demo/demo.Company?limit=5' });
      expect(got.status).to.equal(200);
      const spans = inTrace(await receiver.waitFor((all) => inTrace(all, caller.traceId).length >= 2), caller.traceId);
      const server = spans.find((s) => s.kind === SERVER)!;
      expect(server).to.include({ name: 'GET /{dataset}/{schema}', service: 'dp-on-dynamodb', parentSpanId: caller.parentId });
      const [store] = childrenOf(spans, server);
      expect(store.attributes).to.include({ 'db.system': 'dynamodb', 'db.operation.name': 'list', 'db.collection.name': 'demo.Company' });
    } finally {
      await stopMain(onDynamo);
    }
  });

  it('the Snowflake test peer: a read by id is a CLIENT span saying snowflake, its operation and schema, no statement and no data', async () => {
    const { manifests, secretsDir } = await warehouseDemoManifests('snowflake');
    const onSnowflake = await startReadyMain({ DAS_MANIFESTS: manifests, DAS_SECRETS_DIR: secretsDir, ...otel(receiver, 'http/protobuf'), OTEL_SERVICE_NAME: 'dp-on-snowflake' });
    try {
      const id = `sf-traced-${randomBytes(4).toString('hex')}`;
      const created = await call(onSnowflake.url, { ...admin, path: '/demo', body: { create: { schema: 'demo.Company', id, data: { name: 'Snowflake Traced Co' } } } });
      expect(created.status, created.text).to.equal(201);
      const caller = callerContext();
      const got = await call(onSnowflake.url, { ...admin, headers: { ...admin.headers, ...caller.headers }, path: `/demo/demo.Company/${id}` });
      expect(got.status, got.text).to.equal(200);
      expect(got.json).to.deep.include({ id });
      const spans = inTrace(await receiver.waitFor((all) => inTrace(all, caller.traceId).length >= 2), caller.traceId);
      const server = spans.find((s) => s.kind === SERVER)!;
      expect(server).to.include({ name: 'GET /{dataset}/{schema}/{id}', service: 'dp-on-snowflake', parentSpanId: caller.parentId });
      const [store] = childrenOf(spans, server);
      expect(store).to.include({ name: 'read demo.Company', kind: CLIENT });
      expect(store.attributes).to.include({ 'db.system': 'snowflake', 'db.operation.name': 'read', 'db.collection.name': 'demo.Company' });
      // Neither the statement nor its bound values nor the record are exported.
      const text = JSON.stringify(spans);
      for (const leaked of [id, 'Snowflake Traced Co', 'SELECT', 'select', 'db.query.text', 'db.statement']) expect(text).not.to.contain(leaked);
    } finally {
      await stopMain(onSnowflake);
    }
  });

  it('without an endpoint nothing is traced: no tracing start-up, no span from that process', async () => {
    const untraced = await startReadyMain({ OTEL_SERVICE_NAME: 'untraced', OTEL_TRACES_SAMPLER: 'always_on' });
    try {
      const caller = callerContext();
      expect((await call(untraced.url, { ...admin, headers: { ...admin.headers, ...caller.headers }, path: '/demo/demo.Company/none' })).status).to.equal(404);
      // The traced process's next span proves the receiver is still taking exports.
      const marker = callerContext();
      await call(dataPlane!.url, { ...admin, headers: { ...admin.headers, ...marker.headers }, path: '/demo/demo.Company/none' });
      await receiver.waitFor((all) => inTrace(all, marker.traceId).length >= 1);
      expect(inTrace(receiver.spans, caller.traceId)).to.deep.equal([]);
      expect(receiver.spans.filter((s) => s.service === 'untraced')).to.deep.equal([]);
      expect(untraced.output()).not.to.contain('tracing to an OTLP collector');
    } finally {
      await stopMain(untraced);
    }
  });
});
