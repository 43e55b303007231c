/**
 * A subscriber that does what docs/subscriptions.md asks of clients on a rolling restart: when its
 * connection closes with 1012 (service restart), it connects again (through the Service, so to
 * another replica) and resumes with `after: <last cursor it received>`. Bare `ws` clients of both
 * protocols: graphql-transport-ws and the older graphql-ws (subscriptions-transport-ws).
 */
import WebSocket from 'ws';

export type Protocol = 'graphql-transport-ws' | 'graphql-ws';

const QUERY = 'subscription S($after: String) { demo_Person(after: $after) { op cursor record { id } } }';

export class ResumingSubscriber {
  /** Record ids of the CREATE events received, in order. */
  readonly created: string[] = [];
  /** Cursors received more than once (must stay empty). */
  readonly repeated: string[] = [];
  /** Close codes of connections that ended, in order. */
  readonly closes: number[] = [];
  /** Upgrades or connections that failed (refused, reset, an HTTP answer instead of 101). */
  readonly failures: string[] = [];
  private readonly cursors = new Set<string>();
  private lastCursor: string | undefined;
  private socket: WebSocket | undefined;
  private stopped = false;
  private subscribed!: () => void;
  /** Resolves when the first subscription has been sent (the server registers it on receipt). */
  readonly started = new Promise<void>((resolve) => (this.subscribed = resolve));

  constructor(
    private readonly url: string,
    private readonly protocol: Protocol,
    private readonly authorization: string,
  ) {
    this.connect();
  }

  get resumes(): number {
    return this.closes.filter((c) => c === 1012).length;
  }

  private connect(): void {
    if (this.stopped) return;
    const ws = new WebSocket(this.url, this.protocol, { headers: { host: 'iam.localhost' } });
    this.socket = ws;
    ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: this.authorization } })));
    ws.on('message', (data) => this.receive(ws, JSON.parse(String(data)) as Record<string, any>));
    ws.on('unexpected-response', (_req, res) => {
      this.failures.push(`upgrade answered ${res.statusCode}`);
      res.resume();
      ws.terminate();
    });
    ws.on('error', (err) => this.failures.push(`socket: ${err.message}`));
    ws.on('close', (code) => {
      this.closes.push(code);
      // 1012: the replica restarts; anything else is recorded (a failure unless this client stopped) and retried as well.
      if (!this.stopped) setTimeout(() => this.connect(), 100);
    });
  }

  private receive(ws: WebSocket, message: Record<string, any>): void {
    const variables = this.lastCursor ? { after: this.lastCursor } : {};
    if (message.type === 'connection_ack') {
      const start = this.protocol === 'graphql-ws' ? 'start' : 'subscribe';
      ws.send(JSON.stringify({ id: '1', type: start, payload: { query: QUERY, variables } }));
      this.subscribed();
      return;
    }
    const payload = message.type === 'next' || message.type === 'data' ? message.payload : undefined;
    if (!payload) {
      if (message.type === 'error' || message.type === 'connection_error') this.failures.push(`${message.type}: ${JSON.stringify(message.payload)}`);
      return;
    }
    if (payload.errors) return void this.failures.push(`errors: ${JSON.stringify(payload.errors)}`);
    const event = payload.data.demo_Person as { op: string; cursor: string; record: { id: string } };
    if (this.cursors.has(event.cursor)) return void this.repeated.push(event.cursor);
    this.cursors.add(event.cursor);
    this.lastCursor = event.cursor;
    if (event.op === 'CREATE') this.created.push(event.record.id);
  }

  stop(): void {
    this.stopped = true;
    this.socket?.close(1000);
  }
}
