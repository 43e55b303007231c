/**
 * The function gateway (`DAS_MODE=function-gateway`): `service-E-function-service-gateway` in every
 * environment. `POST /` (or `/invoke`) takes an invocation payload, calls the internal REST API at
 * DAS_UPSTREAM_URL as the principal DAS_FUNCTION_NAME (which datasets allow in
 * `auth.iam.principals`), and answers `{data, status: {code, message}}`.
 *
 * HTTP framing: once the payload has been read, the answer is HTTP 200 whatever `status.code`
 * says, as a synchronous function invocation would be. Before that (wrong path or method, a
 * non-JSON Content-Type, a payload over the limit) the HTTP status is `status.code` itself. Every
 * answer is JSON and carries `x-request-id` (the caller's UUID, or a new one), which is also sent
 * upstream so the data plane's log lines carry the same id.
 */
import { injectTraceContext, tracingOn } from '../../../model/telemetry/tracing.js';
import { nameRequestSpan, traceRequests, upstreamSpan } from '../telemetry/http.js';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { HOST_CHECKED_BY_HANDLER, installClientErrorHandler, requireHost, type ClientErrorRenderer } from '../front-door/client-error.js';
import { AuthError } from '../auth/errors.js';
import { Drain } from '../front-door/drain.js';
import { boundPipelining, type PipeliningLimits } from '../../../model/pipelining.js';
import { pipeliningLogHooks } from '../front-door/pipelining-log.js';
import { InvocationError, toFunctionResult, toRestCall, type FunctionResult } from './translate.js';
import { authenticateInvoker, type VerifiedInvocation } from './trust.js';
import { accessKeyStore, type AccessKeyStore } from './access-keys.js';
import { LAMBDA_API_PREFIX, lambdaApi } from './lambda-api.js';

export interface FunctionGatewayOptions {
  upstreamUrl: string;
  principal: string;
  logger: Logger;
  port?: number;
  host?: string;
  /** Largest accepted payload, bytes (default 1 MiB, as the REST API's body limit). */
  maxPayload?: number;
  /** How long one upstream call may take, ms (default 30 s); then `status.code` 504. */
  upstreamTimeoutMs?: number;
  /** trust verified: callers' ServiceAccount tokens are checked, and the data plane gets the gateway's own token. */
  verified?: VerifiedInvocation;
  /** Per-connection bounds on pipelined requests and unread answers (default DEFAULT_PIPELINING_LIMITS). */
  pipelining?: PipeliningLimits;
  /** The Lambda Invoke API's SigV4 access keys (lambda-api.ts); none: every Lambda call is refused. */
  accessKeys?: AccessKeyStore;
  /** How many Lambda `Event` invocations may run in the background at once (default 100). */
  maxEventInvocations?: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/** Node's refusals of unparseable requests, in the function's result shape. */
export const renderFunctionError: ClientErrorRenderer = ({ status, message }) => ({ data: null, status: { code: status, message } });

/** The Lambda Invoke API's route, as its spans are named. */
const LAMBDA_INVOKE_ROUTE = { path: ['2015-03-31', 'functions', ':FunctionName', 'invocations'] } as const;

/** Reads the payload up to `max` bytes; past that it stops reading (nothing more is buffered). */
export function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        req.off('data', onData);
        req.pause();
        reject(new InvocationError(413, `the payload is larger than ${max} bytes`, 'PAYLOAD_TOO_LARGE'));
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
    req.once('aborted', () => reject(new InvocationError(400, 'the payload was not completely received', 'REQUEST_ABORTED')));
  });
}

/** application/json or any +json type, in UTF-8; no Content-Type at all is taken as JSON. */
export function isJsonContentType(value: string | undefined): boolean {
  if (value === undefined) return true;
  const [type, ...params] = value.split(';').map((s) => s.trim().toLowerCase());
  if (type !== 'application/json' && !/^application\/[a-z0-9.+-]+\+json$/.test(type)) return false;
  const charset = params.find((p) => p.startsWith('charset='))?.slice('charset='.length).replace(/"/g, '');
  return charset === undefined || charset === 'utf-8' || charset === 'utf8';
}

interface UpstreamOptions {
  upstreamUrl: string;
  principal: string;
  upstreamTimeoutMs?: number;
  verified?: VerifiedInvocation;
}

/** Calls the REST API for one payload; the invocation's result, whatever happened upstream. */
export async function invoke(payload: unknown, options: UpstreamOptions, requestId: string = randomUUID()): Promise<FunctionResult> {
  const call = toRestCall(payload, options.principal, requestId);
  // Verified: the gateway's own ServiceAccount token instead of an assertion the data plane would not believe.
  if (options.verified) call.headers.authorization = options.verified.upstreamAuthorization();
  let response: Response;
  let text: string;
  try {
    // The data plane continues the invocation's trace (a CLIENT span when tracing is on).
    ({ response, text } = await upstreamSpan(call.method, options.upstreamUrl, async () => {
      injectTraceContext(call.headers);
      const answer = await fetch(new URL(call.path, options.upstreamUrl), {
        method: call.method,
        headers: call.headers,
        body: call.method === 'POST' ? JSON.stringify(call.body) : undefined,
        signal: AbortSignal.timeout(options.upstreamTimeoutMs ?? 30_000),
      });
      return { response: answer, text: await answer.text() };
    }));
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    if (e.name === 'TimeoutError' || e.name === 'AbortError') {
      throw new InvocationError(504, `the data plane did not answer within ${options.upstreamTimeoutMs ?? 30_000} ms`, 'UPSTREAM_TIMEOUT');
    }
    throw new InvocationError(502, `the data plane could not be reached${e.cause?.code ? ` (${e.cause.code})` : ''}`, 'UPSTREAM_UNREACHABLE');
  }
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    if (response.status < 400) throw new InvocationError(502, `the data plane answered ${response.status} without a JSON body`, 'UPSTREAM_INVALID');
  }
  return toFunctionResult(payload as Record<string, unknown>, call, response.status, body);
}

function send(res: ServerResponse, httpStatus: number, result: FunctionResult, extra: Record<string, string> = {}): void {
  const text = JSON.stringify(result);
  res.writeHead(httpStatus, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...extra });
  res.end(text);
}

/** Framing refusals: the HTTP status is the status code, and the connection ends if a body is left unread. */
const refusal = (code: number, message: string): FunctionResult => ({ data: null, status: { code, message } });

export async function startFunctionGateway(options: FunctionGatewayOptions): Promise<{ server: Server; url: string; stop(options?: { delayMs?: number }): Promise<void> }> {
  const max = options.maxPayload ?? 1024 * 1024;
  const { logger } = options;
  const lambda = lambdaApi({
    functionName: options.principal,
    accessKeys: options.accessKeys ?? accessKeyStore([], {}),
    maxPayload: max,
    maxEventInvocations: options.maxEventInvocations,
    verified: options.verified,
    logger,
    readBody,
    invoke: (payload, principal, requestId) => invoke(payload, { ...options, principal }, requestId),
  });

  const handle = async (req: IncomingMessage, res: ServerResponse, requestId: string): Promise<{ operation?: string; code: number }> => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz' || path === '/readyz') {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        send(res, 405, refusal(405, `${path} answers GET`), { allow: 'GET, HEAD' });
        return { code: 405 };
      }
      if (path === '/readyz' && drain.draining) {
        send(res, 503, { data: { status: 'draining' }, status: { code: 503, message: 'shutting down' } }, { 'retry-after': '1' });
        return { code: 503 };
      }
      send(res, 200, { data: { status: 'ok' }, status: { code: 200 } });
      return { code: 200 };
    }
    if (path.startsWith(LAMBDA_API_PREFIX)) {
      nameRequestSpan(req, LAMBDA_INVOKE_ROUTE, '');
      return lambda.handle(req, res, requestId);
    }
    if (path !== '/' && path !== '/invoke') {
      send(res, 404, refusal(404, 'invoke the function with POST / and a JSON payload'));
      return { code: 404 };
    }
    if (req.method !== 'POST') {
      send(res, 405, refusal(405, 'invoke the function with POST and a JSON payload'), { allow: 'POST' });
      return { code: 405 };
    }
    if (!isJsonContentType(req.headers['content-type'])) {
      send(res, 415, refusal(415, 'the payload must be JSON (Content-Type: application/json, UTF-8)'), { connection: 'close' });
      return { code: 415 };
    }
    if (options.verified) {
      // Before the payload is read: an unverified caller cannot make the gateway buffer anything.
      try {
        const invoker = await authenticateInvoker(req.headers.authorization, options.verified);
        logger.debug({ reqId: requestId, invoker }, 'invoker verified');
      } catch (err) {
        if (!(err instanceof AuthError)) throw err;
        const headers: Record<string, string> = { connection: 'close' };
        if (err.challenge) headers['www-authenticate'] = err.challenge;
        if (err.status === 503) headers['retry-after'] = '1';
        send(res, err.status, new InvocationError(err.status, err.message, err.code).toResult(), headers);
        return { code: err.status };
      }
    }
    const declared = Number(req.headers['content-length']);
    if (declared > max) {
      // Answered before reading a byte of it; the connection closes instead of draining the rest.
      send(res, 413, refusal(413, `the payload is larger than ${max} bytes`), { connection: 'close' });
      return { code: 413 };
    }
    let raw: Buffer;
    try {
      raw = await readBody(req, max);
    } catch (err) {
      const e = err instanceof InvocationError ? err : new InvocationError(400, 'the payload could not be read', 'REQUEST_ABORTED');
      if (!res.destroyed) send(res, e.code, refusal(e.code, e.message), { connection: 'close' });
      return { code: e.code };
    }
    let payload: unknown;
    try {
      payload = JSON.parse(raw.toString('utf8'));
    } catch (err) {
      const problem = (err as Error).message;
      send(res, 200, new InvocationError(400, `the payload is not valid JSON: ${problem}`, 'MALFORMED_JSON', [{ path: '$', message: 'malformed JSON' }]).toResult());
      return { code: 400 };
    }
    const operation = typeof (payload as { operation?: unknown })?.operation === 'string' ? String((payload as { operation: string }).operation).slice(0, 32) : undefined;
    let result: FunctionResult;
    try {
      result = await invoke(payload, options, requestId);
    } catch (err) {
      if (!(err instanceof InvocationError)) throw err;
      if (err.code >= 500) logger.warn({ reqId: requestId, code: err.errorCode }, err.message);
      result = err.toResult();
    }
    send(res, 200, result);
    return { operation, code: result.status.code };
  };

  const serveInvocation = (req: IncomingMessage, res: ServerResponse) => {
    const incoming = req.headers['x-request-id'];
    const requestId: string = typeof incoming === 'string' && UUID.test(incoming) ? incoming.toLowerCase() : randomUUID();
    res.setHeader('x-request-id', requestId);
    const started = performance.now();
    handle(req, res, requestId).then(
      ({ operation, code }) => {
        logger.info({ reqId: requestId, method: req.method, operation, status: res.statusCode, code, ms: Math.round((performance.now() - started) * 100) / 100 }, 'invocation');
      },
      (err: unknown) => {
        logger.error({ reqId: requestId, err: err instanceof Error ? { message: err.message, stack: err.stack } : String(err) }, 'function invocation failed');
        if (!res.headersSent) send(res, 200, refusal(500, `internal error; quote request id ${requestId} when reporting it`));
        else res.destroy();
      },
    );
  };
  const server = createServer(HOST_CHECKED_BY_HANDLER, boundPipelining(requireHost(logger, renderFunctionError, tracingOn() ? traceRequests(serveInvocation) : serveInvocation), options.pipelining, pipeliningLogHooks(logger)));
  const drain = new Drain(server);
  installClientErrorHandler(server, logger, renderFunctionError);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 8080, options.host ?? '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  logger.info({ port, upstream: options.upstreamUrl }, 'function gateway listening');
  return {
    server,
    url: `http://127.0.0.1:${port}`,
    // As the data plane's: readiness drains for delayMs while serving, then in-flight calls finish.
    stop: async ({ delayMs = 0 }: { delayMs?: number } = {}) => {
      await drain.begin(delayMs);
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await lambda.settled();
    },
  };
}
