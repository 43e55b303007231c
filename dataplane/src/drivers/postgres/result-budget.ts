/**
 * Bounds on how much of a raw query's answer the data plane holds in memory.
 *
 * node-postgres reads each protocol message whole before handing it over: one DataRow holding a
 * 500 MB value (PostgreSQL sends up to 1 GB) would be buffered, then decoded into a string, long
 * before any row count or byte count could refuse it. A FrameGuard watches the connection's
 * decrypted byte stream (it sits where pg attaches its own parser, after TLS) and reads only the
 * 5-byte message headers: while armed, a message announcing more bytes than the limit destroys the
 * connection at once, so at most one socket chunk of it was read. The limit covers every message,
 * an error's text included (PostgreSQL repeats a bad input value in full in its message).
 */
import type { Duplex } from 'node:stream';
import pg from 'pg';

export class FrameGuard {
  private limit = Infinity;
  private stream?: Duplex;
  private readonly header = Buffer.alloc(5);
  private headerFill = 0;
  /** Bytes of the current message's body still to pass. */
  private skip = 0;
  /** Why the guard destroyed the connection, while armed. */
  tripped?: string;

  watch(stream: Duplex): void {
    this.stream = stream;
    this.headerFill = 0;
    this.skip = 0;
    stream.on('data', (chunk: Buffer) => this.inspect(chunk));
  }

  /** From now on, a message longer than `limit` bytes ends the connection. */
  arm(limit: number): void {
    this.limit = limit;
    this.tripped = undefined;
  }

  disarm(): void {
    this.limit = Infinity;
  }

  /** Ends the connection now (the server aborts the statement when it notices). */
  trip(reason: string): void {
    this.tripped ??= reason;
    this.stream?.destroy();
  }

  private inspect(chunk: Buffer): void {
    let i = 0;
    while (i < chunk.length) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, chunk.length - i);
        this.skip -= n;
        i += n;
        continue;
      }
      const n = Math.min(5 - this.headerFill, chunk.length - i);
      chunk.copy(this.header, this.headerFill, i, i + n);
      this.headerFill += n;
      i += n;
      if (this.headerFill < 5) return;
      this.headerFill = 0;
      // The length counts itself (4 bytes) but not the type byte.
      const length = this.header.readUInt32BE(1);
      this.skip = Math.max(0, length - 4);
      if (length > this.limit) {
        this.trip(`a ${this.header[0] === 0x44 ? 'row' : 'message'} of ${length} bytes`);
        return;
      }
    }
  }
}

/** A pg.Client whose connection carries a FrameGuard from its first byte. */
export class GuardedClient extends pg.Client {
  readonly frames = new FrameGuard();

  constructor(config?: pg.ClientConfig) {
    super(config);
    const connection = this.connection as unknown as { attachListeners?: (stream: Duplex) => void };
    const attach = connection.attachListeners;
    // pg's Connection attaches its parser here, on the plain socket or, with TLS, on the TLS stream.
    if (typeof attach !== 'function') throw new Error('unsupported pg version: Connection.attachListeners is missing');
    connection.attachListeners = (stream: Duplex) => {
      this.frames.watch(stream);
      attach.call(connection, stream);
    };
  }
}

/**
 * Approximate size of a value in the JSON answer, in UTF-8 bytes: exact for numbers, booleans and
 * null, and for strings without characters JSON escapes (a quote, a backslash or a control
 * character takes 2 to 6 bytes in JSON instead of 1).
 */
export function jsonSize(value: unknown): number {
  if (value === null || value === undefined) return 4;
  if (typeof value === 'string') return Buffer.byteLength(value) + 2;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value).length;
  // json/jsonb values and arrays; each came in one row message, so at most the row limit.
  return JSON.stringify(value)?.length ?? 4;
}

/** At most `size` holders at once, process-wide; the others wait in arrival order, up to a time limit. */
export class Slots {
  private used = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly size: number) {}

  /** True once a slot is held; false when none freed up within `timeoutMs`. */
  acquire(timeoutMs: number): Promise<boolean> {
    if (this.used < this.size) {
      this.used += 1;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const grant = () => {
        clearTimeout(timer);
        this.used += 1;
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.waiting.splice(this.waiting.indexOf(grant), 1);
        resolve(false);
      }, timeoutMs);
      this.waiting.push(grant);
    });
  }

  release(): void {
    this.used -= 1;
    this.waiting.shift()?.();
  }
}
