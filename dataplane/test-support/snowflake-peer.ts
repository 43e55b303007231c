/**
 * The warehouse driver against the Snowflake TEST PEER (e2e/peers/snowflake): one peer per test
 * process on 127.0.0.1, backed by the test PostgreSQL; each call gets its own database, and a
 * Secret directory laid out as the operator mounts it (`<dir>/<name>/<key>` holding the login JSON).
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pino from 'pino';
import { startSnowflakeTestPeer, type SnowflakeTestPeerHandle } from '../../e2e/peers/snowflake/peer.js';
import type { DatasetConfig } from '../../model/types.js';
import { testPostgresAdminUrl } from './postgres.js';
import { demoManifestsAt } from './transactions.js';
import { SnowflakeDriver, type SnowflakeDriverOptions } from '../src/drivers/snowflake/driver.js';
import type { TableFormat } from '../src/drivers/snowflake/table-format.js';
import { dataPlaneSettings } from '../../model/settings/dataplane.js';

let shared: Promise<SnowflakeTestPeerHandle> | undefined;
let n = 0;

export function sharedSnowflakePeer(): Promise<SnowflakeTestPeerHandle> {
  shared ??= (async () => {
    const peer = await startSnowflakeTestPeer({ adminUrl: await testPostgresAdminUrl() });
    process.once('exit', () => void peer.stop());
    return peer;
  })();
  return shared;
}

/** A Secret directory with the login JSON as Secret `sf-login`, key `login`. */
export function warehouseSecrets(login: Record<string, unknown> = { username: 'das', password: 'das' }): { dir: string; ref: { name: string; key: string } } {
  const dir = mkdtempSync(join(tmpdir(), 'das-sf-secrets-'));
  mkdirSync(join(dir, 'sf-login'));
  writeFileSync(join(dir, 'sf-login', 'login'), `${JSON.stringify(login)}\n`);
  return { dir, ref: { name: 'sf-login', key: 'login' } };
}

/** `spec.location` fields of a dataset on the shared peer, in a fresh database. */
export async function warehouseLocation(ref: { name: string; key: string }, extra: Partial<DatasetConfig['location']> = {}): Promise<Partial<DatasetConfig['location']>> {
  const peer = await sharedSnowflakePeer();
  return { account: peer.account, accessUrl: peer.url, database: `DB_${process.pid}_${++n}`, warehouse: 'WH_DEFAULT', connectionSecretRef: ref, ...extra };
}

export async function warehouseDriverUnderTest(format: TableFormat, options: Partial<SnowflakeDriverOptions> = {}) {
  const peer = await sharedSnowflakePeer();
  const secrets = warehouseSecrets();
  const driver = new SnowflakeDriver({ logger: pino({ level: 'silent' }), settings: dataPlaneSettings({ DAS_SECRETS_DIR: secrets.dir }), format, ...options });
  return { peer, driver, secrets, location: await warehouseLocation(secrets.ref) };
}

/**
 * examples/warehouse copied for a test: its datasets on `peer`, in databases of their own (the peer
 * is shared by the test process), with a login Secret under the returned secrets directory. Start a
 * data plane on `manifests` with `DAS_SECRETS_DIR: secretsDir`.
 */
export function warehouseExampleManifests(peer: SnowflakeTestPeerHandle, databases: { sales: string; lake: string }): { manifests: string; secretsDir: string } {
  const secrets = warehouseSecrets();
  const manifests = mkdtempSync(join(tmpdir(), 'das-warehouse-manifests-'));
  cpSync(resolve(import.meta.dirname, '../../examples/warehouse'), manifests, { recursive: true });
  for (const [file, from, to] of [
    ['dataset-sales.yaml', 'database: SALES', `database: ${databases.sales}`],
    ['dataset-lake.yaml', 'database: LAKE', `database: ${databases.lake}`],
  ]) {
    const path = join(manifests, file);
    const text = readFileSync(path, 'utf8')
      .replace('accessUrl: http://127.0.0.1:8085', `accessUrl: ${peer.url}`)
      .replace(from, to)
      .replace('{ name: warehouse-login, key: login }', `{ name: ${secrets.ref.name}, key: ${secrets.ref.key} }`);
    if (!text.includes(peer.url) || !text.includes(to)) throw new Error(`examples/warehouse/${file} no longer has the settings this helper replaces`);
    writeFileSync(path, text);
  }
  return { manifests, secretsDir: secrets.dir };
}

/**
 * The demo dataset of transactionManifests() (test-support/transactions.ts) on the peer as `kind`,
 * in a database of its own. Start data planes on `manifests` with `DAS_SECRETS_DIR: secretsDir`.
 */
export async function warehouseDemoManifests(kind: 'snowflake' | 'iceberg'): Promise<{ manifests: string; secretsDir: string; database: string }> {
  const secrets = warehouseSecrets();
  const location = { kind, schema: 'DEMO', ...(await warehouseLocation(secrets.ref)), ...(kind === 'iceberg' ? { externalVolume: 'DEMO_VOLUME', baseLocation: 'das/demo', catalog: 'SNOWFLAKE' } : {}) };
  return { manifests: demoManifestsAt(location), secretsDir: secrets.dir, database: String(location.database) };
}
