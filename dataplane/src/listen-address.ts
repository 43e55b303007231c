/**
 * Where the data plane listens: the URL to open, and a busy port found before anything else starts: the embedded PostgreSQL, pools and watchers
 * started first and torn down after a failed listen() buried the one line that matters under
 * EADDRINUSE and pg's "Connection terminated unexpectedly".
 */
import { createServer } from 'node:net';

export class PortInUseError extends Error {
  override name = 'PortInUseError';
}

export function portInUseMessage(host: string, port: number): string {
  return `port ${port} on ${host} is already in use (another data plane, or another program, listens there): stop it, or choose another port, e.g. PORT=${port === 8080 ? 8081 : port + 1}`;
}

/** Resolves when `port` on `host` can be bound now; rejects with PortInUseError when it cannot. Port 0 (any) always can. */
export async function assertPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new PortInUseError(portInUseMessage(host, port)) : err),
    );
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve()));
  });
}

/** The URL a browser or client on this machine opens for a server listening on host:port (any-address → loopback). */
export function openableUrl(host: string, port: number): string {
  const local = host === '0.0.0.0' || host === '' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${local.includes(':') ? `[${local}]` : local}:${port}`;
}
