/**
 * A minimal subscriber (README "Subscriptions"): prints every change of a schema as it commits.
 *
 *   npx tsx scripts/subscriptions/subscribe.ts [type] [filter]
 *   DAS_URL=ws://127.0.0.1:8080/demo/graphql DAS_AUTHORIZATION='Proxy demo-admin' npx tsx scripts/subscriptions/subscribe.ts demo_Person "age >= 30"
 *
 * Each event is one JSON line on stdout; what happens to the connection goes to stderr:
 * `connected`, and `closed <code> <reason>` when it ends. A refusal (the upgrade answered 4xx, or
 * close 4400/4401/4403/4406) ends the script with exit code 1: retrying would not help. A restart
 * (1012), a shutdown (1001), a slow-consumer cut (4429) or a lost connection reconnects, with
 * growing pauses, and resumes with `after: <last cursor>`, so nothing is missed or repeated.
 *
 * DAS_AFTER=<cursor> resumes after a cursor an earlier run printed. The default address is
 * 127.0.0.1: a host without a gateway label, so the Authorization scheme picks the gateway
 * (Proxy: iam); `*.localhost` names do not resolve in node.
 */
import { createClient, type Client } from 'graphql-ws';
import type { ClientRequest, IncomingMessage } from 'node:http';
import WebSocket from 'ws';

const [type = 'demo_Person', filter] = process.argv.slice(2);
const url = process.env.DAS_URL ?? 'ws://127.0.0.1:8080/demo/graphql';
const authorization = process.env.DAS_AUTHORIZATION ?? 'Proxy demo-admin';
/** Close codes that mean "you may not" or "you asked wrongly": the same request would fail again. */
const FINAL = new Set([4400, 4401, 4403, 4406]);
const MAX_PAUSE_MS = 10_000;

let after = process.env.DAS_AFTER;
/** An upgrade the server answered with HTTP instead of switching protocols. */
let refusedUpgrade: { status: number; body: string } | undefined;

/** ws, remembering an HTTP refusal of the upgrade (graphql-ws sees only a dropped socket). */
class RefusalAwareSocket extends WebSocket {
  constructor(address: string, protocols?: string | string[]) {
    super(address, protocols);
    this.on('unexpected-response', (request: ClientRequest, response: IncomingMessage) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk.slice(0, 2000 - body.length)));
      response.on('error', () => undefined);
      response.on('end', () => {
        refusedUpgrade = { status: response.statusCode ?? 0, body };
        request.destroy();
        this.emit('close', 1006, Buffer.from(`HTTP ${response.statusCode}`));
      });
    });
  }
}

const say = (line: string) => process.stderr.write(`${line}\n`);

/** One connection: events until it closes; the close event (or error) it ended with. */
async function connectOnce(): Promise<{ code?: number; reason?: string; connected: boolean }> {
  let closed: { code?: number; reason?: string } = {};
  let connected = false;
  const client: Client = createClient({
    url,
    webSocketImpl: RefusalAwareSocket,
    connectionParams: { Authorization: authorization },
    // Reconnecting is done here, so that it resumes from the last cursor.
    retryAttempts: 0,
    on: {
      connected: () => {
        connected = true;
        say('connected');
      },
      closed: (event) => {
        const e = event as { code?: number; reason?: string };
        closed = { code: e.code, reason: e.reason };
      },
    },
  });
  try {
    const events = client.iterate({
      query: `subscription($filter: String, $after: String) { ${type}(filter: $filter, after: $after) { op cursor record { id version } } }`,
      variables: { filter, after },
    });
    for await (const event of events) {
      if (event.errors) {
        say(`error ${JSON.stringify(event.errors)}`);
        return { code: 4400, reason: 'the subscription was refused', connected };
      }
      const change = (event.data as Record<string, { op: string; cursor: string; record: unknown }>)[type];
      after = change.cursor;
      console.log(JSON.stringify(change));
    }
  } catch (err) {
    if (!closed.code && err instanceof Error) closed = { reason: err.message };
  } finally {
    await client.dispose();
  }
  return { ...closed, connected };
}

async function main(): Promise<number> {
  let pause = 250;
  for (;;) {
    refusedUpgrade = undefined;
    const { code, reason, connected } = await connectOnce();
    // A connection that worked starts the pauses afresh.
    if (connected) pause = 250;
    if (refusedUpgrade) {
      const refusal: { status: number; body: string } = refusedUpgrade;
      say(`refused: HTTP ${refusal.status} ${refusal.body}`);
      // 503 (not ready, store down) and 429 pass; the rest would be refused again.
      if (refusal.status !== 503 && refusal.status !== 429) return 1;
    } else {
      say(`closed ${code ?? '-'} ${reason ?? ''}`.trimEnd());
      if (code !== undefined && FINAL.has(code)) return 1;
      if (code === 1000) return 0;
    }
    say(`reconnecting in ${pause} ms${after ? ` after ${after}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, pause));
    pause = Math.min(pause * 2, MAX_PAUSE_MS);
  }
}

process.once('SIGINT', () => process.exit(0));
main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    say(err instanceof Error ? err.message : String(err));
    process.exit(1);
  },
);
