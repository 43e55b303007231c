/**
 * A TCP proxy on 127.0.0.1 in front of the API server (TLS passes through untouched), which a test
 * can cut: `sever()` drops every open connection and refuses new ones until `restore()`. That is a
 * watch drop and an unreachable API server, as a client sees them.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

export class CuttableProxy {
  private readonly sockets = new Set<Socket>();
  private severed = false;
  private server?: Server;
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<void> {
    this.server = createServer((client) => {
      if (this.severed) return client.destroy();
      const upstream = connect(this.targetPort, this.targetHost);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  sever(): void {
    this.severed = true;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }

  restore(): void {
    this.severed = false;
  }

  async stop(): Promise<void> {
    this.sever();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}
