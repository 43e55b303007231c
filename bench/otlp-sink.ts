/** An OTLP/HTTP receiver for the benchmarks: answers 200 to every export and counts them (requests, bytes) without decoding. */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Listens on 127.0.0.1 (any port); `endpoint` is what OTEL_EXPORTER_OTLP_ENDPOINT takes. It does not
 * decode: decoding took the benchmark process's CPU, so autocannon sent fewer reads in the traced
 * plane's rounds.
 */
export async function startOtlpSink() {
  const counted = { exports: 0, bytes: 0 };
  const server = createServer((req, res) => {
    req.on('data', (chunk: Buffer) => (counted.bytes += chunk.length));
    req.on('error', () => res.destroy());
    req.on('end', () => {
      counted.exports++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, counted, close: () => new Promise<void>((done) => server.close(() => done())) };
}
