/**
 * The driver suite's change-feed section (capabilities.changeFeed): what the subscription dispatcher
 * relies on from any store's feed, through the contract only — every committed write once, in commit
 * order, with its record image; an atomic write's changes consecutive and in action order; a failed
 * atomic write none; a delete carrying the version before it; cursors that increase and resume;
 * wake-ups after commits; a malformed cursor refused.
 */
import { expect } from 'chai';
import type { DatasetConfig } from '../../model/types.js';
import type { ChangeFeed, LocationDriver, RecordChange } from '../src/engine/contract.js';
import { decimalCursorOrder } from '../src/graphql/dispatcher.js';

export function describeChangeFeedSection(get: () => { driver: LocationDriver; dataset: DatasetConfig }): void {
  describe('change feed (subscriptions)', function () {
    this.timeout(30_000);
    let n = 0;
    const fresh = () => `feed-${process.pid}-${++n}`;
    const feed = (): ChangeFeed => get().driver.changes!;
    /** Every change after `after`, read in pages of `page` (the dispatcher's way). */
    const changesAfter = async (after: string, page = 3): Promise<RecordChange[]> => {
      const all: RecordChange[] = [];
      for (let cursor = after; ; ) {
        const batch = await feed().readChanges(get().dataset, cursor, page);
        expect(batch.expired).to.equal(false);
        all.push(...batch.changes);
        if (batch.changes.length < page) return all;
        cursor = batch.changes[batch.changes.length - 1].cursor;
      }
    };
    const mine = (changes: RecordChange[], ids: string[]) => changes.filter((c) => ids.includes(c.id));

    it('reports each committed write once, in commit order, with increasing cursors and the record as written', async () => {
      const { driver, dataset } = get();
      const head = await feed().head(dataset);
      const id = fresh();
      await driver.write(dataset, [{ op: 'create', schema: 'suite.Company', id, data: { name: 'A' } }], 'QUORUM');
      await driver.write(dataset, [{ op: 'update', schema: 'suite.Company', id, data: { name: 'B' }, merge: false }], 'QUORUM');
      await driver.write(dataset, [{ op: 'delete', schema: 'suite.Company', id }], 'QUORUM');
      const changes = mine(await changesAfter(head), [id]);
      expect(changes.map((c) => [c.op, c.version])).to.deep.equal([
        ['CREATE', 1],
        ['UPDATE', 2],
        ['DELETE', 3],
      ]);
      // In the feed's cursor order (decimal positions unless it declares its own, as DynamoDB's per shard).
      const order = feed().cursorOrder ?? decimalCursorOrder;
      const increasing = changes.every((c, i) => i === 0 || (!order.has(order.parse(changes[i - 1].cursor), c) && order.has(order.parse(c.cursor), changes[i - 1])));
      expect(increasing, 'cursors increase in commit order').to.equal(true);
      expect(changes[0].record?.data).to.deep.equal({ name: 'A' });
      expect(changes[1].record?.data).to.deep.equal({ name: 'B' });
      expect(changes[2].previous?.data, 'a delete carries the version before it').to.deep.equal({ name: 'B' });
      expect(changes.every((c) => c.schema === 'suite.Company' && typeof c.committedAt === 'string')).to.equal(true);
      // Resuming after any change gives exactly the ones that follow it.
      expect(mine(await changesAfter(changes[0].cursor), [id]).map((c) => c.version)).to.deep.equal([2, 3]);
      expect(mine(await changesAfter(changes[2].cursor), [id])).to.deep.equal([]);
    });

    it('an atomic write: its changes consecutive and in action order; a failed one: none', async () => {
      const { driver, dataset } = get();
      const level = driver.capabilities.consistency.includes('ATOMIC') ? 'ATOMIC' : driver.capabilities.consistency[0];
      const head = await feed().head(dataset);
      const [a, b, c] = [fresh(), fresh(), fresh()];
      await driver.write(
        dataset,
        [
          { op: 'create', schema: 'suite.Company', id: b, data: { name: 'B' } },
          { op: 'create', schema: 'suite.Person', id: a, data: { name: 'A', employer: { id: b } } },
          { op: 'create', schema: 'suite.Company', id: c, data: { name: 'C' } },
        ],
        level,
      );
      const failed = await driver.write(
        dataset,
        [
          { op: 'create', schema: 'suite.Company', id: fresh(), data: { name: 'never' } },
          { op: 'create', schema: 'suite.Company', id: b, data: { name: 'taken' } },
        ],
        level,
      );
      expect(failed.map((r) => r.ok)).to.deep.equal([false, false]);
      const all = await changesAfter(head, 100);
      const ids = all.map((ch) => ch.id);
      const start = ids.indexOf(b);
      expect(ids.slice(start, start + 3), 'consecutive, in action order').to.deep.equal([b, a, c]);
      expect(all.filter((ch) => ch.record?.data.name === 'never' || ch.record?.data.name === 'taken'), 'nothing of the failed write').to.deep.equal([]);
    });

    it('wakes a subscriber after a commit', async () => {
      const { driver, dataset } = get();
      let woken = 0;
      const stop = await feed().subscribeWakeups(dataset, () => woken++);
      try {
        await driver.write(dataset, [{ op: 'create', schema: 'suite.Company', id: fresh(), data: { name: 'W' } }], 'QUORUM');
        for (let i = 0; i < 100 && woken === 0; i++) await new Promise((r) => setTimeout(r, 50));
        expect(woken, 'a wake-up within 5 s of the commit').to.be.greaterThan(0);
      } finally {
        await stop();
      }
    });

    it('refuses a malformed cursor as an invalid query', async () => {
      const err = await feed()
        .readChanges(get().dataset, 'not-a-cursor', 10)
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect((err as { failure?: { kind: string } })?.failure?.kind).to.equal('invalid-query');
    });
  });
}
