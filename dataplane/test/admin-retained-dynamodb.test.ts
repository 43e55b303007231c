/**
 * Issue 28, finding 7, on DynamoDB through `npm start` (dataplane/src/main.ts) and DynamoDB Local:
 * table names are `<tablePrefix><dataset>_<schema>`, so a dataset deleted with Retain leaves
 * tables another dataset reaches by spelling the same names (prefix `…a-` with id `b-c`, prefix
 * `…a-b-` with id `c`). The admin API refuses that one 409 STORAGE_RETAINED naming the old
 * dataset, unless it adopts it; adopting reads the old records.
 */
import { expect } from 'chai';
import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXAMPLES_DIR } from '../test-support/dataplane.js';
import { dynamoDbLocation, dynamoDbSecrets } from '../test-support/dynamodb.js';
import { client } from '../test-support/http.js';
import { startReadyMain, stopMain, type ReadyMain } from '../test-support/main-process.js';

describe('administrative API: retained DynamoDB tables have an owner (npm start, DynamoDB Local)', function () {
  this.timeout(240_000);
  let main: ReadyMain;
  let url: string;
  let admin: ReturnType<typeof client>;
  let location: Awaited<ReturnType<typeof dynamoDbLocation>>;
  const as = (principal: string) => client(url, { host: 'iam.localhost', headers: { authorization: `Proxy ${principal}` } });
  const spec = (principal: string, tablePrefix: string, extra: Record<string, unknown> = {}) => ({
    environment: 'local',
    location: { kind: 'dynamodb', ...location, tablePrefix: `${location.tablePrefix}${tablePrefix}` },
    auth: { iam: { principals: [principal] } },
    schemas: { 'demo.Note': { properties: { text: { type: 'string' } } } },
    ...extra,
  });
  const until = async (what: () => Promise<boolean>, label: string) => {
    const deadline = Date.now() + 120_000;
    while (!(await what())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${label}: ${main.output().slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  const status = async (id: string) => (await admin({ path: `/_admin/datasets/${id}` })).json?.status as string | undefined;

  before(async () => {
    const secrets = await dynamoDbSecrets();
    location = await dynamoDbLocation(secrets.name);
    const manifests = mkdtempSync(join(tmpdir(), 'das-retained-ddb-manifests-'));
    cpSync(EXAMPLES_DIR, manifests, { recursive: true });
    main = await startReadyMain({ DAS_MANIFESTS: manifests, DAS_SECRETS_DIR: secrets.dir, DAS_ADMIN_ALLOWED_ENDPOINTS: new URL(location.endpoint).origin });
    url = main.url;
    admin = client(url, { host: 'iam.localhost', headers: { authorization: 'Proxy demo-admin' } });
  });

  after(() => stopMain(main));

  it('b-c (prefix a-) writes and is deleted (Retain); c with prefix a-b- is refused 409 naming b-c; adopt: "b-c" reads its record', async () => {
    const created = await admin({ path: '/_admin/datasets', body: { metadata: { name: 'b-c' }, spec: spec('team-a', 'a-') } });
    expect(created.status, created.text).to.equal(201);
    await until(async () => (await status('b-c')) === 'ready', 'b-c to be served');
    const note = await as('team-a')({ path: '/b-c', body: { create: { schema: 'demo.Note', data: { text: 'team-a secret' } } } });
    expect(note.status, note.text).to.equal(201);
    expect((await admin({ path: '/_admin/datasets/b-c', method: 'DELETE' })).status).to.equal(200);
    await until(async () => (await admin({ path: '/_admin/datasets/b-c' })).status === 404, 'b-c to be gone');

    const claim = await admin({ path: '/_admin/datasets', body: { metadata: { name: 'c' }, spec: spec('mallory', 'a-b-') } });
    expect(claim.status, claim.text).to.equal(409);
    expect(claim.json.error.code).to.equal('STORAGE_RETAINED');
    expect(claim.json.error.message).to.contain('dataset "b-c"');
    expect(claim.json.error.details[0]).to.include({ path: '$.spec.adopt', dataset: 'b-c' });
    expect((await as('mallory')({ path: `/c/demo.Note/${note.json.id}` })).status).to.equal(404);

    const adopted = await admin({ path: '/_admin/datasets', body: { metadata: { name: 'c' }, spec: spec('team-b', 'a-b-', { adopt: 'b-c' }) } });
    expect(adopted.status, adopted.text).to.equal(201);
    await until(async () => (await status('c')) === 'ready', 'c to be served');
    const read = await as('team-b')({ path: `/c/demo.Note/${note.json.id}` });
    expect(read.status, read.text).to.equal(200);
    expect(read.json.text).to.equal('team-a secret');
  });
});
