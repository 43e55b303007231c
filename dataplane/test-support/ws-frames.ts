/**
 * WebSocket frames written byte by byte (RFC 6455 §5.2) on a raw TCP socket, for tests that send
 * what no well-behaved client library would: invalid UTF-8, lengths that lie, reserved opcodes,
 * unmasked or fragmented frames. The server's frames are parsed back, to see its close code.
 */
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';

export interface FrameOptions {
  opcode: number;
  payload?: Buffer | string;
  fin?: boolean;
  /** Clients must mask; false sends an unmasked frame (a protocol error). */
  mask?: boolean;
  rsv?: number;
  /** A declared length other than the payload's (a header that lies). */
  declaredLength?: bigint | number;
}

export const OPCODE = { continuation: 0, text: 1, binary: 2, close: 8, ping: 9, pong: 10 } as const;

export function frame(o: FrameOptions): Buffer {
  const payload = typeof o.payload === 'string' ? Buffer.from(o.payload) : (o.payload ?? Buffer.alloc(0));
  const length = BigInt(o.declaredLength ?? payload.length);
  const mask = o.mask ?? true;
  const head = [((o.fin ?? true) ? 0x80 : 0) | ((o.rsv ?? 0) << 4) | (o.opcode & 0x0f)];
  let ext = Buffer.alloc(0);
  if (length < 126n) head.push((mask ? 0x80 : 0) | Number(length));
  else if (length < 65536n) {
    head.push((mask ? 0x80 : 0) | 126);
    ext = Buffer.alloc(2);
    ext.writeUInt16BE(Number(length));
  } else {
    head.push((mask ? 0x80 : 0) | 127);
    ext = Buffer.alloc(8);
    ext.writeBigUInt64BE(length);
  }
  const key = mask ? randomBytes(4) : Buffer.alloc(0);
  const body = Buffer.from(payload);
  if (mask) for (let i = 0; i < body.length; i++) body[i] ^= key[i % 4];
  return Buffer.concat([Buffer.from(head), ext, key, body]);
}

export interface RawWebSocket {
  socket: Socket;
  /** The HTTP status of the upgrade answer (101 when upgraded) and its raw head. */
  status: number;
  head: string;
  /** The body of a refused upgrade (the bytes after the head). */
  body: () => string;
  /** Text messages the server sent. */
  messages: string[];
  /** The server's close code (1006 when the connection ended without a close frame). */
  closed: Promise<number>;
  send(bytes: Buffer): void;
}

/** Opens a TCP connection and sends an upgrade request; resolves once the answer's head is in. */
export function rawUpgrade(port: number, options: { path?: string; protocol?: string; headers?: Record<string, string> } = {}): Promise<RawWebSocket> {
  const socket = connect(port, '127.0.0.1');
  const headers: Record<string, string> = {
    host: 'iam.localhost',
    upgrade: 'websocket',
    connection: 'Upgrade',
    'sec-websocket-key': randomBytes(16).toString('base64'),
    'sec-websocket-version': '13',
    ...(options.protocol === '' ? {} : { 'sec-websocket-protocol': options.protocol ?? 'graphql-transport-ws' }),
    ...options.headers,
  };
  socket.write(`GET ${options.path ?? '/demo/graphql'} HTTP/1.1\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`);
  return new Promise((resolve, reject) => {
    let buffer = Buffer.alloc(0);
    let upgraded: RawWebSocket | undefined;
    let closeCode: number | undefined;
    let resolveClosed!: (code: number) => void;
    const closed = new Promise<number>((r) => (resolveClosed = r));
    socket.on('error', () => undefined); // a reset ends the connection like a close: `closed` says how
    socket.on('close', () => {
      resolveClosed(closeCode ?? 1006);
      if (!upgraded) reject(new Error(`connection closed before an answer: ${buffer.toString('latin1').slice(0, 200)}`));
    });
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      if (!upgraded) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buffer.subarray(0, end).toString('latin1');
        buffer = buffer.subarray(end + 4);
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
        let rest = Buffer.alloc(0);
        upgraded = { socket, status, head, body: () => rest.toString('utf8'), messages: [], closed, send: (bytes) => void socket.write(bytes) };
        if (status !== 101) {
          rest = buffer;
          socket.on('data', (more: Buffer) => (rest = Buffer.concat([rest, more])));
          buffer = Buffer.alloc(0);
          resolve(upgraded);
          return;
        }
        resolve(upgraded);
      }
      if (upgraded.status !== 101) return;
      // Server frames: unmasked, a length of 7, 16 or 64 bits.
      for (;;) {
        if (buffer.length < 2) return;
        const opcode = buffer[0] & 0x0f;
        let length = buffer[1] & 0x7f;
        let offset = 2;
        if (length === 126) {
          if (buffer.length < 4) return;
          length = buffer.readUInt16BE(2);
          offset = 4;
        } else if (length === 127) {
          if (buffer.length < 10) return;
          length = Number(buffer.readBigUInt64BE(2));
          offset = 10;
        }
        if (buffer.length < offset + length) return;
        const payload = buffer.subarray(offset, offset + length);
        buffer = buffer.subarray(offset + length);
        if (opcode === OPCODE.text) upgraded.messages.push(payload.toString('utf8'));
        if (opcode === OPCODE.close) closeCode = payload.length >= 2 ? payload.readUInt16BE(0) : 1005;
      }
    });
  });
}

/** A text frame carrying one JSON message. */
export const textFrame = (message: unknown) => frame({ opcode: OPCODE.text, payload: typeof message === 'string' ? message : JSON.stringify(message) });
