/** Raw HTTP/1.1 pipelining for tests: many requests written at once on one socket, read (or not) later. */
import { connect, type Socket } from 'node:net';
import { call } from './http.js';

export interface PipelinedRequest {
  path: string;
  host?: string;
  headers?: Record<string, string>;
}

export function rawRequest({ path, host = '127.0.0.1', headers = {} }: PipelinedRequest): string {
  const lines = [`GET ${path} HTTP/1.1`, `Host: ${host}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** A socket that has written `depth` copies of the request and reads nothing until told to. */
export interface HeldSocket {
  socket: Socket;
  /** Starts reading; resolves with the status codes of the answers in order once the server closes the connection or stays quiet for `quietMs`. */
  readAnswers(quietMs?: number): Promise<{ statuses: number[]; closedByServer: boolean }>;
}

export async function pipelined(port: number, request: PipelinedRequest, depth: number): Promise<HeldSocket> {
  const socket = connect(port, '127.0.0.1');
  socket.pause();
  socket.on('error', () => undefined); // a reset after the server gave up on it
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  socket.write(rawRequest(request).repeat(depth));
  const readAnswers = (quietMs = 2000) =>
    new Promise<{ statuses: number[]; closedByServer: boolean }>((resolve) => {
      // Only the status lines matter; keep the tail of the stream to find one split between chunks.
      const statuses: number[] = [];
      let tail = '';
      let timer: NodeJS.Timeout;
      const finish = (closedByServer: boolean) => {
        clearTimeout(timer);
        socket.removeAllListeners('data');
        resolve({ statuses, closedByServer });
      };
      const quiet = () => {
        clearTimeout(timer);
        timer = setTimeout(() => finish(false), quietMs);
      };
      socket.on('data', (chunk: Buffer) => {
        const text = tail + chunk.toString('latin1');
        let lastEnd = 0;
        for (const match of text.matchAll(/HTTP\/1\.1 (\d{3}) /g)) {
          statuses.push(Number(match[1]));
          lastEnd = match.index + match[0].length;
        }
        tail = text.slice(Math.max(lastEnd, text.length - 15));
        quiet();
      });
      socket.once('close', () => finish(true));
      socket.once('end', () => finish(true));
      quiet();
      socket.resume();
    });
  return { socket, readAnswers };
}

/** How long GET /healthz takes from a client of its own, ms (Infinity if it fails). */
export async function healthzMs(url: string): Promise<number> {
  const started = performance.now();
  try {
    const res = await call(url, { path: '/healthz', agent: false });
    return res.status === 200 ? performance.now() - started : Infinity;
  } catch {
    return Infinity;
  }
}
