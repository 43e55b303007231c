/** The operator's own HTTP port: /metrics (Prometheus), /healthz (liveness), /readyz (readiness). */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { boundPipelining } from '../../model/pipelining.js';

export interface OperatorHttpServer {
  port: number;
  close(): Promise<void>;
}

export async function startHttpServer(options: {
  port: number;
  host: string;
  registry: Registry;
  /** Ready means: settings loaded and the process is campaigning or leading (a standby is ready too). */
  isReady: () => boolean;
}): Promise<OperatorHttpServer> {
  // Answers a scraper does not read are bounded as the data plane's are (model/pipelining.ts, default limits).
  const server: Server = createServer(boundPipelining((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET') {
      res.writeHead(405).end();
    } else if (path === '/metrics') {
      options.registry
        .metrics()
        .then((text) => res.writeHead(200, { 'content-type': options.registry.contentType }).end(text))
        .catch((err: unknown) => res.writeHead(500).end(String(err)));
    } else if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
    } else if (path === '/readyz') {
      const ready = options.isReady();
      res.writeHead(ready ? 200 : 503, { 'content-type': 'text/plain' }).end(ready ? 'ok\n' : 'not ready\n');
    } else {
      res.writeHead(404).end();
    }
  }));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
