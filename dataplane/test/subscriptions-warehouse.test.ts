/**
 * Subscriptions on the warehouse kinds (snowflake and iceberg) through the real snowflake-sdk against
 * the Snowflake test peer: two replicas on one database, a subscriber on one, writes through the other
 * (test-support/feed-replicas.ts); and the peer's query log showing that nobody polls the change
 * log while nobody subscribes.
 */
import { expect } from 'chai';
import { connectSdk, destroy, exec } from '../../e2e/peers/snowflake/sdk-client.js';
import { sharedSnowflakePeer, warehouseDemoManifests } from '../test-support/snowflake-peer.js';
import type { TestDataPlane } from '../test-support/dataplane.js';
import { describeFeedAcrossReplicas, startReplicaPair, type FeedReplicas } from '../test-support/feed-replicas.js';
import { gqlClient } from '../test-support/graphql-ws.js';

const POLL_MS = 300;

/** Two replicas serving the demo dataset on the peer as `kind`; `database` is the peer database. */
async function warehouseReplicas(kind: 'snowflake' | 'iceberg'): Promise<FeedReplicas & { database: string }> {
  const peer = await sharedSnowflakePeer();
  const { manifests, secretsDir, database } = await warehouseDemoManifests(kind);
  const { a, b, imports } = await startReplicaPair(manifests, `das-${kind}-feed-`, { DAS_SECRETS_DIR: secretsDir, DAS_BULK_POLL_MS: '100', DAS_WAREHOUSE_CHANGE_POLL_MS: String(POLL_MS) });
  return {
    a,
    b,
    imports,
    database,
    batchOrdered: true,
    // Pruning past the cursor, as a day's retention would: the pruned mark moves over it.
    expire: async (cursor) => {
      const conn = await connectSdk(peer, { database, schema: 'DEMO' });
      try {
        await exec(conn, 'UPDATE "DEMO"."DAS_CHANGES_PRUNED" SET "THROUGH" = ?', [Number(cursor) + 1]);
      } finally {
        await destroy(conn);
      }
      return cursor;
    },
    stop: async () => {
      await a.stop();
      await b.stop();
    },
  };
}

describeFeedAcrossReplicas('snowflake (the Snowflake test peer)', () => warehouseReplicas('snowflake'));
describeFeedAcrossReplicas('iceberg (the Snowflake test peer)', () => warehouseReplicas('iceberg'));

describe('warehouse change feed: no polling without subscribers (the peer\'s query log)', function () {
  this.timeout(120_000);
  let t: FeedReplicas & { database: string };
  before(async () => (t = await warehouseReplicas('snowflake')));
  after(async () => t?.stop());

  it('sends no change-log query while nobody subscribes, polls about every DAS_WAREHOUSE_CHANGE_POLL_MS while someone does, and stops when they leave', async () => {
    const peer = await sharedSnowflakePeer();
    const polls = () => peer.queries().filter((q) => q.database === t.database && q.sqlText.includes('"DAS_CHANGES"'));
    const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
    peer.clearQueries();
    await wait(POLL_MS * 6);
    expect(polls(), 'no subscriber: no query of the change log').to.deep.equal([]);

    const client = gqlClient(t.a as TestDataPlane);
    const sub = client.iterate({ query: 'subscription { demo_Company { op } }' });
    void sub.next().catch(() => undefined);
    for (let i = 0; i < 100 && t.a.dataPlane.dispatcher.subscriptions < 1; i++) await wait(20);
    await wait(500);
    const start = polls().length;
    await wait(POLL_MS * 10);
    const during = polls().length - start;
    // About one query per poll when nothing changes (a few more when the timer and a read meet).
    expect(during, 'polling while subscribed').to.be.within(5, 25);
    expect(peer.queries().filter((q) => q.database === t.database && q.sqlText.includes('"DAS_CHANGES"') && q.status === 'failed')).to.deep.equal([]);

    await client.dispose();
    for (let i = 0; i < 100 && t.a.dataPlane.dispatcher.subscriptions > 0; i++) await wait(20);
    await wait(POLL_MS);
    peer.clearQueries();
    await wait(POLL_MS * 6);
    expect(polls(), 'the last subscriber left: no more queries').to.deep.equal([]);
  });
});
