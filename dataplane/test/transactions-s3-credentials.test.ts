/**
 * S3 credentials from the Environment's Secret (spec.bulkLoad.s3.credentialsSecretRef): a real
 * data plane loads from s3rver on 127.0.0.1 through a recording proxy, which shows the key id each
 * request was signed with (the Authorization header's Credential=…) and the session token sent.
 * s3rver refuses key ids it does not know (InvalidAccessKeyId), so a load succeeds only with the
 * key from the Secret's files; the AWS_* variables of the process are set to a key it never sees.
 */
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer, request, type Server } from 'node:http';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { adminClient, startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { parquetFile, transactionManifests, waitForTransaction, type Api } from '../test-support/transactions.js';

/** s3rver's key registry (it accepts only key ids registered there; it does not check V4 signatures). */
const accounts = createRequire(import.meta.url)('s3rver/lib/models/account.js') as { DUMMY_ACCOUNT: { createKeyPair(id: string, secret: string): void; revokeAccessKey(id: string): void } };

interface Seen {
  keyId: string;
  token: string | undefined;
}

/** A plain HTTP proxy to `target` that records who signed each request. */
async function recordingProxy(target: number): Promise<{ server: Server; port: number; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const keyId = /Credential=([^/]+)\//.exec(req.headers.authorization ?? '')?.[1] ?? '(unsigned)';
    seen.push({ keyId, token: req.headers['x-amz-security-token'] as string | undefined });
    const upstream = request({ host: '127.0.0.1', port: target, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, port: (server.address() as { port: number }).port, seen };
}

describe('transactions: S3 credentials from the Environment\'s Secret (s3rver behind a recording proxy)', function () {
  this.timeout(60_000);
  let s3rver: { close(): Promise<void> };
  let proxy: Awaited<ReturnType<typeof recordingProxy>>;
  let dp: TestDataPlane;
  let api: Api;
  const secretsDir = mkdtempSync(join(tmpdir(), 'das-s3-secrets-'));
  const secretDir = join(secretsDir, 's3-loader');
  const keys = ['FROMSECRET1', 'ROTATED2'];

  const writeSecret = (files: Record<string, string>) => {
    rmSync(secretDir, { recursive: true, force: true });
    mkdirSync(secretDir, { recursive: true });
    for (const [key, value] of Object.entries(files)) writeFileSync(join(secretDir, key), `${value}\n`); // a trailing newline, as `kubectl create secret --from-file` often leaves
  };
  const load = async () => {
    const res = await api({ path: '/demo', body: { create: { schema: 'Transaction', data: { actions: [{ locationUri: 's3://loads/people.parquet', operation: 'UPSERT', format: 'PARQUET', schema: 'demo.Person' }] } } } });
    expect(res.status, res.text).to.equal(202);
    return waitForTransaction(api, res.json.id);
  };

  before(async () => {
    for (const id of keys) accounts.DUMMY_ACCOUNT.createKeyPair(id, `${id}-secret`);
    const { default: S3rver } = (await import('s3rver' as string)) as { default: new (o: object) => { run(): Promise<{ port: number }>; close(): Promise<void> } };
    const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: mkdtempSync(join(tmpdir(), 'das-s3-')) });
    const { port } = await server.run();
    s3rver = server;
    const client = new S3Client({ region: 'us-east-1', endpoint: `http://127.0.0.1:${port}`, forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
    await client.send(new CreateBucketCommand({ Bucket: 'loads' }));
    await client.send(new PutObjectCommand({ Bucket: 'loads', Key: 'people.parquet', Body: parquetFile([{ name: 'id', data: ['p1', 'p2'], type: 'STRING' }, { name: 'name', data: ['Ada', 'Bob'], type: 'STRING' }]) }));
    client.destroy();
    proxy = await recordingProxy(port);

    const manifests = transactionManifests();
    const envFile = join(manifests, 'environment.yaml');
    const environment = parse(readFileSync(envFile, 'utf8'));
    environment.spec.bulkLoad = { s3: { endpoint: `http://127.0.0.1:${proxy.port}`, credentialsSecretRef: { name: 's3-loader' } } };
    writeFileSync(envFile, stringify(environment));
    writeSecret({ accessKeyId: 'FROMSECRET1', secretAccessKey: 'FROMSECRET1-secret', sessionToken: 'token-1' });
    dp = await startTestDataPlane({
      manifests,
      // The process's own keys are valid for s3rver: a load that fell back to them would succeed and show S3RVER.
      env: { DAS_SECRETS_DIR: secretsDir, AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', DAS_BULK_POLL_MS: '100' },
    });
    api = adminClient(dp);
  });
  after(async () => {
    await dp?.stop();
    proxy?.server.close();
    await s3rver?.close();
    for (const id of keys) accounts.DUMMY_ACCOUNT.revokeAccessKey(id);
  });

  it('signs every S3 request with the Secret\'s key and sends its session token; the rows load', async () => {
    proxy.seen.length = 0;
    const tx = await load();
    expect(tx.status, JSON.stringify(tx)).to.equal('SUCCEEDED');
    expect(tx.actions[0]).to.include({ rowsRead: 2, rowsWritten: 2 });
    expect(proxy.seen.length).to.be.greaterThan(1); // HEAD, then range GETs of the footer and row group
    expect(proxy.seen).to.deep.equal(proxy.seen.map(() => ({ keyId: 'FROMSECRET1', token: 'token-1' })));
    expect((await api({ path: '/demo/demo.Person/p2' })).json).to.include({ id: 'p2', name: 'Bob' });
  });

  it('a rotated Secret (new files, no session token) is used by the next load without a restart', async () => {
    writeSecret({ accessKeyId: 'ROTATED2', secretAccessKey: 'ROTATED2-secret' });
    proxy.seen.length = 0;
    const tx = await load();
    expect(tx.status, JSON.stringify(tx)).to.equal('SUCCEEDED');
    expect(proxy.seen.length).to.be.greaterThan(1);
    expect(proxy.seen).to.deep.equal(proxy.seen.map(() => ({ keyId: 'ROTATED2', token: undefined })));
  });

  it('a key S3 does not know fails the transaction as forbidden (the Secret is not bypassed)', async () => {
    writeSecret({ accessKeyId: 'NOBODY', secretAccessKey: 'x' });
    proxy.seen.length = 0;
    const tx = await load();
    expect(tx.status).to.equal('FAILED');
    expect(tx.error, JSON.stringify(tx)).to.match(/S3 refused s3:\/\/loads\/people\.parquet: (InvalidAccessKeyId|403 Forbidden)/);
    expect(proxy.seen.map((s) => s.keyId)).to.include('NOBODY').and.not.include('S3RVER');
  });

  it('a Secret that is not mounted fails the transaction naming the file, and sends nothing', async () => {
    rmSync(secretDir, { recursive: true, force: true });
    proxy.seen.length = 0;
    const tx = await load();
    expect(tx.status).to.equal('FAILED');
    expect(tx.error).to.contain(`the S3 credentials secret s3-loader is not mounted or its key accessKeyId is empty: expected file ${join(secretDir, 'accessKeyId')}`);
    expect(proxy.seen).to.deep.equal([]);
  });
});
