/**
 * Connection Secrets as files (`<DAS_SECRETS_DIR>/<name>/<key>`, as the operator mounts them): a
 * dataset is served from the database its file names, a rewritten file reaches new connections
 * without a restart, a missing file fails that dataset clearly, and a Secret named with `-` works
 * through the real `npm start` (which runs through sh, dash here, where `DAS_SECRET_orders-db_url`
 * variables were lost).
 */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { renderDatasetConfig } from '../../model/render.js';
import { SECRET_RECHECK_MS, secretFilePath } from '../../model/secrets.js';
import type { DatasetConfig, DatasetResource } from '../../model/types.js';
import { freePort } from '../src/db/embedded.js';
import { ConnectionUrls, POOL_RETIRE_CHECK_MS, SecretNotMountedError } from '../src/drivers/postgres/connection.js';
import { PostgresDriver } from '../src/drivers/postgres/driver.js';
import { tableLayout } from '../src/drivers/postgres/sql.js';
import { EXAMPLES_DIR, startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { call, client } from '../test-support/http.js';
import { freshDatabase } from '../test-support/postgres.js';
import { dataPlaneSettings, secretsDirOf } from '../../model/settings/dataplane.js';

const ROOT = resolve(import.meta.dirname, '../..');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function ordersDataset(name: string, secret: { name: string; key: string }): DatasetResource {
  return {
    apiVersion: 'dataaccess.dev/v1alpha1',
    kind: 'Dataset',
    metadata: { name },
    spec: {
      environment: 'local',
      // Each its own schema: two datasets may not share one, whatever their connections (model/storage.ts).
      location: { kind: 'postgres', databaseSchema: name, connectionSecretRef: secret },
      auth: { iam: { principals: ['orders-admin'] } },
      caller: { super: ['orders-admin'] },
      schemas: { 'orders.Order': { properties: { total: { type: 'number' } } } },
    },
  } as DatasetResource;
}

/** A manifests directory: the example Environment plus these Datasets. */
function manifests(...datasets: DatasetResource[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'das-secret-manifests-'));
  writeFileSync(join(dir, 'environment.yaml'), readFileSync(join(EXAMPLES_DIR, 'environment.yaml'), 'utf8'));
  datasets.forEach((d, i) => writeFileSync(join(dir, `dataset-${i}.yaml`), JSON.stringify(d)));
  return dir;
}

/** Writes a Secret file as the kubelet exposes one: `<root>/<name>/<key>`. */
function writeSecret(root: string, ref: { name: string; key: string }, value: string): void {
  mkdirSync(join(root, ref.name), { recursive: true });
  writeFileSync(secretFilePath(root, ref), value);
}

/** Rows of the orders table in one database. */
async function ordersIn(url: string, config: DatasetConfig): Promise<number> {
  const layout = tableLayout(config, 'orders.Order', config.schemas['orders.Order']);
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    return Number((await db.query(`SELECT count(*) AS n FROM ${layout.table}`)).rows[0].n);
  } finally {
    await db.end();
  }
}

async function sessionsOf(url: string): Promise<number> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    const name = new URL(url).pathname.slice(1);
    return Number((await db.query("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = 'data-access'", [name])).rows[0].n);
  } finally {
    await db.end();
  }
}

const ORDERS_DB = { name: 'orders-db', key: 'url' };
const asAdmin = (url: string) => client(url, { host: 'iam.localhost', headers: { authorization: 'Proxy orders-admin' } });

describe('connection Secrets as files', function () {
  this.timeout(60000);

  describe('ConnectionUrls (unit)', () => {
    const dataset = (ref: { name: string; key: string }) => renderDatasetConfig(ordersDataset('d', ref));

    it('DAS_SECRETS_DIR, else DATA_DIR/secrets, else .data/secrets, resolved against the working directory', () => {
      expect(secretsDirOf(dataPlaneSettings({ DAS_SECRETS_DIR: '/var/run/dataaccess/secrets' }))).to.equal('/var/run/dataaccess/secrets');
      expect(secretsDirOf(dataPlaneSettings({ DATA_DIR: '/srv/das' }))).to.equal('/srv/das/secrets');
      expect(secretsDirOf(dataPlaneSettings({}))).to.equal(resolve('.data/secrets'));
    });

    it('refuses a name or key that is not one path segment, whatever the model let through', () => {
      const urls = new ConnectionUrls(dataPlaneSettings({ DAS_SECRETS_DIR: mkdtempSync(join(tmpdir(), 'das-secrets-')) }));
      for (const ref of [{ name: '..', key: 'url' }, { name: 'db', key: '..' }, { name: 'db', key: 'a/b' }, { name: 'a/..', key: 'url' }, { name: 'db', key: 'u\0rl' }, { name: '.', key: 'url' }]) {
        const base = dataset(ORDERS_DB);
        const config = { ...base, location: { ...base.location, connectionSecretRef: ref } };
        expect(() => urls.urlFor(config), JSON.stringify(ref)).to.throw(SecretNotMountedError, /cannot be read: the name or key/);
      }
    });

    it('a missing file names the Secret, the key and the file expected', () => {
      const root = mkdtempSync(join(tmpdir(), 'das-secrets-'));
      const urls = new ConnectionUrls(dataPlaneSettings({ DAS_SECRETS_DIR: root }));
      expect(() => urls.urlFor(dataset(ORDERS_DB))).to.throw(SecretNotMountedError, `secret orders-db/url is not mounted: expected file ${root}/orders-db/url`);
    });

    it('reads the file again once SECRET_RECHECK_MS has passed, not before; a trailing newline is not part of the URL', () => {
      const root = mkdtempSync(join(tmpdir(), 'das-secrets-'));
      let now = 1_000_000;
      const urls = new ConnectionUrls(dataPlaneSettings({ DAS_SECRETS_DIR: root }), SECRET_RECHECK_MS, () => now);
      writeSecret(root, ORDERS_DB, 'postgres://a@h/one\n');
      expect(urls.urlFor(dataset(ORDERS_DB))).to.equal('postgres://a@h/one');
      writeSecret(root, ORDERS_DB, 'postgres://a@h/two');
      now += SECRET_RECHECK_MS - 1;
      expect(urls.urlFor(dataset(ORDERS_DB))).to.equal('postgres://a@h/one');
      now += 1;
      expect(urls.urlFor(dataset(ORDERS_DB))).to.equal('postgres://a@h/two');
    });

    it('an empty file is refused, naming the file', () => {
      const root = mkdtempSync(join(tmpdir(), 'das-secrets-'));
      writeSecret(root, ORDERS_DB, '\n');
      expect(() => new ConnectionUrls(dataPlaneSettings({ DAS_SECRETS_DIR: root })).urlFor(dataset(ORDERS_DB))).to.throw(SecretNotMountedError, /secret orders-db\/url is empty/);
    });
  });

  describe('a data plane (in process, real PostgreSQL)', () => {
    let dp: TestDataPlane;
    let secretsDir: string;
    let first: string;
    let second: string;

    before(async () => {
      [first, second] = [await freshDatabase('secret_a'), await freshDatabase('secret_b')];
      secretsDir = mkdtempSync(join(tmpdir(), 'das-secrets-'));
      writeSecret(secretsDir, ORDERS_DB, `${first}\n`);
      dp = await startTestDataPlane({
        manifests: manifests(ordersDataset('orders', ORDERS_DB), ordersDataset('ghost', { name: 'ghost-db', key: 'url' })),
        env: { DAS_SECRETS_DIR: secretsDir },
      });
    });
    after(async () => dp?.stop());

    it('serves the dataset from the database its Secret file names (not the default database)', async () => {
      const created = await asAdmin(dp.url)({ path: '/orders', body: { create: { schema: 'orders.Order', id: 'o1', data: { total: 5 } } } });
      expect(created.status, created.text).to.equal(201);
      const config = dp.dataPlane.store.dataset('orders')!.config;
      expect(await ordersIn(first, config)).to.equal(1);
      const inDefault = new pg.Client({ connectionString: dp.databaseUrl });
      await inDefault.connect();
      const tables = await inDefault.query("SELECT 1 FROM information_schema.tables WHERE table_schema = 'orders'");
      await inDefault.end();
      expect(tables.rowCount).to.equal(0);
    });

    it('a missing Secret file fails only that dataset, with a 503 naming the Secret and the file', async () => {
      const res = await call(dp.url, { host: 'iam.localhost', headers: { authorization: 'Proxy orders-admin' }, path: '/ghost/orders.Order/x' });
      expect(res.status).to.equal(503);
      expect(res.json.error.code).to.equal('DATASET_UNAVAILABLE');
      expect(res.json.error.message).to.contain(`secret ghost-db/url is not mounted: expected file ${join(secretsDir, 'ghost-db', 'url')}`);
      expect(res.text).not.to.contain('    at '); // no stack trace
    });

    it('/readyz names the missing Secret file for that dataset (not only "pending")', async () => {
      const res = await call(dp.url, { path: '/readyz' });
      expect(res.json.datasets.ghost.status).to.be.oneOf(['pending', 'failed']);
      expect(res.json.datasets.ghost.problem).to.contain(`secret ghost-db/url is not mounted: expected file ${join(secretsDir, 'ghost-db', 'url')}`);
      expect(res.json.datasets.orders).to.deep.include({ status: 'ready' });
    });

    it('a rewritten Secret file reaches new connections without a restart; the old pool is ended', async () => {
      const config = dp.dataPlane.store.dataset('orders')!.config;
      // A rotated URL reaches the same data (new credentials, a new host): here a copy of the
      // tables in a second database, so where a record lands shows which URL was used.
      const preparer = new PostgresDriver({ logger: pino({ level: 'silent' }), settings: dataPlaneSettings({ DATABASE_URL: second }) });
      const { connectionSecretRef: _ref, ...location } = config.location;
      await preparer.prepare({ ...config, location });
      await preparer.close();
      expect(await sessionsOf(first)).to.be.greaterThan(0);

      // As the kubelet does: a new file replaces the old one (atomic swap of the ..data link).
      writeSecret(secretsDir, ORDERS_DB, `${second}\n`);
      await sleep(SECRET_RECHECK_MS + 200);
      const created = await asAdmin(dp.url)({ path: '/orders', body: { create: { schema: 'orders.Order', id: 'o2', data: { total: 7 } } } });
      expect(created.status, created.text).to.equal(201);
      expect(await ordersIn(second, config)).to.equal(1);
      expect(await ordersIn(first, config)).to.equal(1); // only o1, from before
      const read = await asAdmin(dp.url)({ path: '/orders/orders.Order/o1' });
      expect(read.status).to.equal(404); // o1 lives in the first database, no longer used

      // Nothing uses the first URL any more: its pool is ended once idle, closing its sessions.
      for (let i = 0; i < 20 && (await sessionsOf(first)) > 0; i++) await sleep(POOL_RETIRE_CHECK_MS / 2);
      expect(await sessionsOf(first)).to.equal(0);
    });
  });

  describe('npm start (through sh) with a Secret named orders-db', function () {
    this.timeout(120000);
    let child: ChildProcess | undefined;
    let output = '';

    after(async () => {
      if (child?.exitCode === null && child.pid) {
        const exited = new Promise((r) => child!.once('exit', r));
        process.kill(-child.pid, 'SIGTERM'); // the process group this test started: npm, sh, tsx, node
        await exited;
      }
    });

    it('reads DATA_DIR/secrets/orders-db/url and round-trips a record', async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'das-npm-start-'));
      chmodSync(dataDir, 0o755);
      const [databaseUrl, ordersUrl] = [await freshDatabase('default'), await freshDatabase('orders')];
      writeSecret(join(dataDir, 'secrets'), ORDERS_DB, `${ordersUrl}\n`);
      const port = await freePort();
      const env: NodeJS.ProcessEnv = { ...process.env };
      for (const key of ['PGHOST', 'PGDATABASE', 'PGUSER', 'PGPASSWORD', 'PGPORT', 'DAS_SECRETS_DIR', 'DAS_ENVIRONMENT', 'DAS_CONFIG_SOURCE']) delete env[key];
      Object.assign(env, {
        PORT: String(port),
        HOST: '127.0.0.1',
        DATA_DIR: dataDir,
        DAS_MANIFESTS: manifests(ordersDataset('orders', ORDERS_DB)),
        // An external default database, so that no embedded server is started for this test.
        DATABASE_URL: databaseUrl,
        LOG_LEVEL: 'info',
      });
      // `npm` itself, no shell of ours: npm runs the script through sh as a user's `npm start` does.
      child = spawn('npm', ['start'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
      const url = `http://127.0.0.1:${port}`;
      for (let i = 0; ; i++) {
        const ready = await call(url, { path: '/readyz' }).catch(() => undefined);
        if (ready?.status === 200) break;
        if (child.exitCode !== null || i > 300) throw new Error(`npm start did not become ready: ${output}`);
        await sleep(200);
      }
      const created = await asAdmin(url)({ path: '/orders', body: { create: { schema: 'orders.Order', id: 'dash', data: { total: 12.5 } } } });
      expect(created.status, `${created.text}\n${output}`).to.equal(201);
      const read = await asAdmin(url)({ path: '/orders/orders.Order/dash' });
      expect(read.status).to.equal(200);
      expect(read.json).to.deep.include({ id: 'dash', total: 12.5 });
      const config = renderDatasetConfig(ordersDataset('orders', ORDERS_DB));
      expect(await ordersIn(ordersUrl, config)).to.equal(1);
      expect(output).not.to.contain('is not mounted');
    });
  });
});
