/**
 * PostgreSQL stopped and started again under load, with the real entry point
 * (dataplane/src/main.ts) in front of it: 503 with Retry-After during the outage (never a 500,
 * never a crash, not even with a raw query running when the server goes), /readyz not ready while
 * the store is unreachable, recovery without a restart, and every acknowledged write readable
 * afterwards — ASYNC writes accepted during the outage included.
 */
import { expect } from 'chai';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startEmbeddedPostgres, type EmbeddedDatabase } from '../src/db/embedded.js';
import { call, type CallResult } from '../test-support/http.js';
import { startMain, waitReady } from '../test-support/main-process.js';

const admin = { host: 'iam.localhost', headers: { authorization: 'Proxy demo-admin' } };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('store outage under load (dataplane/src/main.ts against a PostgreSQL that stops and comes back)', function () {
  this.timeout(240_000);

  it('answers 503 with Retry-After while PostgreSQL is down, recovers by itself, and loses no acknowledged write', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'das-outage-'));
    chmodSync(dir, 0o755);
    const pgPort = await freePort();
    let db: EmbeddedDatabase = await startEmbeddedPostgres({ dir: join(dir, 'pg'), port: pgPort });
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const main = startMain({ DATABASE_URL: db.url, PORT: String(port), DATA_DIR: join(dir, 'data') });
    try {
      await waitReady(url, main);
      expect((await call(url, { ...admin, path: '/demo', body: { create: { schema: 'demo.Company', id: 'known', data: { name: 'Known' } } } })).status).to.equal(201);

      const acknowledged = new Set<string>();
      const statuses: { phase: string; status: number; retryAfter?: string; code?: string }[] = [];
      let phase = 'before';
      let running = true;
      let counter = 0;
      const record = (res: CallResult) => statuses.push({ phase, status: res.status, retryAfter: res.headers['retry-after'] as string | undefined, code: res.json?.error?.code });
      const worker = async (w: number) => {
        while (running) {
          const n = counter++;
          const consistency = ['QUORUM', 'ATOMIC', 'ASYNC', 'EVENTUAL'][n % 4];
          const id = `w${w}-${n}`;
          try {
            const res = await call(url, { ...admin, path: '/demo', body: { create: { schema: 'demo.Company', id, data: { name: id }, consistency } } });
            record(res);
            if (res.status === 201 || res.status === 202) acknowledged.add(id);
            record(await call(url, { ...admin, path: '/demo/demo.Company/known' }));
          } catch (err) {
            statuses.push({ phase, status: -1, code: (err as Error).message });
          }
          await sleep(5);
        }
      };
      const workers = [0, 1, 2, 3].map(worker);
      await sleep(1000);

      // A raw query running when the server stops must not take the process down.
      const rawQuery = call(url, { ...admin, path: '/demo/raw-query', body: { sql: 'SELECT pg_sleep(5) AS slept' } });
      await sleep(300);
      phase = 'outage';
      await db.stop();
      const raw = await rawQuery;
      expect(raw.status, raw.text).to.equal(503);
      expect(raw.headers['retry-after']).to.match(/^\d+$/);

      let readyDuringOutage: CallResult | undefined;
      for (let i = 0; i < 20 && readyDuringOutage?.status !== 503; i++) {
        await sleep(250);
        readyDuringOutage = await call(url, { path: '/readyz' });
      }
      expect(readyDuringOutage!.status, readyDuringOutage!.text).to.equal(503);
      expect(readyDuringOutage!.json.status).to.equal('unavailable');
      expect(readyDuringOutage!.json.datasets.demo.store).to.match(/^unreachable/);
      await sleep(1500);

      phase = 'recovery';
      db = await startEmbeddedPostgres({ dir: join(dir, 'pg'), port: pgPort });
      await waitReady(url, main, 30_000);
      phase = 'after';
      await sleep(1000);
      running = false;
      await Promise.all(workers);

      expect(main.child.exitCode, 'the data plane is still running').to.equal(null);
      const failures = statuses.filter((s) => s.status >= 500 && s.status !== 503);
      expect(failures, 'no 5xx other than 503').to.deep.equal([]);
      expect(statuses.filter((s) => s.status === -1), 'no connection failures').to.deep.equal([]);
      const outage = statuses.filter((s) => s.phase === 'outage');
      expect(outage.filter((s) => s.status === 503).length, 'requests during the outage were answered 503').to.be.greaterThan(10);
      for (const s of outage.filter((x) => x.status === 503)) expect(s.retryAfter, `Retry-After on ${s.code}`).to.match(/^\d+$/);
      expect(outage.filter((s) => s.status === 202).length, 'ASYNC writes were still accepted during the outage').to.be.greaterThan(0);
      expect(statuses.filter((s) => s.phase === 'after' && s.status === 201).length, 'writes succeed again').to.be.greaterThan(0);

      // Every acknowledged write is readable, the ASYNC ones once their retries landed.
      const missing = async () => {
        const left: string[] = [];
        for (const id of acknowledged) if ((await call(url, { ...admin, path: `/demo/demo.Company/${id}` })).status !== 200) left.push(id);
        return left;
      };
      let left = await missing();
      for (let i = 0; i < 40 && left.length; i++) {
        await sleep(500);
        left = await missing();
      }
      expect(left, `acknowledged writes missing (of ${acknowledged.size})`).to.deep.equal([]);
      console.log(`      (${statuses.length} requests, ${outage.length} during the outage, ${acknowledged.size} writes acknowledged, all readable)`);

      main.child.kill('SIGTERM');
      expect(await main.exited).to.equal(0);
    } finally {
      if (main.child.exitCode === null) main.child.kill('SIGKILL');
      await db.stop().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
