/**
 * The one binding of a `ws` socket to a subscription protocol, after graphql-ws's own binding to
 * `ws` (graphql-ws/use/ws): both protocols (graphql-transport-ws through graphql-ws's server, the
 * older graphql-ws in legacy-protocol.ts) see only graphql-ws's `WebSocket` interface, and the
 * binding owns the socket:
 *
 * - errors: every socket has an 'error' listener; a frame `ws` refuses (larger than
 *   maxMessageBytes, invalid UTF-8, a bad opcode) ends that connection with ws's close code;
 * - messages: text frames go to the protocol; a binary frame is no message of either protocol
 *   (4400); a handler that fails ends the connection (1011), never the process;
 * - keep-alive: a WebSocket ping every keepAliveMs, and a peer that does not answer within the
 *   next keepAliveMs is cut (the protocols may add their own: `ka` on the older one);
 * - back-pressure: every send counts against the connection's byte budget (send-budget.ts);
 *   past it the connection ends as a slow consumer (4429);
 * - closing: a close frame, then the socket destroyed when the peer does not take it in
 *   closeGraceMs; the protocol is told once the socket has closed.
 */
import { CloseCode, type WebSocket as ProtocolSocket } from 'graphql-ws';
import type { Logger } from 'pino';
import type { WebSocket } from 'ws';
import { closeOrTerminate, SendBudget, sendWithin, SLOW_CONSUMER } from './send-budget.js';

/** A protocol serving one opened socket; it answers what to do once the socket has closed (graphql-ws's `Server.opened`). */
export type ServeProtocol = (socket: ProtocolSocket) => (code: number, reason: string) => unknown;

export interface BindingLimits {
  keepAliveMs: number;
  maxBufferedBytes: number;
  closeGraceMs: number;
}

export interface BoundSocket {
  /** Its bytes waiting for the client. */
  budget: SendBudget;
  /** Sends one message within the budget (over it: 4429). */
  send(data: string): Promise<void>;
  /** Ends the connection; destroys the socket if the close frame does not go out in time. */
  close(code: number, reason: string): void;
  /** Hands the socket to a protocol (once). */
  serve(protocol: string, serve: ServeProtocol): void;
}

export function bindSocket(ws: WebSocket, limits: BindingLimits, hooks: { logger: Logger; onSlowConsumer: () => void }): BoundSocket {
  // A frame ws refuses is reported here, and ws closes this connection with the matching code.
  ws.on('error', (err) => hooks.logger.debug({ err: err.message }, 'WebSocket connection error'));
  const budget = new SendBudget(limits.maxBufferedBytes, () => ws.bufferedAmount);
  const close = (code: number, reason: string) => closeOrTerminate(ws, code, reason, limits.closeGraceMs);
  const send = (data: string) =>
    sendWithin(ws, budget, data, () => {
      // Counted once, while the connection is still open (later sends find it closing).
      if (ws.readyState === ws.OPEN) hooks.onSlowConsumer();
      close(SLOW_CONSUMER.code, SLOW_CONSUMER.reason);
    });

  const serve = (protocol: string, serveProtocol: ServeProtocol) => {
    const closed = serveProtocol({
      protocol,
      send,
      close: (code, reason) => close(code ?? 1000, reason ?? ''),
      onMessage: (cb) =>
        ws.on('message', (data, isBinary) => {
          if (isBinary) return close(CloseCode.BadRequest, 'binary messages are not part of the protocol');
          cb(String(data)).catch((err: unknown) => {
            hooks.logger.warn({ err: (err as Error)?.message }, 'subscription message failed');
            close(CloseCode.InternalServerError, 'internal error');
          });
        }),
    });
    const ping = setInterval(() => {
      if (ws.readyState !== ws.OPEN) return;
      let ponged = false;
      ws.once('pong', () => (ponged = true));
      ws.ping();
      setTimeout(() => !ponged && ws.terminate(), limits.keepAliveMs).unref();
    }, limits.keepAliveMs);
    ping.unref();
    ws.once('close', (code, reason) => {
      clearInterval(ping);
      void Promise.resolve()
        .then(() => closed(code, String(reason)))
        .catch((err: unknown) => hooks.logger.warn({ err: (err as Error)?.message }, 'subscription close failed'));
    });
  };
  return { budget, send, close, serve };
}
