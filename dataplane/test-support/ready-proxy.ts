/**
 * A readiness-aware round-robin TCP proxy, as a Service's endpoints and kube-proxy behave: every
 * `refreshMs` (1 s) it asks each backend's `/readyz`, and a new connection goes to the next backend
 * that last answered 200. A connection stays with the backend it was given (layer 4), so a
 * keep-alive client keeps talking to a Pod that is leaving until that Pod closes the connection.
 * A backend that refuses the connection ends the client's connection too (no retry elsewhere).
 */
import { request } from 'node:http';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export class ReadyProxy {
  private readonly ready = new Set<number>();
  private next = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly sockets = new Set<Socket>();
  /** Connections that could not reach their backend. */
  upstreamFailures = 0;

  private constructor(
    private readonly server: Server,
    private readonly ports: number[],
  ) {}

  static async start(ports: number[], refreshMs = 1000): Promise<ReadyProxy> {
    const server = createServer();
    const proxy = new ReadyProxy(server, ports);
    server.on('connection', (client) => proxy.forward(client));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    await proxy.refresh();
    proxy.timer = setInterval(() => void proxy.refresh(), refreshMs);
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The backends (ports) the last refresh found ready. */
  readyPorts(): number[] {
    return [...this.ready].sort();
  }

  private forward(client: Socket): void {
    this.sockets.add(client);
    client.once('close', () => this.sockets.delete(client));
    const candidates = this.ports.filter((p) => this.ready.has(p));
    if (!candidates.length) return void client.destroy();
    const port = candidates[this.next++ % candidates.length];
    const upstream = createConnection({ host: '127.0.0.1', port });
    this.sockets.add(upstream);
    upstream.once('close', () => this.sockets.delete(upstream));
    let connected = false;
    upstream.once('connect', () => (connected = true));
    upstream.on('error', () => {
      if (!connected) this.upstreamFailures++;
      client.destroy();
    });
    client.on('error', () => upstream.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  }

  private async refresh(): Promise<void> {
    await Promise.all(
      this.ports.map(async (port) => {
        if (await answersReady(port)) this.ready.add(port);
        else this.ready.delete(port);
      }),
    );
  }

  /** Resolves once the next refreshes have found `port` ready (or not, with `ready` false). */
  async waitFor(port: number, ready = true, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.ready.has(port) !== ready) {
      if (Date.now() > deadline) throw new Error(`backend ${port} never became ${ready ? 'ready' : 'unready'} in the proxy`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

function answersReady(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/readyz', agent: false, timeout: 800 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}
