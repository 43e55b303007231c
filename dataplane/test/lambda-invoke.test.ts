/**
 * The function gateway's Lambda Invoke API, called by the real AWS SDK v3 LambdaClient with an
 * endpoint override: SigV4 verified against the configured access keys (secrets as mounted files),
 * the invocation payloads of `POST /`, Event and DryRun, and Lambda's errors as the SDK raises them.
 */
import { InvokeCommand, LambdaClient, LambdaServiceException, ResourceNotFoundException, InvalidRequestContentException, RequestTooLargeException, TooManyRequestsException } from '@aws-sdk/client-lambda';
import { Hash } from '@smithy/hash-node';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { accessKeyStore } from '../src/function-gateway/access-keys.js';
import { startFunctionGateway } from '../src/function-gateway/server.js';
import { startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { capturingLogger } from '../test-support/logs.js';

const FUNCTION = 'service-local-function-service-gateway';
const ARN = `arn:aws:lambda:eu-west-1:123456789012:function:${FUNCTION}`;
/** demo-admin is one of the example dataset's principals; stranger is not. */
const ADMIN = { accessKeyId: 'AKIDLAMBDAADMIN00001', secretAccessKey: 'admin-secret-key/with+slash' };
const STRANGER = { accessKeyId: 'AKIDLAMBDASTRANGER01', secretAccessKey: 'stranger-secret-key' };
const dataset = { id: 'demo' };

type Result = { data: any; status: { code: number; message?: string } };
const decode = (payload: Uint8Array | undefined): Result => JSON.parse(Buffer.from(payload ?? []).toString('utf8'));
const encode = (payload: unknown): Uint8Array => Buffer.from(JSON.stringify(payload));

/** The error an SDK call rejects with. */
async function rejection(promise: Promise<unknown>): Promise<LambdaServiceException> {
  try {
    await promise;
  } catch (err) {
    return err as LambdaServiceException;
  }
  throw new Error('expected the call to fail');
}

describe('Lambda Invoke API on the function gateway (AWS SDK v3 LambdaClient)', function () {
  this.timeout(60000);
  let dp: TestDataPlane;
  let gateway: Awaited<ReturnType<typeof startFunctionGateway>>;
  const gatewayLog = capturingLogger();
  let secretsDir: string;
  const client = (credentials = ADMIN, extra: Record<string, unknown> = {}) =>
    new LambdaClient({ endpoint: gateway.url, region: 'eu-west-1', credentials, maxAttempts: 1, ...extra });
  const invoke = (input: Partial<ConstructorParameters<typeof InvokeCommand>[0]> & { Payload?: Uint8Array }, credentials = ADMIN, extra: Record<string, unknown> = {}) =>
    client(credentials, extra).send(new InvokeCommand({ FunctionName: FUNCTION, ...input }));

  before(async () => {
    secretsDir = mkdtempSync(join(tmpdir(), 'das-lambda-secrets-'));
    mkdirSync(join(secretsDir, 'lambda-keys'));
    writeFileSync(join(secretsDir, 'lambda-keys', 'admin'), `${ADMIN.secretAccessKey}\n`);
    writeFileSync(join(secretsDir, 'lambda-keys', 'stranger'), STRANGER.secretAccessKey);
    const keys = [
      { name: 'demo-admin', accessKeyId: ADMIN.accessKeyId, secretRef: { name: 'lambda-keys', key: 'admin' } },
      { name: 'stranger', accessKeyId: STRANGER.accessKeyId, secretRef: { name: 'lambda-keys', key: 'stranger' } },
    ];
    dp = await startTestDataPlane();
    gateway = await startFunctionGateway({
      upstreamUrl: dp.url,
      principal: FUNCTION,
      logger: gatewayLog.logger,
      port: 0,
      host: '127.0.0.1',
      accessKeys: accessKeyStore(keys, { DAS_SECRETS_DIR: secretsDir }),
    });
  });
  after(async () => {
    await gateway?.stop();
    await dp?.stop();
  });

  it('creates a record (RequestResponse): 200, the gateway\'s JSON result, X-Amz-Executed-Version $LATEST, as the key\'s principal', async () => {
    const out = await invoke({ Payload: encode({ operation: 'create', dataset, schema: 'demo.Company', data: { id: 'lambda-co', name: 'Lambda Co' } }) });
    expect(out.StatusCode).to.equal(200);
    expect(out.ExecutedVersion).to.equal('$LATEST');
    expect(out.FunctionError).to.equal(undefined);
    expect(decode(out.Payload)).to.deep.equal({ data: { id: 'lambda-co', version: 1, name: 'Lambda Co' }, status: { code: 201 } });
    expect(out.$metadata.requestId, 'x-amzn-RequestId').to.match(/^[0-9a-f-]{36}$/);
  });

  it('reads it by ARN with :$LATEST, and by name with Qualifier=$LATEST', async () => {
    const get = encode({ operation: 'get', dataset, schema: 'demo.Company', id: 'lambda-co' });
    for (const input of [{ FunctionName: `${ARN}:$LATEST` }, { FunctionName: FUNCTION, Qualifier: '$LATEST' }, { FunctionName: `123456789012:function:${FUNCTION}` }]) {
      const out = await invoke({ ...input, Payload: get });
      expect(out.StatusCode, JSON.stringify(input)).to.equal(200);
      expect(decode(out.Payload)).to.deep.equal({ data: { id: 'lambda-co', version: 1, name: 'Lambda Co' }, status: { code: 200 } });
    }
  });

  it('answers the function\'s own errors as results (200, status.code, no X-Amz-Function-Error), as POST / does', async () => {
    const missing = await invoke({ Payload: encode({ operation: 'get', dataset, schema: 'demo.Company', id: 'no-such-co' }) });
    expect(missing.StatusCode).to.equal(200);
    expect(missing.FunctionError).to.equal(undefined);
    expect(decode(missing.Payload).status.code).to.equal(404);
    const typo = decode((await invoke({ Payload: encode({ operation: 'get', dataset, schema: 'demo.Company', id: 'x', bogus: 1 }) })).Payload);
    expect(typo.status.code).to.equal(400);
    expect(typo.data.details).to.deep.equal([{ path: '$.bogus', message: 'is not a field of operation "get" (it takes operation, dataset, executor, schema, id, expand)' }]);
  });

  it('calls the data plane as the access key\'s name: a principal the dataset does not list is refused there', async () => {
    const out = await invoke({ Payload: encode({ operation: 'get', dataset, schema: 'demo.Company', id: 'lambda-co' }) }, STRANGER);
    expect(out.StatusCode).to.equal(200);
    const result = decode(out.Payload);
    expect(result.status.code, JSON.stringify(result)).to.equal(403);
    expect(result.status.message).to.include('stranger');
  });

  it('Event: 202 at once, and the operation runs in the background', async () => {
    const out = await invoke({ InvocationType: 'Event', Payload: encode({ operation: 'create', dataset, schema: 'demo.Company', data: { id: 'lambda-event-co', name: 'Async Co' } }) });
    expect(out.StatusCode).to.equal(202);
    expect(Buffer.from(out.Payload ?? []).length).to.equal(0);
    const get = encode({ operation: 'get', dataset, schema: 'demo.Company', id: 'lambda-event-co' });
    let result = decode((await invoke({ Payload: get })).Payload);
    while (result.status.code === 404) {
      await new Promise((r) => setTimeout(r, 20));
      result = decode((await invoke({ Payload: get })).Payload);
    }
    expect(result).to.deep.equal({ data: { id: 'lambda-event-co', version: 1, name: 'Async Co' }, status: { code: 200 } });
  });

  it('DryRun: 204 after the signature and payload are checked, and nothing is written', async () => {
    const out = await invoke({ InvocationType: 'DryRun', Payload: encode({ operation: 'create', dataset, schema: 'demo.Company', data: { id: 'lambda-dry-co', name: 'Dry Co' } }) });
    expect(out.StatusCode).to.equal(204);
    // Event invocations would have been accepted by now; a dry run never writes.
    const got = decode((await invoke({ Payload: encode({ operation: 'get', dataset, schema: 'demo.Company', id: 'lambda-dry-co' }) })).Payload);
    expect(got.status.code).to.equal(404);
    const invalid = await rejection(invoke({ InvocationType: 'DryRun', Payload: encode({ operation: 'create', dataset, schema: 'demo.Company' }) }));
    expect(invalid).to.be.instanceOf(InvalidRequestContentException);
    expect(invalid.message).to.equal('$.data is required by operation "create"');
    expect(invalid.$metadata.httpStatusCode).to.equal(400);
  });

  it('a wrong secret key is InvalidSignatureException (403); an unknown access key id UnrecognizedClientException (403)', async () => {
    const wrong = await rejection(invoke({ Payload: encode({ operation: 'list', dataset, schema: 'demo.Company' }) }, { ...ADMIN, secretAccessKey: 'not-the-secret' }));
    expect(wrong.name).to.equal('InvalidSignatureException');
    expect(wrong.$metadata.httpStatusCode).to.equal(403);
    expect(wrong.message).to.include('The request signature we calculated does not match the signature you provided');
    const unknown = await rejection(invoke({ Payload: encode({ operation: 'list', dataset, schema: 'demo.Company' }) }, { accessKeyId: 'AKIDNOBODY0000000000', secretAccessKey: 'x' }));
    expect(unknown.name).to.equal('UnrecognizedClientException');
    expect(unknown.$metadata.httpStatusCode).to.equal(403);
    expect(unknown.message).to.include('AKIDNOBODY0000000000');
  });

  it('an unknown function (or version) is ResourceNotFoundException (404) with Lambda\'s body', async () => {
    const err = await rejection(invoke({ FunctionName: 'service-other-function-service-gateway', Payload: encode({ operation: 'list', dataset, schema: 'demo.Company' }) }));
    expect(err).to.be.instanceOf(ResourceNotFoundException);
    expect(err.$metadata.httpStatusCode).to.equal(404);
    expect((err as ResourceNotFoundException).Type).to.equal('User');
    expect(err.message).to.equal(`Function not found: service-other-function-service-gateway (this gateway serves ${FUNCTION})`);
    const version = await rejection(invoke({ FunctionName: FUNCTION, Qualifier: '7', Payload: encode({ operation: 'list', dataset, schema: 'demo.Company' }) }));
    expect(version).to.be.instanceOf(ResourceNotFoundException);
    expect(version.message).to.include(`${FUNCTION}:7`);
  });

  it('a payload that is not JSON is InvalidRequestContentException; one over the limit RequestTooLargeException (413)', async () => {
    const bad = await rejection(invoke({ Payload: Buffer.from('{"operation": ') }));
    expect(bad).to.be.instanceOf(InvalidRequestContentException);
    expect(bad.message).to.match(/^Could not parse request body into json: /);
    const big = await rejection(invoke({ Payload: encode({ operation: 'create', dataset, schema: 'demo.Company', data: { name: 'x'.repeat(1024 * 1024 + 1) } }) }));
    expect(big).to.be.instanceOf(RequestTooLargeException);
    expect(big.$metadata.httpStatusCode).to.equal(413);
  });

  it('a request signed more than 5 minutes ago is InvalidSignatureException (Signature expired); the SDK corrects its clock from Date and retries', async () => {
    const signer = new SignatureV4({ credentials: ADMIN, region: 'eu-west-1', service: 'lambda', sha256: Hash.bind(null, 'sha256') });
    const url = new URL(gateway.url);
    const body = JSON.stringify({ operation: 'list', dataset, schema: 'demo.Company' });
    const signed = await signer.sign(
      new HttpRequest({ method: 'POST', protocol: 'http:', hostname: url.hostname, port: Number(url.port), path: `/2015-03-31/functions/${FUNCTION}/invocations`, headers: { host: url.host, 'content-type': 'application/json' }, body }),
      { signingDate: new Date(Date.now() - 6 * 60 * 1000) },
    );
    const res = await fetch(`${gateway.url}${signed.path}`, { method: 'POST', headers: signed.headers, body });
    expect(res.status).to.equal(403);
    expect(res.headers.get('x-amzn-errortype')).to.equal('InvalidSignatureException');
    expect(((await res.json()) as { message: string }).message).to.match(/^Signature expired: \d{8}T\d{6}Z is now earlier than \d{8}T\d{6}Z \(\d{8}T\d{6}Z - 5 min\.\)$/);
    // A client whose clock is 10 minutes slow: its first attempt is refused, the SDK takes the offset from Date and succeeds.
    const out = await invoke({ Payload: encode({ operation: 'get', dataset, schema: 'demo.Company', id: 'lambda-co' }) }, ADMIN, { maxAttempts: 2, systemClockOffset: -10 * 60 * 1000 });
    expect(out.StatusCode).to.equal(200);
  });

  it('an unsigned request is MissingAuthenticationTokenException (403), and other operations UnknownOperationException', async () => {
    const res = await fetch(`${gateway.url}/2015-03-31/functions/${FUNCTION}/invocations`, { method: 'POST', body: '{}' });
    expect(res.status).to.equal(403);
    expect(res.headers.get('x-amzn-errortype')).to.equal('MissingAuthenticationTokenException');
    const list = await fetch(`${gateway.url}/2015-03-31/functions/`);
    expect(list.status).to.equal(404);
    expect(list.headers.get('x-amzn-errortype')).to.equal('UnknownOperationException');
  });
});

describe('Lambda Invoke API: Event invocations are bounded', function () {
  this.timeout(30000);
  let upstream: Server;
  let gateway: Awaited<ReturnType<typeof startFunctionGateway>>;
  const held: (() => void)[] = [];
  let stopped = false;

  before(async () => {
    const secretsDir = mkdtempSync(join(tmpdir(), 'das-lambda-secrets-'));
    mkdirSync(join(secretsDir, 'keys'));
    writeFileSync(join(secretsDir, 'keys', 'k'), ADMIN.secretAccessKey);
    // A data plane that answers only when told to: the one Event invocation allowed stays running.
    upstream = createServer((req, res) => {
      req.resume();
      held.push(() => res.writeHead(201, { 'content-type': 'application/json' }).end('{"id":"x","version":1}'));
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    gateway = await startFunctionGateway({
      upstreamUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
      principal: FUNCTION,
      logger: pino({ level: 'silent' }),
      port: 0,
      accessKeys: accessKeyStore([{ name: 'demo-admin', accessKeyId: ADMIN.accessKeyId, secretRef: { name: 'keys', key: 'k' } }], { DAS_SECRETS_DIR: secretsDir }),
      maxEventInvocations: 1,
    });
  });
  after(async () => {
    for (const release of held) release();
    if (!stopped) await gateway?.stop();
    upstream?.close();
  });

  it('past maxEventInvocations running at once: TooManyRequestsException (429) with Reason, and stop() waits for the one running', async () => {
    const client = new LambdaClient({ endpoint: gateway.url, region: 'eu-west-1', credentials: ADMIN, maxAttempts: 1 });
    const payload = encode({ operation: 'create', dataset, schema: 'demo.Company', data: { name: 'A' } });
    expect((await client.send(new InvokeCommand({ FunctionName: FUNCTION, InvocationType: 'Event', Payload: payload }))).StatusCode).to.equal(202);
    const err = await rejection(client.send(new InvokeCommand({ FunctionName: FUNCTION, InvocationType: 'Event', Payload: payload })));
    expect(err).to.be.instanceOf(TooManyRequestsException);
    expect(err.$metadata.httpStatusCode).to.equal(429);
    expect((err as TooManyRequestsException).Reason).to.equal('ReservedFunctionConcurrentInvocationLimitExceeded');
    const stopping = gateway.stop().then(() => (stopped = true));
    while (held.length === 0) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setImmediate(r));
    expect(stopped, 'stop() waits for the running Event invocation').to.equal(false);
    held.shift()!();
    await stopping;
    expect(stopped).to.equal(true);
  });
});

describe('Lambda Invoke API under trust verified', function () {
  this.timeout(30000);
  let upstream: Server;
  let gateway: Awaited<ReturnType<typeof startFunctionGateway>>;
  const seen: { authorization?: string; body: string }[] = [];

  before(async () => {
    const secretsDir = mkdtempSync(join(tmpdir(), 'das-lambda-secrets-'));
    mkdirSync(join(secretsDir, 'keys'));
    writeFileSync(join(secretsDir, 'keys', 'admin'), ADMIN.secretAccessKey);
    writeFileSync(join(secretsDir, 'keys', 'stranger'), STRANGER.secretAccessKey);
    // The data plane, recording who the gateway calls it as.
    upstream = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seen.push({ authorization: req.headers.authorization, body: Buffer.concat(chunks).toString() });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"lambda-co","version":1}');
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    gateway = await startFunctionGateway({
      upstreamUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
      principal: FUNCTION,
      logger: pino({ level: 'silent' }),
      port: 0,
      accessKeys: accessKeyStore(
        [
          { name: 'demo-admin', accessKeyId: ADMIN.accessKeyId, secretRef: { name: 'keys', key: 'admin' } },
          { name: 'stranger', accessKeyId: STRANGER.accessKeyId, secretRef: { name: 'keys', key: 'stranger' } },
        ],
        { DAS_SECRETS_DIR: secretsDir },
      ),
      // SigV4 callers never reach the token verifier: only invokers and the upstream token matter here.
      verified: { verifier: undefined as never, audience: 'unused', invokers: ['demo-*'], upstreamAuthorization: () => 'Bearer the-gateway-own-token' },
    });
  });
  after(async () => {
    await gateway?.stop();
    upstream?.close();
  });

  it('a key whose name matches invokers is served, the data plane called with the gateway\'s own token; another is AccessDeniedException (403)', async () => {
    const client = (credentials: typeof ADMIN) => new LambdaClient({ endpoint: gateway.url, region: 'eu-west-1', credentials, maxAttempts: 1 });
    const payload = encode({ operation: 'get', dataset, schema: 'demo.Company', id: 'lambda-co' });
    const out = await client(ADMIN).send(new InvokeCommand({ FunctionName: FUNCTION, Payload: payload }));
    expect(decode(out.Payload)).to.deep.equal({ data: { id: 'lambda-co', version: 1 }, status: { code: 200 } });
    expect(seen.map((s) => s.authorization)).to.deep.equal(['Bearer the-gateway-own-token']);
    const denied = await rejection(client(STRANGER).send(new InvokeCommand({ FunctionName: FUNCTION, Payload: payload })));
    expect(denied.name).to.equal('AccessDeniedException');
    expect(denied.$metadata.httpStatusCode).to.equal(403);
    expect(denied.message).to.include('User: stranger is not authorized to perform: lambda:InvokeFunction');
    expect(seen, 'the refused call never reached the data plane').to.have.length(1);
  });
});
