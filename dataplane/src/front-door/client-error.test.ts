/** Requests node's parser refuses, sent byte by byte over raw sockets to a real server. */
import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import pino from 'pino';
import { Writable } from 'node:stream';
import { installClientErrorHandler, renderRestError } from './client-error.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: any;
  raw: string;
}

/** Writes bytes to the server and reads until it closes the connection. */
function raw(port: number, bytes: string | Buffer, options: { keepOpen?: boolean } = {}): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head, ...rest] = text.split('\r\n\r\n');
      const [statusLine, ...lines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const i = line.indexOf(':');
        headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
      }
      let body: unknown;
      try {
        body = JSON.parse(rest.join('\r\n\r\n'));
      } catch {
        body = undefined;
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body, raw: text });
    });
    socket.write(bytes);
    if (!options.keepOpen) socket.end();
  });
}

describe('data plane: answers to requests node cannot parse (installClientErrorHandler)', function () {
  let server: Server;
  let port: number;
  const lines: any[] = [];
  const logger = pino(
    { level: 'warn' },
    new Writable({
      write(chunk, _enc, done) {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    }),
  );

  before(async () => {
    // Short timeouts and a fast check interval, so the 408 case takes a second, not a minute.
    server = createServer({ headersTimeout: 300, requestTimeout: 500, connectionsCheckingInterval: 100 }, (_req, res) => res.end('ok'));
    installClientErrorHandler(server, logger, renderRestError);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => (lines.length = 0));

  const expectAnswer = (answer: RawAnswer, status: number, code: string) => {
    expect(answer.status, answer.raw.slice(0, 200)).to.equal(status);
    expect(answer.headers['content-type']).to.equal('application/json; charset=utf-8');
    expect(answer.headers.connection).to.equal('close');
    expect(answer.headers['x-request-id']).to.match(UUID);
    expect(answer.body).to.deep.equal({ error: { code, message: answer.body.error.message, details: [] }, requestId: answer.headers['x-request-id'] });
    expect(answer.body.error.message).to.be.a('string').and.not.equal('');
    expect(Number(answer.headers['content-length'])).to.equal(Buffer.byteLength(answer.raw.split('\r\n\r\n')[1]));
  };

  it('a control character in a header: 400 BAD_REQUEST, one warn line with the code and none of the bytes', async () => {
    const answer = await raw(port, 'GET / HTTP/1.1\r\nHost: x\r\nX-Evil: a\u0001secret-bytes\r\n\r\n');
    expectAnswer(answer, 400, 'BAD_REQUEST');
    expect(answer.body.error.message).to.include('HPE_');
    expect(answer.raw).not.to.include('secret-bytes');
    expect(lines).to.have.length(1);
    expect(lines[0]).to.include({ level: 40, reqId: answer.headers['x-request-id'], status: 400 });
    expect(lines[0].code).to.match(/^HPE_/);
    expect(JSON.stringify(lines[0])).not.to.include('secret-bytes');
  });

  it('Content-Length together with Transfer-Encoding: 400', async () => {
    const answer = await raw(port, 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n');
    expectAnswer(answer, 400, 'BAD_REQUEST');
  });

  it('a 20 KB path: 431 HEADERS_TOO_LARGE', async () => {
    const answer = await raw(port, `GET /${'a'.repeat(20 * 1024)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expectAnswer(answer, 431, 'HEADERS_TOO_LARGE');
  });

  it('more headers than the header size limit holds: 431', async () => {
    const headers = Array.from({ length: 1000 }, (_, i) => `X-Header-${i}: ${'v'.repeat(20)}\r\n`).join('');
    const answer = await raw(port, `GET / HTTP/1.1\r\nHost: x\r\n${headers}\r\n`);
    expectAnswer(answer, 431, 'HEADERS_TOO_LARGE');
  });

  it('headers that do not arrive in time: 408 REQUEST_TIMEOUT', async () => {
    const answer = await raw(port, 'GET / HTTP/1.1\r\nHost: x\r\n', { keepOpen: true });
    expectAnswer(answer, 408, 'REQUEST_TIMEOUT');
  });

  it('a valid request is served as before, with no warning', async () => {
    const answer = await raw(port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(answer.status).to.equal(200);
    expect(lines).to.have.length(0);
  });

  it('renders the body in the shape the server asks for', async () => {
    const other = createServer((_req, res) => res.end());
    installClientErrorHandler(other, logger, ({ status, message }) => ({ data: null, status: { code: status, message } }));
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    try {
      const answer = await raw((other.address() as AddressInfo).port, 'GET / HTTP/1.1\r\nHost: x\r\nX: \u0007\r\n\r\n');
      expect(answer.status).to.equal(400);
      expect(answer.body).to.deep.equal({ data: null, status: { code: 400, message: answer.body.status.message } });
    } finally {
      await new Promise<void>((resolve) => other.close(() => resolve()));
    }
  });
});
