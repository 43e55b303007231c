/** A small HTTP client for tests that can set any Host header (fetch cannot). */
import { request as httpRequest, type Agent } from 'node:http';

export interface CallOptions {
  method?: string;
  path: string;
  host?: string;
  headers?: Record<string, string>;
  /** An object is sent as JSON; a string or Buffer as it is. */
  body?: unknown;
  /** A keep-alive agent, or false for a connection of its own (default: Node's global agent). */
  agent?: Agent | false;
}

export interface CallResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any;
}

export function call(baseUrl: string, options: CallOptions): Promise<CallResult> {
  const url = new URL(options.path, baseUrl);
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  let payload: Buffer | undefined;
  if (options.body !== undefined) {
    payload = Buffer.isBuffer(options.body) ? options.body : Buffer.from(typeof options.body === 'string' ? options.body : JSON.stringify(options.body));
    if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
    headers['content-length'] = String(payload.length);
  }
  if (options.host) headers.host = options.host;
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: options.method ?? (payload ? 'POST' : 'GET'), headers, agent: options.agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
    });
    req.on('error', reject);
    if (payload) req.write(payload);
    req.end();
  });
}

/** A client bound to one data plane, one gateway host and one credential. */
export function client(baseUrl: string, defaults: { host?: string; headers?: Record<string, string> }) {
  return (options: CallOptions) =>
    call(baseUrl, { ...options, host: options.host ?? defaults.host, headers: { ...(defaults.headers ?? {}), ...(options.headers ?? {}) } });
}
