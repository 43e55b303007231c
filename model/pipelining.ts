/**
 * Answers a client does not read must not fill the server's memory. HTTP/1.1 lets a client write
 * many requests on one connection before reading any answer (pipelining), and node's HTTP server
 * parses every request of each chunk it reads at once, hands each to the application at once, and
 * keeps every later answer in memory until the earlier ones are sent (`state.outgoing`). Its own
 * pause only looks at bytes already written when a request arrives, which an asynchronous handler
 * has not produced yet: 1,000 pipelined requests in one write became 1,000 answers held in memory.
 *
 * `boundPipelining` wraps a server's request listener so that, per connection:
 *  - one request at a time is handled (its answers go out in order anyway), the next when the
 *    previous answer has been handed to the socket;
 *  - requests received and not yet answered are counted; past `maxPipelinedRequests` the ones
 *    beyond it are not handled, and the connection closes once the answers before them are sent
 *    (RFC 9112 §9.3.2: a pipelining client retries the requests a closed connection left unanswered);
 *    a request read after that (node resumes reading on its own when its write buffer drains)
 *    closes it at once;
 *  - while the answers the client has not taken exceed `maxUnsentResponseBytes`, the connection is
 *    not read and no further request of it is handled; both resume when the client catches up;
 *  - a connection holding unsent answers whose client takes none of them for `sendTimeoutMs` is closed.
 * So a connection holds one answer being made, the unsent budget, and at most the requests of one
 * chunk node parsed (it reads 64 KiB at a time and parses all of it): bounded by configuration.
 *
 * Shared by every HTTP server of the project (data plane, function gateway, operator metrics).
 */
import type { RequestListener, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export interface PipeliningLimits {
  /** Requests one connection may have received and not yet answered (answer not yet handed to its socket). */
  maxPipelinedRequests: number;
  /** Bytes of answers one connection may hold that the client has not taken; past it the connection is not read. */
  maxUnsentResponseBytes: number;
  /** A connection with unsent answers from which the client takes nothing for this long is closed. */
  sendTimeoutMs: number;
}

export const DEFAULT_PIPELINING_LIMITS: PipeliningLimits = {
  maxPipelinedRequests: 16,
  maxUnsentResponseBytes: 1024 * 1024,
  sendTimeoutMs: 30_000,
};

export interface PipeliningHooks {
  /** A connection is closed because its client stopped taking its answers (for a log line). */
  onSendTimeout?: (socket: Socket, unsentBytes: number) => void;
  /** A connection went over the pipelining cap: it closes after the answers before the cap (for a log line). */
  onTooManyPipelined?: (socket: Socket) => void;
}

/** The libuv handle's bytes written to it but not yet taken by the kernel (node's stream_wrap). */
type SocketInternals = Socket & {
  _handle?: { writeQueueSize?: number } | null;
  /** node's own "stop reading" flag: set, node pauses the connection's parser after the chunk it is parsing. */
  _paused?: boolean;
  parser?: { pause(): void; resume(): void } | null;
};

class Connection {
  /** The one request being handled (its answer not yet handed to the socket): one at a time, so a slot, not a set. */
  private inProgress: ServerResponse | undefined;
  /** Requests received and not handled yet, by their responses (`res.req` is the request): no pair per request. */
  private readonly waiting: ServerResponse[] = [];
  /** Over the pipelining cap: nothing more is handled, and the socket ends once the answers in progress are sent. */
  private closing = false;
  /** Until the chunk that went over the cap has been parsed. */
  private closingChunk = false;
  private timer: NodeJS.Timeout | undefined;
  /** Write progress seen since the timer was armed: a 'drain', an answer sent, fewer bytes queued. */
  private progressed = false;
  private queuedAtArm = 0;

  constructor(
    private readonly socket: SocketInternals,
    private readonly handler: RequestListener,
    private readonly limits: PipeliningLimits,
    private readonly hooks: PipeliningHooks,
  ) {
    socket.on('drain', () => {
      this.progressed = true;
      this.pump();
    });
    socket.once('close', () => this.close());
  }

  /** A request parsed on this connection (its response carries it: `res.req`). */
  arrived(res: ServerResponse): void {
    if (this.closing) {
      // Requests parsed from the chunk in hand are never answered, and freed with the socket. One
      // from a later read means node resumed reading (it does when its own write buffer drains):
      // the connection has had its answers' chance, and goes now.
      if (!this.closingChunk) this.socket.destroy();
      return;
    }
    if ((this.inProgress === undefined ? 0 : 1) + this.waiting.length >= this.limits.maxPipelinedRequests) {
      this.closing = true;
      this.closingChunk = true;
      setImmediate(() => (this.closingChunk = false));
      this.hooks.onTooManyPipelined?.(this.socket);
      this.pump();
      return;
    }
    // One shared listener for both events, the connection on the response: no closure or
    // once-wrapper per request (answered() is idempotent: the second event finds nothing in progress).
    (res as TrackedResponse)[CONNECTION] = this;
    res.on('finish', answered);
    res.on('close', answered);
    this.waiting.push(res);
    this.pump();
  }

  /** The answer to `res` has been handed to the socket, or the response was closed. */
  settled(res: ServerResponse): void {
    if (this.inProgress === res) {
      this.inProgress = undefined;
      this.progressed = true;
      this.pump();
    }
  }

  /** Bytes of answers the client has not taken: in the socket, and in answers queued behind the one being sent. */
  private unsentBytes(): number {
    let bytes = this.socket.writableLength;
    const res = this.inProgress;
    if (res !== undefined && !res.socket) bytes += res.writableLength;
    return bytes;
  }

  /** Hands waiting requests to the application while the budget allows, then pauses or resumes reading. */
  private pump(): void {
    if (this.socket.destroyed) return;
    // One at a time, as the answers go out in order anyway: a deep pipeline costs the process one
    // request's work at a time, interleaved with every other connection's, not all of it at once.
    while (this.waiting.length && this.inProgress === undefined && this.unsentBytes() <= this.limits.maxUnsentResponseBytes) {
      const res = this.waiting.shift()!;
      if (res.destroyed) continue;
      this.inProgress = res;
      this.handler(res.req, res);
    }
    if (this.closing && this.inProgress === undefined && this.waiting.length === 0) {
      // The answers before the cap are out of the application's hands: flush them, then close.
      this.socket.end();
      this.pauseReading();
      this.armSendTimer();
      return;
    }
    const blocked = this.closing || this.waiting.length > 0 || this.unsentBytes() > this.limits.maxUnsentResponseBytes;
    if (blocked) {
      this.pauseReading();
      this.armSendTimer();
    } else {
      this.disarmSendTimer();
      this.resumeReading();
    }
  }

  /**
   * As node's own pause (parserOnIncoming): a socket.pause() alone does not stop the parser, which
   * reads the socket's handle directly; the `_paused` flag makes node pause the parser too once it
   * has parsed the chunk in hand. Node clears the flag itself when its write buffer drains, which
   * may be earlier than these limits allow: the next request that arrives pauses it again.
   */
  private pauseReading(): void {
    if (this.socket._paused) return;
    this.socket._paused = true;
    this.socket.pause();
  }

  /** As node's socketOnDrain. */
  private resumeReading(): void {
    if (!this.socket._paused) return;
    this.socket._paused = false;
    this.socket.parser?.resume();
    this.socket.resume();
  }

  private queuedInHandle(): number {
    return this.socket.writableLength + (this.socket._handle?.writeQueueSize ?? 0);
  }

  private armSendTimer(): void {
    if (this.timer) return;
    this.progressed = false;
    this.queuedAtArm = this.queuedInHandle();
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const unsent = this.unsentBytes();
      // Slow handlers with nothing to send yet, or a client that took some bytes: not stalled
      // (a closing connection whose client neither reads nor closes is, all the same).
      const stalled = (unsent > 0 && !this.progressed && this.queuedInHandle() >= this.queuedAtArm) || (this.closing && this.inProgress === undefined && this.waiting.length === 0);
      if (stalled) {
        this.hooks.onSendTimeout?.(this.socket, unsent);
        this.socket.destroy();
        return;
      }
      this.pump();
    }, this.limits.sendTimeoutMs);
    this.timer.unref();
  }

  private disarmSendTimer(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private close(): void {
    this.disarmSendTimer();
    this.waiting.length = 0;
    this.inProgress = undefined;
  }
}

const CONNECTION = Symbol('pipelining connection');
type TrackedResponse = ServerResponse & { [CONNECTION]?: Connection };

function answered(this: TrackedResponse): void {
  this[CONNECTION]?.settled(this);
}

/** The request listener to give `createServer`: `handler` behind the per-connection bounds above. */
export function boundPipelining(handler: RequestListener, limits: PipeliningLimits = DEFAULT_PIPELINING_LIMITS, hooks: PipeliningHooks = {}): RequestListener {
  // Each connection's state on its socket, under a key of this listener: a property read per
  // request instead of a WeakMap's lookup; it goes with the socket all the same.
  const CONNECTION_OF = Symbol('pipelining connection state');
  return (req, res) => {
    const socket = req.socket as Socket & { [CONNECTION_OF]?: Connection };
    let connection = socket[CONNECTION_OF];
    if (connection === undefined) connection = socket[CONNECTION_OF] = new Connection(socket, handler, limits, hooks);
    connection.arrived(res);
  };
}
