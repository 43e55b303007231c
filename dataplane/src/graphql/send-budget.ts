/**
 * What one WebSocket client may cost the server in memory, in bytes: the events waiting in its
 * subscriptions' queues plus what `ws` holds unsent (`bufferedAmount`: its own queue and the
 * socket's). A client that stops reading fills the socket, then the queues; past the budget it is
 * a slow consumer (4429). Its close frame would wait behind the unread bytes, so a connection
 * whose close does not complete within a grace period is terminated (the socket destroyed).
 */
import type { WebSocket } from 'ws';

/** Bytes a queue takes from and gives back to its connection's budget (event-queue.ts). */
export interface ByteBudget {
  /** Reserves `bytes`; false (nothing reserved) when that would exceed the budget. */
  take(bytes: number): boolean;
  give(bytes: number): void;
}

export class SendBudget implements ByteBudget {
  private queued = 0;

  constructor(
    private readonly limit: number,
    /** Bytes accepted for sending and not yet handed to the kernel. */
    private readonly buffered: () => number,
  ) {}

  take(bytes: number): boolean {
    if (this.queued + bytes + this.buffered() > this.limit) return false;
    this.queued += bytes;
    return true;
  }

  give(bytes: number): void {
    this.queued = Math.max(0, this.queued - bytes);
  }

  /** Whether the connection holds more than its budget (checked after each send). */
  get exceeded(): boolean {
    return this.queued + this.buffered() > this.limit;
  }
}

export const SLOW_CONSUMER = { code: 4429, reason: 'slow consumer: events were not read in time' } as const;

/**
 * Sends one message; resolves when it has been written (or the socket is no longer open). A send
 * that leaves the connection over its budget ends it as a slow consumer.
 */
export function sendWithin(ws: WebSocket, budget: SendBudget, data: string, onExceeded: () => void): Promise<void> {
  return new Promise<void>((resolve) => {
    if (ws.readyState !== ws.OPEN) return resolve();
    ws.send(data, () => resolve());
    if (budget.exceeded) {
      onExceeded();
      resolve();
    }
  });
}

/** Closes with a close frame; a socket still not closed after `graceMs` (its peer does not read) is destroyed. */
export function closeOrTerminate(ws: WebSocket, code: number, reason: string, graceMs: number): void {
  if (ws.readyState !== ws.OPEN && ws.readyState !== ws.CONNECTING) return;
  ws.close(code, reason);
  const timer = setTimeout(() => {
    if (ws.readyState !== ws.CLOSED) ws.terminate();
  }, graceMs);
  timer.unref();
  ws.once('close', () => clearTimeout(timer));
}
