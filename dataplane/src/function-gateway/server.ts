/**
 * The function gateway (`DAS_MODE=function-gateway`): `service-E-function-service-gateway` in every
 * environment. `POST /` (or `/invoke`) takes an invocation payload, calls the internal REST API at
 * DAS_UPSTREAM_URL as the principal DAS_FUNCTION_NAME (which datasets allow in
 * `auth.iam.principals`), and answers `{data, status: {code, message}}` — always HTTP 200 when the
 * invocation itself was understood, as a synchronous function invocation would.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { InvocationError, toFunctionResult, toRestCall, type FunctionResult } from './translate.js';

export interface FunctionGatewayOptions {
  upstreamUrl: string;
  principal: string;
  logger: Logger;
  port?: number;
  host?: string;
  /** Largest accepted payload, bytes. */
  maxPayload?: number;
}

async function readBody(req: IncomingMessage, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) throw new InvocationError(413, `the payload is larger than ${max} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export async function invoke(payload: unknown, options: Pick<FunctionGatewayOptions, 'upstreamUrl' | 'principal'>): Promise<FunctionResult> {
  const call = toRestCall(payload, options.principal);
  const response = await fetch(new URL(call.path, options.upstreamUrl), {
    method: call.method,
    headers: call.headers,
    body: call.body === undefined ? undefined : JSON.stringify(call.body),
  });
  const text = await response.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  return toFunctionResult(payload as Record<string, unknown>, response.status, body);
}

export async function startFunctionGateway(options: FunctionGatewayOptions): Promise<{ server: Server; url: string; stop(): Promise<void> }> {
  const max = options.maxPayload ?? 1024 * 1024;
  const server = createServer(async (req, res) => {
    const send = (httpStatus: number, result: FunctionResult) => {
      const text = JSON.stringify(result);
      res.writeHead(httpStatus, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    };
    if (req.method === 'GET' && (req.url === '/healthz' || req.url === '/readyz')) return send(200, { data: { status: 'ok' }, status: { code: 200 } });
    if (req.method !== 'POST' || (req.url !== '/' && req.url !== '/invoke')) {
      return send(404, { data: null, status: { code: 404, message: 'invoke the function with POST / and a JSON payload' } });
    }
    try {
      let payload: unknown;
      try {
        payload = JSON.parse(await readBody(req, max));
      } catch (err) {
        if (err instanceof InvocationError) throw err;
        throw new InvocationError(400, 'the payload is not valid JSON');
      }
      const result = await invoke(payload, options);
      send(200, result);
    } catch (err) {
      if (err instanceof InvocationError) return send(200, { data: null, status: { code: err.code, message: err.message } });
      options.logger.error({ err: (err as Error).message }, 'function invocation failed');
      send(200, { data: null, status: { code: 502, message: 'the internal REST API could not be reached' } });
    }
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 8080, options.host ?? '0.0.0.0', resolve));
  const port = (server.address() as AddressInfo).port;
  options.logger.info({ port, upstream: options.upstreamUrl }, 'function gateway listening');
  return {
    server,
    url: `http://127.0.0.1:${port}`,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
