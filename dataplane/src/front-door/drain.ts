/**
 * Draining an HTTP server before it stops, as a Pod must on SIGTERM: Kubernetes removes the Pod
 * from its Service's endpoints only a few seconds after the signal, so for `delayMs` the server
 * keeps accepting and serving while readiness says `draining`. Every response from the signal on
 * carries `Connection: close`, so keep-alive clients leave on their next answer instead of holding
 * the Pod until the deadline; sockets still idle at the end of the delay are closed then (closing
 * an idle socket races with a client reusing it, so it is done once the busy ones have left).
 * Shared by the data plane and the function gateway.
 */
import type { Server } from 'node:http';

export class Drain {
  private started = false;

  constructor(private readonly server: Server) {
    // The first 'request' listener, before the application's: the header is set before any answer.
    server.prependListener('request', (_req, res) => {
      if (this.started) res.setHeader('connection', 'close');
    });
  }

  get draining(): boolean {
    return this.started;
  }

  /** Starts draining at once; resolves after `delayMs` with the idle keep-alive sockets closed. */
  async begin(delayMs: number): Promise<void> {
    this.started = true;
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    this.server.closeIdleConnections();
  }
}
