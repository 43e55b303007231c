/**
 * Sessions against the Snowflake test peer: key-pair and password logins from the Secret, a
 * rotated Secret taken without a restart, a warehouse that is down answered as `unavailable`
 * (503) and recovered from once it is back, and pools per warehouse and role.
 */
import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import pino from 'pino';
import { suiteDataset } from '../../../test-support/driver-suite.js';
import { StoreError } from '../../engine/contract.js';
import { SnowflakeDriver } from './driver.js';
import { sharedSnowflakePeer, warehouseLocation, warehouseSecrets } from '../../../test-support/snowflake-peer.js';
import { SNOWFLAKE_FORMAT } from './table-format.js';
import { dataPlaneSettings } from '../../../../model/settings/dataplane.js';

const logger = pino({ level: 'silent' });
const storeFailure = async (promise: Promise<unknown>) => {
  try {
    await promise;
  } catch (err) {
    if (err instanceof StoreError) return err.failure;
    throw err;
  }
  throw new Error('expected a StoreError');
};

/** A TCP relay to the peer that can be taken down (connections refused, open ones cut) and brought back. */
async function relay(port: number): Promise<{ url: string; down(): Promise<void>; up(): Promise<void>; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let listenPort = 0;
  const up = () =>
    new Promise<void>((resolve) => {
      server = createServer((socket) => {
        const upstream = connect(port, '127.0.0.1');
        for (const s of [socket, upstream]) {
          sockets.add(s);
          s.on('close', () => sockets.delete(s));
          s.on('error', () => undefined);
        }
        socket.pipe(upstream).pipe(socket);
      });
      server.listen(listenPort, '127.0.0.1', () => {
        listenPort = (server!.address() as { port: number }).port;
        resolve();
      });
    });
  const down = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server ? server.close(() => resolve()) : resolve();
      server = undefined;
    });
  await up();
  return { url: `http://127.0.0.1:${listenPort}`, up, down, close: down };
}

describe('warehouse sessions (snowflake-sdk against the test peer)', function () {
  this.timeout(60_000);

  it('logs in with a key pair (SNOWFLAKE_JWT), an encrypted key with its passphrase too', async () => {
    const peer = await sharedSnowflakePeer();
    const location = await warehouseLocation({ name: 'sf-login', key: 'login' });
    for (const [user, encrypted] of [['KEY_USER', false], ['KEY_USER_ENC', true]] as const) {
      const { publicKey, privateKey } = generateKeyPairSync('rsa', {
        modulusLength: 2048,
        publicKeyEncoding: { type: 'spki', format: 'pem' },
        privateKeyEncoding: encrypted ? { type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'secret phrase' } : { type: 'pkcs8', format: 'pem' },
      });
      peer.registerPublicKey(user, publicKey);
      const secrets = warehouseSecrets({ username: user, privateKey, ...(encrypted ? { passphrase: 'secret phrase' } : {}) });
      const driver = new SnowflakeDriver({ logger, settings: dataPlaneSettings({ DAS_SECRETS_DIR: secrets.dir }), format: SNOWFLAKE_FORMAT });
      try {
        const dataset = suiteDataset('snowflake', location);
        expect((await driver.prepare(dataset)).refused).to.deep.equal([]);
        const [created] = await driver.write(dataset, [{ op: 'create', schema: 'suite.Company', id: user, data: { name: user } }], 'ATOMIC');
        expect(created.ok, user).to.equal(true);
      } finally {
        await driver.close();
      }
    }
  });

  it('a wrong password is a 503 (unavailable); the rotated Secret is used without a restart', async () => {
    const secrets = warehouseSecrets({ username: 'das', password: 'wrong' });
    const driver = new SnowflakeDriver({ logger, settings: dataPlaneSettings({ DAS_SECRETS_DIR: secrets.dir }), format: SNOWFLAKE_FORMAT });
    try {
      const dataset = suiteDataset('snowflake', await warehouseLocation(secrets.ref));
      const failure = await storeFailure(driver.prepare(dataset));
      expect(failure).to.deep.include({ kind: 'unavailable' });
      expect(failure.kind === 'unavailable' && failure.detail).to.match(/login failed \(390100\)/).and.not.include('wrong');
      writeFileSync(join(secrets.dir, secrets.ref.name, secrets.ref.key), JSON.stringify({ username: 'das', password: 'das' }));
      // The Secret file is read again at most every 2 s.
      await new Promise((r) => setTimeout(r, 2100));
      expect((await driver.prepare(dataset)).refused).to.deep.equal([]);
    } finally {
      await driver.close();
    }
  });

  it('a missing or malformed Secret is a 503 naming the problem, never the secret', async () => {
    const secrets = warehouseSecrets();
    const driver = new SnowflakeDriver({ logger, settings: dataPlaneSettings({ DAS_SECRETS_DIR: secrets.dir }), format: SNOWFLAKE_FORMAT });
    try {
      const missing = suiteDataset('snowflake', await warehouseLocation({ name: 'nowhere', key: 'login' }));
      expect(await storeFailure(driver.read(missing, { schema: 'suite.Company', id: 'x' }))).to.deep.include({ kind: 'unavailable' });
      writeFileSync(join(secrets.dir, secrets.ref.name, secrets.ref.key), '{"username": "das", "pass": "hunter2"}');
      const failure = await storeFailure(driver.read(suiteDataset('snowflake', await warehouseLocation(secrets.ref)), { schema: 'suite.Company', id: 'x' }));
      expect(failure.kind === 'unavailable' && failure.detail).to.include('neither a "privateKey"').and.not.include('hunter2');
    } finally {
      await driver.close();
    }
  });

  it('a warehouse that is down is `unavailable` (503) in seconds, and the driver recovers once it is back', async () => {
    const peer = await sharedSnowflakePeer();
    const gate = await relay(peer.port);
    const secrets = warehouseSecrets();
    const driver = new SnowflakeDriver({ logger, settings: dataPlaneSettings({ DAS_SECRETS_DIR: secrets.dir }), format: SNOWFLAKE_FORMAT });
    try {
      const dataset = suiteDataset('snowflake', await warehouseLocation(secrets.ref, { accessUrl: gate.url }));
      await driver.prepare(dataset);
      expect((await driver.write(dataset, [{ op: 'create', schema: 'suite.Company', id: 'before', data: { name: 'B' } }], 'ATOMIC'))[0].ok).to.equal(true);
      await gate.down();
      const started = Date.now();
      expect(await storeFailure(driver.read(dataset, { schema: 'suite.Company', id: 'before' }))).to.deep.include({ kind: 'unavailable' });
      expect(await storeFailure(driver.write(dataset, [{ op: 'create', schema: 'suite.Company', id: 'during', data: {} }], 'ATOMIC'))).to.deep.include({ kind: 'unavailable' });
      // Weaker levels report it per op.
      const [quorum] = await driver.write(dataset, [{ op: 'create', schema: 'suite.Company', id: 'during', data: {} }], 'QUORUM');
      expect(!quorum.ok && quorum.failure.kind).to.equal('unavailable');
      expect(Date.now() - started, 'answered in seconds').to.be.below(20_000);
      await gate.up();
      expect((await driver.read(dataset, { schema: 'suite.Company', id: 'before' }))?.data).to.deep.equal({ name: 'B' });
    } finally {
      await driver.close();
      await gate.close();
    }
  });

  it('pools sessions per warehouse: the executor\'s warehouse is in force without USE WAREHOUSE', async () => {
    const peer = await sharedSnowflakePeer();
    const secrets = warehouseSecrets();
    const driver = new SnowflakeDriver({ logger, settings: dataPlaneSettings({ DAS_SECRETS_DIR: secrets.dir }), format: SNOWFLAKE_FORMAT });
    try {
      const dataset = suiteDataset('snowflake', await warehouseLocation(secrets.ref));
      await driver.prepare(dataset);
      peer.clearQueries();
      await driver.read(dataset, { schema: 'suite.Company', id: 'x' }, { warehouse: 'BIG_WH' });
      await driver.read(dataset, { schema: 'suite.Company', id: 'x' });
      await driver.read(dataset, { schema: 'suite.Company', id: 'x' }, { warehouse: 'BIG_WH' });
      const log = peer.queries().filter((q) => q.database === dataset.location.database);
      expect(log.map((q) => q.warehouse)).to.deep.equal(['BIG_WH', 'WH_DEFAULT', 'BIG_WH']);
      expect(log.filter((q) => /^USE /i.test(q.sqlText))).to.deep.equal([]);
      expect(log[0].sessionId).to.equal(log[2].sessionId);
      expect(log[1].sessionId).not.to.equal(log[0].sessionId);
    } finally {
      await driver.close();
    }
  });
});
