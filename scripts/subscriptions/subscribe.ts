/**
 * A minimal subscriber (README "Subscriptions"): prints every change of a schema as it commits.
 *
 *   npx tsx scripts/subscriptions/subscribe.ts [type] [filter]
 *   DAS_URL=ws://localhost:8080/demo/graphql DAS_AUTHORIZATION='Proxy demo-admin' npx tsx scripts/subscriptions/subscribe.ts demo_Person "age >= 30"
 *
 * DAS_AFTER=<cursor> resumes after a cursor an earlier run printed.
 */
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

const [type = 'demo_Person', filter] = process.argv.slice(2);
const url = process.env.DAS_URL ?? 'ws://localhost:8080/demo/graphql';
const client = createClient({
  url,
  webSocketImpl: WebSocket,
  connectionParams: { Authorization: process.env.DAS_AUTHORIZATION ?? 'Proxy demo-admin' },
  // Reconnects resume where the last event left off, so nothing is missed or repeated.
  retryAttempts: Infinity,
});
let after = process.env.DAS_AFTER;

async function main(): Promise<void> {
  for (;;) {
    const events = client.iterate({
      query: `subscription($filter: String, $after: String) { ${type}(filter: $filter, after: $after) { op cursor record { id version } } }`,
      variables: { filter, after },
    });
    for await (const event of events) {
      if (event.errors) throw new Error(JSON.stringify(event.errors));
      const change = (event.data as Record<string, { op: string; cursor: string; record: unknown }>)[type];
      after = change.cursor;
      console.log(JSON.stringify(change));
    }
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
