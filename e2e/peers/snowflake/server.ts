/**
 * TEST PEER ONLY. The HTTP routes of the Snowflake test peer: the endpoints snowflake-sdk calls
 * (services/sf.js, connection/statement.js, connection/connection.js), answered with Snowflake's
 * JSON bodies. Bad requests get a 4xx JSON error naming the problem; nothing here throws out.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { gunzip } from 'node:zlib';
import { promisify } from 'node:util';
import type { ResponseBody } from './sessions.js';
import { MAX_STAGE_FILE_BYTES, STAGE_ROUTE, type UploadOutcome } from './stage.js';

const gunzipAsync = promisify(gunzip);

export interface PeerRoutes {
  login(body: Record<string, unknown>, query: URLSearchParams): Promise<ResponseBody>;
  renew(authorization: string | undefined, body: Record<string, unknown>): Promise<ResponseBody>;
  heartbeat(authorization: string | undefined): Promise<ResponseBody>;
  logout(authorization: string | undefined): Promise<ResponseBody>;
  query(authorization: string | undefined, body: Record<string, unknown>): Promise<ResponseBody>;
  result(authorization: string | undefined, queryId: string): Promise<ResponseBody>;
  monitoring(authorization: string | undefined, queryId: string): Promise<ResponseBody>;
  /** The stage's storage endpoint (stage.ts): the SDK's upload of a PUT file, and its HEAD. */
  stageUpload(authorization: string | undefined, grant: string, fileName: string, body: Buffer): UploadOutcome;
  stageHead(authorization: string | undefined, grant: string, fileName: string): UploadOutcome & { size?: number };
}

class BadRequest extends Error {
  constructor(
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

/** Far above any statement a driver sends; a bound so that a runaway client cannot fill memory. */
const MAX_BODY_BYTES = 64 * 1024 * 1024;

async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (declared > limit) throw new BadRequest(`request body: larger than ${limit} bytes`, 413);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new BadRequest(`request body: larger than ${limit} bytes`, 413);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  let raw = await readBody(req, MAX_BODY_BYTES);
  if (raw.length === 0) return {};
  if ((req.headers['content-encoding'] ?? '').toLowerCase() === 'gzip' || (raw[0] === 0x1f && raw[1] === 0x8b)) {
    raw = await gunzipAsync(raw).catch(() => {
      throw new BadRequest('request body: not valid gzip');
    });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new BadRequest('request body ($): not valid JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new BadRequest('request body ($): expected a JSON object');
  return parsed as Record<string, unknown>;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export function createPeerServer(routes: PeerRoutes): Server {
  return createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://peer');
      const path = url.pathname;
      const auth = req.headers.authorization;
      try {
        if (req.method === 'POST' && path === '/session/v1/login-request') return send(res, 200, await routes.login(await readJson(req), url.searchParams));
        if (req.method === 'POST' && path === '/session/token-request') return send(res, 200, await routes.renew(auth, await readJson(req)));
        if (req.method === 'POST' && path === '/session/heartbeat') return send(res, 200, await routes.heartbeat(auth));
        if (req.method === 'POST' && path === '/session' && url.searchParams.get('delete') === 'true') return send(res, 200, await routes.logout(auth));
        if (req.method === 'POST' && path === '/telemetry/send') {
          await readJson(req).catch(() => ({}));
          return send(res, 200, { success: true, code: null, message: null, data: 'Log Received' });
        }
        if (req.method === 'POST' && path === '/queries/v1/query-request') return send(res, 200, await routes.query(auth, await readJson(req)));
        if (req.method === 'POST' && (path === '/queries/v1/abort-request' || /^\/queries\/[^/]+\/abort-request$/.test(path))) {
          return send(res, 200, { success: true, code: null, message: null, data: null });
        }
        const staged = new RegExp(`^/${STAGE_ROUTE}/([0-9a-f]+)/([^/]+)$`).exec(path);
        if (staged && (req.method === 'PUT' || req.method === 'HEAD')) {
          const [grant, fileName] = [staged[1], decodeURIComponent(staged[2])];
          const outcome = req.method === 'PUT' ? routes.stageUpload(auth, grant, fileName, await readBody(req, MAX_STAGE_FILE_BYTES)) : routes.stageHead(auth, grant, fileName);
          if (req.method === 'HEAD') {
            res.writeHead(outcome.status, outcome.status === 200 ? { 'content-length': String((outcome as { size?: number }).size ?? 0) } : {});
            return res.end();
          }
          return send(res, outcome.status, outcome.status === 200 ? {} : { error: outcome.message });
        }
        const result = /^\/queries\/([^/]+)\/result$/.exec(path);
        if (req.method === 'GET' && result) return send(res, 200, await routes.result(auth, decodeURIComponent(result[1])));
        const monitoring = /^\/monitoring\/queries\/([^/]+)$/.exec(path);
        if (req.method === 'GET' && monitoring) return send(res, 200, await routes.monitoring(auth, decodeURIComponent(monitoring[1])));
        return send(res, 404, { success: false, code: '404', message: `The Snowflake test peer has no route ${req.method} ${path}`, data: null });
      } catch (err) {
        if (err instanceof BadRequest) {
          res.setHeader('connection', 'close');
          return send(res, err.status, { success: false, code: String(err.status), message: err.message, data: null });
        }
        return send(res, 500, { success: false, code: '000603', message: `Snowflake test peer internal error: ${(err as Error).message}`, data: null });
      }
    })();
  });
}
