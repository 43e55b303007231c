/**
 * An OTLP/HTTP receiver for the benchmarks: answers 200 to every export and counts them (requests,
 * bytes) without decoding.
 *
 * It runs in a process of its own, as a collector does: in the benchmark's process it took CPU from
 * autocannon in the same event loop, so the load fell in the traced plane's rounds and the plane,
 * serving fewer reads per turn of its event loop, spent more CPU per read for that reason alone
 * (docs/performance.md, "The export's receiver in a process of its own"). `BENCH_SINK=in-process`
 * runs it in the caller's process, as before.
 *
 * Run as a script, it listens and prints its port; `GET /counts` answers what it counted.
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { ROOT } from './support.js';

interface Counted {
  exports: number;
  bytes: number;
}

/** The receiver's server; `GET /counts` answers `counted` (for a sink in another process). */
function sinkServer(counted: Counted): Server {
  return createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/counts') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(counted));
      return;
    }
    req.on('data', (chunk: Buffer) => (counted.bytes += chunk.length));
    req.on('error', () => res.destroy());
    req.on('end', () => {
      counted.exports++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
}

export interface OtlpSink {
  /** What OTEL_EXPORTER_OTLP_ENDPOINT takes. */
  endpoint: string;
  counts(): Promise<Counted>;
  close(): Promise<void>;
}

/** Listens on 127.0.0.1 (any port), in a process of its own unless BENCH_SINK=in-process. */
export async function startOtlpSink(): Promise<OtlpSink> {
  if (process.env.BENCH_SINK === 'in-process') {
    const counted = { exports: 0, bytes: 0 };
    const server = sinkServer(counted);
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    return {
      endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      counts: async () => ({ ...counted }),
      close: () => new Promise<void>((done) => server.close(() => done())),
    };
  }
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  // Never outlives the benchmark, however it ends.
  process.once('exit', () => child.kill());
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the OTLP sink exited (${code}) before listening`)));
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk;
      const line = /^(\d+)\n/.exec(out);
      if (line) resolve(Number(line[1]));
    });
  });
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    counts: async () => (await (await fetch(`${endpoint}/counts`)).json()) as Counted,
    close: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((done) => child.once('exit', done));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

// As a script (the sink's own process): listen, print the port, stop on SIGTERM.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const server = sinkServer({ exports: 0, bytes: 0 });
  server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as AddressInfo).port}\n`));
  process.on('SIGTERM', () => process.exit(0));
}
