/**
 * Bulk loads on the warehouse kinds, store level, through the real snowflake-sdk against the
 * Snowflake test peer: the transactions table and its conditional UPDATEs (claims, leases, cursor),
 * chunks of UPSERT, INSERT and DELETE with versions and history continuing, a chunk re-run after a
 * crash at each point writing nothing twice, and the statements each chunk sends (from the peer's
 * query log): a fixed number per chunk, Iceberg without BEGIN/COMMIT, on the executor's warehouse.
 */
import { expect } from 'chai';
import type { QueryLogEntry, SnowflakeTestPeerHandle } from '../../../../e2e/peers/snowflake/peer.js';
import type { DatasetConfig } from '../../../../model/types.js';
import type { ActionProgress, LoadChunk, LoadCursor, StoredTransaction } from '../../engine/contract.js';
import { isUnavailable } from '../../engine/store-outcomes.js';
import { chunkTime, cursorText } from './bulk-load-sql.js';
import { WarehouseBulkLoad, type WarehouseBulkLoadHost } from './bulk-load.js';
import type { SnowflakeDriver } from './driver.js';
import { warehouseDataset } from '../../../test-support/snowflake-fixtures.js';
import { warehouseDriverUnderTest } from '../../../test-support/snowflake-peer.js';
import type { Session } from './sessions.js';
import { ICEBERG_FORMAT, SNOWFLAKE_FORMAT, type TableFormat } from './table-format.js';

const ORDER = 'shop.Order';
const empty = (): ActionProgress => ({ rowsRead: 0, rowsWritten: 0, rowsRejected: 0, bytesRead: 0, errors: [] });
const spec = (operation: 'UPSERT' | 'INSERT' | 'DELETE' = 'UPSERT'): StoredTransaction['spec'] => ({
  actions: [{ locationUri: 'file:///imports/x.ndjson', operation, format: 'NDJSON', schema: ORDER }],
  context: {},
});

describe('warehouse bulk loads (store level, snowflake-sdk against the test peer)', function () {
  this.timeout(60_000);

  it('chunkTime has a microsecond part that millisecond writes never carry; cursors compare as text', () => {
    expect(chunkTime(new Date('2024-01-02T03:04:05.678Z'), 7)).to.equal('2024-01-02T03:04:05.678007Z');
    for (let i = 0; i < 50; i++) expect(chunkTime()).to.match(/\.\d{3}(?!000)\d{3}Z$/);
    expect(cursorText({ row: 3, file: 1, action: 0 } as LoadCursor)).to.equal('{"action":0,"file":1,"row":3}');
  });

  for (const format of [SNOWFLAKE_FORMAT, ICEBERG_FORMAT]) {
    describe(format.kind, () => {
      let peer: SnowflakeTestPeerHandle;
      let driver: SnowflakeDriver;
      let dataset: DatasetConfig;
      let store: WarehouseBulkLoad;
      let n = 0;

      /** A RUNNING transaction held by `owner`. */
      const running = async (operation: 'UPSERT' | 'INSERT' | 'DELETE', owner = 'me'): Promise<StoredTransaction> => {
        const tx = await store.create(dataset, { id: `tx-${++n}`, spec: spec(operation) });
        const claimed = await store.claim(dataset, owner, 60_000);
        expect(claimed?.id).to.equal(tx.id);
        return claimed!;
      };
      const chunk = (tx: StoredTransaction, records: { id: string; data?: Record<string, unknown> }[], from: LoadCursor, extra: Partial<LoadChunk> = {}): LoadChunk => ({
        transaction: tx.id,
        owner: 'me',
        leaseMs: 60_000,
        schema: ORDER,
        operation: tx.spec.actions[0].operation,
        records: records.map((r, i) => ({ id: r.id, data: r.data ?? {}, row: from.row + i + 1 })),
        from,
        to: { ...from, row: from.row + records.length },
        progress: empty(),
        maxErrors: 10,
        ...extra,
      });
      const at = (row: number): LoadCursor => ({ action: 0, file: 0, row });
      const read = (id: string, version?: number) => driver.read(dataset, { schema: ORDER, id, version });
      const historyOf = async (id: string) => {
        const versions: number[] = [];
        for (let v = 1; v <= 10; v++) if (await read(id, v)) versions.push(v);
        return versions;
      };
      /** The statements sent to this dataset's database while `work` runs. */
      const sent = async (work: () => Promise<unknown>): Promise<QueryLogEntry[]> => {
        peer.clearQueries();
        await work();
        return peer.queries().filter((q) => q.database === dataset.location.database);
      };
      /** A store on the same driver whose sessions run `around` for every statement. */
      const wrappedStore = (around: (text: string, exec: () => ReturnType<Session['exec']>) => ReturnType<Session['exec']>) => {
        const host = driver as unknown as { layout: WarehouseBulkLoadHost['layout']; withSession: WarehouseBulkLoadHost['withSession'] };
        return new WarehouseBulkLoad({
          format: () => format as TableFormat,
          layout: (d, s) => host.layout.call(driver, d, s),
          withSession: (d, ctx, fn) =>
            host.withSession.call(driver, d, ctx, (session: Session) => {
              const wrapped = Object.create(session) as Session;
              wrapped.exec = (text, options) => around(text, () => session.exec(text, options));
              return fn(wrapped);
            }) as never,
        });
      };
      /** A store whose sessions fail (as a crash would) at the first statement matching `crashAt`. */
      const crashingStore = (crashAt: RegExp) => {
        let crashed = false;
        return wrappedStore(async (text, exec) => {
          if (!crashed && crashAt.test(text)) {
            crashed = true;
            throw new Error('simulated crash');
          }
          return exec();
        });
      };

      before(async () => {
        const under = await warehouseDriverUnderTest(format);
        peer = under.peer;
        driver = under.driver;
        dataset = warehouseDataset(format.kind, under.location);
        store = driver.bulkLoad;
        await driver.prepare(dataset);
      });
      after(() => driver?.close());

      it('keeps transactions in DAS_TRANSACTIONS: nothing before the first create, then create, get, list by status and creation, a taken id refused', async () => {
        expect(await store.get(dataset, 'none')).to.equal(undefined);
        expect(await store.list(dataset, { descending: false, limit: 10 })).to.deep.equal([]);
        expect(await store.claim(dataset, 'me', 1000)).to.equal(undefined);
        const a = await store.create(dataset, { id: 'list-a', spec: spec() });
        await new Promise((r) => setTimeout(r, 5));
        const b = await store.create(dataset, { id: 'list-b', spec: spec('DELETE') });
        expect(a).to.include({ status: 'PENDING' });
        const got = await store.get(dataset, 'list-b');
        expect(got).to.deep.include({ id: 'list-b', status: 'PENDING', spec: spec('DELETE'), cursor: { action: 0, file: 0, row: 0 }, createdAt: b.createdAt });
        expect(got!.progress).to.deep.equal([empty()]);
        await store.create(dataset, { id: 'list-a', spec: spec() }).then(
          () => expect.fail('a taken id was accepted'),
          (err) => expect(err.failure).to.deep.equal({ kind: 'exists', schema: 'Transaction', id: 'list-a' }),
        );
        const asc = await store.list(dataset, { descending: false, limit: 1 });
        expect(asc.map((t) => t.id)).to.deep.equal(['list-a']);
        const next = await store.list(dataset, { descending: false, limit: 5, after: [asc[0].createdAt, asc[0].id] });
        expect(next.map((t) => t.id)).to.deep.equal(['list-b']);
        expect((await store.list(dataset, { descending: true, limit: 5 })).map((t) => t.id)).to.deep.equal(['list-b', 'list-a']);
        expect((await store.list(dataset, { status: 'RUNNING', descending: false, limit: 5 })).map((t) => t.id)).to.deep.equal([]);
        // Claimed oldest first; leave neither claimable for the tests that follow.
        for (const id of ['list-a', 'list-b']) {
          const claimed = await store.claim(dataset, 'me', 60_000);
          expect(claimed).to.deep.include({ id, status: 'RUNNING', leaseOwner: 'me' });
          await store.finish(dataset, id, 'me', { status: 'SUCCEEDED', progress: [empty()] });
        }
        expect(await store.get(dataset, 'list-a')).to.deep.include({ status: 'SUCCEEDED' });
      });

      it('one claimer wins; renewals, chunks and finishes of another owner are refused; a lease that ran out is claimed again', async () => {
        const tx = await store.create(dataset, { id: `lease-${format.kind}`, spec: spec() });
        // Leases of 2 s: short enough to wait out, long enough that a loaded machine does not end them early.
        const mine = await store.claim(dataset, 'a', 2000);
        expect(mine?.id).to.equal(tx.id);
        // Another replica's store: after finding nothing it pauses (5 minutes), but only until the lease it saw runs out.
        const other = new WarehouseBulkLoad({ format: () => format, layout: () => undefined as never, withSession: (d, c, fn) => (driver as any).withSession(d, c, fn) });
        expect(await other.claim(dataset, 'b', 60_000)).to.equal(undefined);
        expect(await store.renew(dataset, tx.id, 'b', 60_000)).to.equal(false);
        expect(await store.renew(dataset, tx.id, 'a', 2000)).to.equal(true);
        expect(await store.loadChunk(dataset, chunk(tx, [{ id: 'never' }], at(0), { owner: 'b' }))).to.deep.equal({ kind: 'lease-lost' });
        expect(await read('never')).to.equal(undefined);
        await new Promise((r) => setTimeout(r, 2100));
        const taken = await other.claim(dataset, 'b', 60_000);
        // The takeover is counted (the runner's crash-loop guard).
        expect(taken).to.deep.include({ id: tx.id, leaseOwner: 'b', lostLeases: 1 });
        expect(await store.advance(dataset, tx.id, 'a', at(5), [empty()])).to.equal(false);
        await store.finish(dataset, tx.id, 'a', { status: 'FAILED', error: 'not mine', progress: [empty()] });
        expect(await store.get(dataset, tx.id)).to.deep.include({ status: 'RUNNING', leaseOwner: 'b' });
        await store.finish(dataset, tx.id, 'b', undefined);
        expect(await store.get(dataset, tx.id)).to.deep.include({ status: 'PENDING' });
        // Given back: claimable at once, and finished by its holder.
        expect(await store.claim(dataset, 'a', 60_000), 'a give-back is no lost lease').to.deep.include({ id: tx.id, lostLeases: 1 });
        await store.finish(dataset, tx.id, 'a', { status: 'SUCCEEDED', progress: [empty()] });
        // Nothing left: the next claim asks the warehouse, the one after it sends no statement (the idle pause).
        expect(await other.claim(dataset, 'b', 60_000)).to.equal(undefined);
        expect(await sent(() => other.claim(dataset, 'b', 60_000))).to.deep.equal([]);
      });

      it('a claim whose look ran before a create committed does not pause the dataset past that transaction', async () => {
        let createDuring: (() => Promise<unknown>) | undefined;
        const racing: WarehouseBulkLoad = wrappedStore(async (text, exec) => {
          const result = await exec();
          // The create commits after the claim's candidate SELECT and before the claim ends.
          if (createDuring && /"READY"/.test(text)) {
            const create = createDuring;
            createDuring = undefined;
            await create();
          }
          return result;
        });
        const id = `tx-race-${format.kind}`;
        createDuring = () => racing.create(dataset, { id, spec: spec() });
        expect(await racing.claim(dataset, 'r', 60_000), 'the claim looked before the create').to.equal(undefined);
        expect((await racing.claim(dataset, 'r', 60_000))?.id, 'the next claim takes it at once').to.equal(id);
        await racing.finish(dataset, id, 'r', { status: 'SUCCEEDED', progress: [empty()] });
      });

      it('UPSERT chunks write versions and history as any write, continuing after the driver\'s own writes; a committed chunk run again is already-committed', async () => {
        const [existing] = await driver.write(dataset, [{ op: 'create', schema: ORDER, id: 'u-old', data: { count: 1 } }], 'ATOMIC');
        expect(existing.ok).to.equal(true);
        const tx = await running('UPSERT');
        const first = chunk(tx, [{ id: 'u1', data: { count: 1, total: 1.5, paid: true, day: '2024-01-02', placedAt: '2024-05-06T07:08:09.123Z', address: { city: 'Oslo' } } }, { id: 'u-old', data: { count: 2 } }, { id: 'u1', data: { count: 9, total: 2.5 } }], at(0));
        const outcome = await store.loadChunk(dataset, first);
        expect(outcome).to.deep.equal({ kind: 'committed', progress: { ...empty(), rowsWritten: 2 } });
        expect(await read('u1')).to.deep.include({ id: 'u1', version: 1, data: { count: 9, total: 2.5 } });
        expect(await read('u-old')).to.deep.include({ version: 2, data: { count: 2 } });
        expect(await historyOf('u-old')).to.deep.equal([1, 2]);
        expect(await store.loadChunk(dataset, first)).to.deep.equal({ kind: 'already-committed' });
        expect(await historyOf('u1')).to.deep.equal([1]);
        const second = await store.loadChunk(dataset, chunk(tx, [{ id: 'u1', data: { count: 10, placedAt: '2024-05-06T07:08:09.123Z', day: '2024-01-03', paid: false, address: { city: 'Rome' } } }], at(3), { progress: { ...empty(), rowsWritten: 2 } }));
        expect(second).to.deep.include({ kind: 'committed' });
        expect(await read('u1')).to.deep.include({ version: 2, data: { count: 10, placedAt: '2024-05-06T07:08:09.123Z', day: '2024-01-03', paid: false, address: { city: 'Rome' } } });
        expect((await read('u1', 1))?.data).to.deep.equal({ count: 9, total: 2.5 });
        const stored = await store.get(dataset, tx.id);
        expect(stored?.cursor).to.deep.equal(at(4));
        expect(stored?.progress[0]).to.include({ rowsWritten: 3 });
      });

      it('INSERT refuses ids that exist (and repeats within the chunk) into the progress errors; DELETE writes tombstones and refuses unknown ids', async () => {
        const ins = await running('INSERT');
        const outcome = await store.loadChunk(dataset, chunk(ins, [{ id: 'i1', data: { count: 1 } }, { id: 'u1', data: { count: 99 } }, { id: 'i1', data: { count: 2 } }, { id: 'i2' }], at(0)));
        expect(outcome.kind).to.equal('committed');
        const progress = (outcome as { progress: ActionProgress }).progress;
        expect(progress).to.include({ rowsWritten: 2, rowsRejected: 2 });
        expect(progress.errors.map((e) => e.row).sort()).to.deep.equal([2, 3]);
        expect(progress.errors.find((e) => e.row === 2)?.message).to.equal('a record with id "u1" exists');
        expect(progress.errors.find((e) => e.row === 3)?.message).to.match(/earlier in the same chunk/);
        expect(await read('i1')).to.deep.include({ version: 1, data: { count: 1 } });
        expect((await read('u1'))?.data.count).to.equal(10);

        const del = await running('DELETE');
        const deleted = await store.loadChunk(dataset, chunk(del, [{ id: 'i1' }, { id: 'ghost' }], at(0)));
        expect(deleted).to.deep.equal({ kind: 'committed', progress: { ...empty(), rowsWritten: 1, rowsRejected: 1, errors: [{ row: 2, message: 'no record with id "ghost"' }] } });
        expect(await read('i1')).to.equal(undefined);
        expect(await read('i1', 2)).to.deep.include({ version: 2, deleted: true });
        expect((await read('i1', 1))?.data).to.deep.equal({ count: 1 });
        // Created again after the delete: the versions continue after the tombstone.
        const again = await running('UPSERT');
        await store.loadChunk(dataset, chunk(again, [{ id: 'i1', data: { count: 3 } }], at(0)));
        expect(await read('i1')).to.deep.include({ version: 3, data: { count: 3 } });
      });

      // The points a data plane can die at: after the first MERGE (iceberg: the history's; snowflake: the record table's), after both, before the cursor moves.
      for (const [where, crashAt] of [
        ['after the first MERGE', format.transactions ? /^MERGE INTO "SHOP"\."SHOP_ORDER_HISTORY"/ : /^MERGE INTO "SHOP"\."SHOP_ORDER" /],
        ['after both MERGEs', /^UPDATE "SHOP"\."DAS_TRANSACTIONS" SET "LOAD_CURSOR"/],
      ] as const) {
        it(`a chunk re-run after a crash ${where} writes no version twice and reports the same progress`, async () => {
          const tag = where.includes('first') ? 'h' : 'b';
          await driver.write(dataset, [{ op: 'create', schema: ORDER, id: `c${tag}-old`, data: { count: 1 } }], 'ATOMIC');
          const tx = await running('INSERT');
          const records = [{ id: `c${tag}-1`, data: { count: 1 } }, { id: `c${tag}-old`, data: { count: 5 } }, { id: `c${tag}-2`, data: { count: 2 } }];
          const crashing = crashingStore(crashAt);
          let failure: unknown;
          await crashing.loadChunk(dataset, chunk(tx, records, at(0))).catch((err) => (failure = err));
          expect(String(failure)).to.include('simulated crash');
          const rerun = await store.loadChunk(dataset, chunk(tx, records, at(0)));
          expect(rerun).to.deep.equal({ kind: 'committed', progress: { ...empty(), rowsWritten: 2, rowsRejected: 1, errors: [{ row: 2, message: `a record with id "c${tag}-old" exists` }] } });
          for (const id of [`c${tag}-1`, `c${tag}-2`]) {
            expect(await historyOf(id), id).to.deep.equal([1]);
            expect((await read(id))?.version).to.equal(1);
          }
          expect(await historyOf(`c${tag}-old`)).to.deep.equal([1]);
          expect((await read(`c${tag}-old`))?.data).to.deep.equal({ count: 1 });
          expect((await store.get(dataset, tx.id))?.cursor).to.deep.equal(at(3));
          expect(await store.loadChunk(dataset, chunk(tx, records, at(0)))).to.deep.equal({ kind: 'already-committed' });
        });
      }

      if (format.transactions) {
        it('a chunk holding the record table and an ATOMIC write of the same schema wait for each other without a deadlock (the same lock order)', async () => {
          const tx = await running('UPSERT');
          let reached!: () => void;
          const atGate = new Promise<void>((r) => (reached = r));
          let release!: () => void;
          const gate = new Promise<void>((r) => (release = r));
          // The chunk stops right after its first MERGE, inside its transaction, holding that table.
          let merges = 0;
          const pausing = wrappedStore(async (text, exec) => {
            const result = await exec();
            if (text.startsWith('MERGE INTO "SHOP"."SHOP_ORDER') && ++merges === 1) {
              reached();
              await gate;
            }
            return result;
          });
          const load = pausing.loadChunk(dataset, chunk(tx, [{ id: 'dl-1', data: { count: 1 } }], at(0)));
          await atGate;
          const write = driver.write(dataset, [{ op: 'create', schema: ORDER, id: 'dl-w', data: { count: 2 } }], 'ATOMIC');
          await new Promise((r) => setTimeout(r, 300));
          release();
          const [loaded, [written]] = await Promise.all([load, write]);
          expect(loaded.kind).to.equal('committed');
          expect(written.ok, JSON.stringify(written)).to.equal(true);
          expect((await read('dl-1'))?.version).to.equal(1);
          expect((await read('dl-w'))?.version).to.equal(1);
        });
      }

      it(`sends a fixed number of statements per chunk, whatever its size, on the executor's warehouse${format.transactions ? ', in one BEGIN … COMMIT' : ', never BEGIN/COMMIT'}`, async () => {
        const tx = await running('UPSERT');
        const rows = (k: number, base: number) => Array.from({ length: k }, (_, i) => ({ id: `s-${base + i}`, data: { count: i } }));
        const small = await sent(() => store.loadChunk(dataset, chunk(tx, rows(2, 0), at(0), { ctx: { executor: 'big', warehouse: 'WH_LOADS' } })));
        const large = await sent(() => store.loadChunk(dataset, chunk(tx, rows(60, 2), at(2), { ctx: { executor: 'big', warehouse: 'WH_LOADS' } })));
        // A PUT names the chunk's file (its cursor and size): the statement's kind is what must not change.
        const shape = (log: QueryLogEntry[]) => log.map((q) => (q.sqlText.startsWith('PUT ') ? 'PUT' : q.sqlText.split(/\s+/).slice(0, 3).join(' ')));
        expect(shape(large)).to.deep.equal(shape(small));
        const stage = ['CREATE OR REPLACE', 'PUT', 'COPY INTO "DAS_LOAD_STAGE"'];
        const [history, record, changes, cursor] = ['MERGE INTO "SHOP"."SHOP_ORDER_HISTORY"', 'MERGE INTO "SHOP"."SHOP_ORDER"', 'MERGE INTO "SHOP"."DAS_CHANGES"', 'UPDATE "SHOP"."DAS_TRANSACTIONS" SET'];
        // The chunk's versions go to the change log too (docs/warehouse.md, "Change feed").
        const expected = [...stage, history, record, changes, cursor];
        if (format.transactions) {
          // The record table first, as the driver's own atomic writes lock them (no deadlock with one).
          expect(shape(large)).to.deep.equal([...stage, 'BEGIN', 'SELECT "LOAD_CURSOR", "LEASE_OWNER",', record, history, changes, cursor, 'COMMIT']);
          expect(large.filter((q) => /^(MERGE|UPDATE)/.test(q.sqlText)).every((q) => q.inTransaction)).to.equal(true);
        } else {
          expect(shape(large)).to.deep.equal(['SELECT "LOAD_CURSOR", "LEASE_OWNER",', 'UPDATE "SHOP"."DAS_TRANSACTIONS" SET', ...expected]);
          expect(large.filter((q) => /^(BEGIN|START|COMMIT|ROLLBACK)/i.test(q.sqlText))).to.deep.equal([]);
          expect(large.every((q) => !q.inTransaction)).to.equal(true);
        }
        expect(large.every((q) => q.warehouse === 'WH_LOADS' && q.status === 'succeeded'), JSON.stringify(large.map((q) => [q.warehouse, q.status]))).to.equal(true);
        expect(large.filter((q) => /RETURNING/i.test(q.sqlText))).to.deep.equal([]);
        // The rows travel as a file on the user stage, never as array binds of an INSERT; PURGE leaves nothing there.
        expect(large.filter((q) => /^INSERT INTO "DAS_LOAD_STAGE"/.test(q.sqlText))).to.deep.equal([]);
        const dir = `@~/das_bulk/${dataset.id}/${tx.id}/`;
        expect(large.find((q) => q.sqlText.startsWith('PUT '))?.sqlText).to.equal(`PUT 'file://0-0-2-60.csv.gz' '${dir}' AUTO_COMPRESS = FALSE SOURCE_COMPRESSION = GZIP OVERWRITE = TRUE`);
        expect(large.find((q) => q.sqlText.startsWith('COPY '))?.sqlText).to.match(
          new RegExp(`FROM '${dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}0-0-2-60\\.csv\\.gz' FILE_FORMAT = \\(TYPE = CSV .*\\) FORCE = TRUE PURGE = TRUE ON_ERROR = ABORT_STATEMENT$`),
        );
        expect(peer.stagedFiles().filter((f) => f.startsWith('das_bulk/'))).to.deep.equal([]);
        expect((await read('s-61'))?.version).to.equal(1);
      });

      it('a chunk whose file the stage storage refuses (503, after the SDK\'s retries) is the store outcome unavailable, writes nothing, and loads when the storage is back', async () => {
        const tx = await running('UPSERT');
        const rows = [{ id: 'up-1', data: { count: 1 } }];
        peer.peer.stage.refuseUploads = true;
        try {
          const err = await store.loadChunk(dataset, chunk(tx, rows, at(0))).then(
            () => undefined,
            (e: unknown) => e,
          );
          expect(isUnavailable(err), String(err)).to.equal(true);
          expect((err as Error).message).to.match(/stage upload/);
        } finally {
          peer.peer.stage.refuseUploads = false;
        }
        expect(await read('up-1')).to.equal(undefined);
        expect(await store.loadChunk(dataset, chunk(tx, rows, at(0)))).to.include({ kind: 'committed' });
        expect((await read('up-1'))?.version).to.equal(1);
      });

      // Last: it drops what the tests above wrote.
      it('a purge (deletionPolicy: Delete) drops the transactions table with the records; transactions start afresh after it', async () => {
        await running('UPSERT');
        const dropped = await driver.purge!(dataset);
        expect(dropped).to.include('"SHOP"."DAS_TRANSACTIONS"');
        expect(await store.list(dataset, { descending: true, limit: 10 }), 'no transaction survives the purge').to.deep.equal([]);
        await driver.prepare(dataset);
        const tx = await store.create(dataset, { id: `tx-after-purge-${format.kind}`, spec: spec() });
        expect((await store.get(dataset, tx.id))?.status).to.equal('PENDING');
      });
    });
  }
});
