/**
 * Issue 28, finding 7, through `npm start` (dataplane/src/main.ts on its embedded PostgreSQL): a
 * dataset deleted with deletionPolicy Retain leaves its data and its ownership marker in the
 * storage; a new dataset on that storage is refused (409 STORAGE_RETAINED naming the old one)
 * unless it adopts it (`spec.adopt`); a manifest doing the same is not served and /readyz names
 * the old dataset.
 */
import { expect } from 'chai';
import { chmodSync, cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort } from '../src/db/embedded.js';
import { EXAMPLES_DIR } from '../test-support/dataplane.js';
import { client } from '../test-support/http.js';
import { startMain, waitReady, type MainProcess } from '../test-support/main-process.js';

describe('administrative API: retained storage has an owner (npm start, PostgreSQL)', function () {
  this.timeout(180_000);
  let main: MainProcess;
  let url: string;
  let manifests: string;
  let admin: ReturnType<typeof client>;
  const as = (principal: string) => client(url, { host: 'iam.localhost', headers: { authorization: `Proxy ${principal}` } });
  const spec = (principal: string, extra: Record<string, unknown> = {}) => ({
    environment: 'local',
    location: { kind: 'postgres', databaseSchema: 'retained_s' },
    auth: { iam: { principals: [principal] } },
    schemas: { 'demo.Note': { properties: { text: { type: 'string' } } } },
    ...extra,
  });
  const readiness = async () => (await client(url, {})({ path: '/readyz' })).json;
  const until = async (what: () => Promise<boolean>, label: string) => {
    const deadline = Date.now() + 30_000;
    while (!(await what())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${label}: ${JSON.stringify(await readiness())}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  const status = async (id: string) => (await admin({ path: `/_admin/datasets/${id}` })).json?.status as string | undefined;
  let noteId: string;

  before(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'das-retained-'));
    chmodSync(dataDir, 0o755); // as root, the embedded server runs as the postgres user and must reach it
    manifests = mkdtempSync(join(tmpdir(), 'das-retained-manifests-'));
    cpSync(EXAMPLES_DIR, manifests, { recursive: true });
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    main = startMain({ DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', DAS_MANIFESTS: manifests });
    await waitReady(url, main, 150_000);
    admin = client(url, { host: 'iam.localhost', headers: { authorization: 'Proxy demo-admin' } });
  });

  after(async () => {
    if (main && main.child.exitCode === null) {
      main.child.kill('SIGTERM');
      await main.exited;
    }
  });

  it('team-a\'s dataset writes, is deleted (Retain); mallory\'s dataset on the same storage is refused 409 naming it', async () => {
    const created = await admin({ path: '/_admin/datasets', body: { metadata: { name: 'team-a-notes' }, spec: spec('team-a') } });
    expect(created.status, created.text).to.equal(201);
    await until(async () => (await status('team-a-notes')) === 'ready', 'team-a-notes to be served');
    const note = await as('team-a')({ path: '/team-a-notes', body: { create: { schema: 'demo.Note', data: { text: 'team-a secret' } } } });
    expect(note.status, note.text).to.equal(201);
    noteId = note.json.id;
    expect((await admin({ path: '/_admin/datasets/team-a-notes', method: 'DELETE' })).status).to.equal(200);
    await until(async () => (await admin({ path: '/_admin/datasets/team-a-notes' })).status === 404, 'team-a-notes to be gone');

    const claim = await admin({ path: '/_admin/datasets', body: { metadata: { name: 'mallory-notes' }, spec: spec('mallory') } });
    expect(claim.status, claim.text).to.equal(409);
    expect(claim.json.error.code).to.equal('STORAGE_RETAINED');
    expect(claim.json.error.message).to.contain('dataset "team-a-notes"').and.contain('spec.adopt');
    expect(claim.json.error.details[0]).to.include({ path: '$.spec.adopt', dataset: 'team-a-notes' });
    expect((await admin({ path: '/_admin/datasets/mallory-notes' })).status).to.equal(404);
    expect((await as('mallory')({ path: `/mallory-notes/demo.Note/${noteId}` })).status).to.equal(404);

    const wrong = await admin({ path: '/_admin/datasets', body: { metadata: { name: 'mallory-notes' }, spec: spec('mallory', { adopt: 'someone-else' }) } });
    expect([wrong.status, wrong.json.error.code]).to.deep.equal([409, 'STORAGE_RETAINED']);
    expect(wrong.json.error.message).to.contain('"team-a-notes"').and.contain('"someone-else"');
  });

  it('adopt: "<old dataset>" takes the retained data over explicitly; the storage then belongs to the adopter', async () => {
    const adopted = await admin({ path: '/_admin/datasets', body: { metadata: { name: 'team-b-notes' }, spec: spec('team-b', { adopt: 'team-a-notes' }) } });
    expect(adopted.status, adopted.text).to.equal(201);
    await until(async () => (await status('team-b-notes')) === 'ready', 'team-b-notes to be served');
    const read = await as('team-b')({ path: `/team-b-notes/demo.Note/${noteId}` });
    expect(read.status, read.text).to.equal(200);
    expect(read.json.text).to.equal('team-a secret');
    // Deleted in turn, the storage now names team-b-notes, whatever an adopter of team-a-notes says.
    expect((await admin({ path: '/_admin/datasets/team-b-notes', method: 'DELETE' })).status).to.equal(200);
    await until(async () => (await admin({ path: '/_admin/datasets/team-b-notes' })).status === 404, 'team-b-notes to be gone');
    const stale = await admin({ path: '/_admin/datasets', body: { metadata: { name: 'late-notes' }, spec: spec('mallory', { adopt: 'team-a-notes' }) } });
    expect([stale.status, stale.json.error.code]).to.deep.equal([409, 'STORAGE_RETAINED']);
    expect(stale.json.error.message).to.contain('dataset "team-b-notes"');
  });

  it('a manifest on that storage without adopt is not served: /readyz names the old dataset; the data stays unread', async () => {
    writeFileSync(join(manifests, 'dataset-sneaky.yaml'), stringify({ apiVersion: 'dataaccess.dev/v1alpha1', kind: 'Dataset', metadata: { name: 'sneaky' }, spec: spec('mallory') }));
    await until(async () => (await status('sneaky')) === 'failed', 'sneaky to be refused');
    const problem = (await admin({ path: '/_admin/datasets/sneaky' })).json.problem as string;
    expect(problem).to.contain('dataset "team-b-notes"').and.contain('spec.adopt: "team-b-notes"');
    const ready = await readiness();
    expect(ready.status).to.equal('degraded');
    expect(ready.degraded).to.include('sneaky');
    expect(ready.datasets.sneaky.problem).to.contain('dataset "team-b-notes"');
    // One clear log line, at error, naming both datasets. It comes down the child's stdout, which
    // need not have arrived when the refusal shows over HTTP: wait for it.
    let logged: string[] = [];
    await until(async () => (logged = main.output().split('\n').filter((line) => line.includes('retained data') && line.includes('"sneaky"'))).length > 0, 'the refusal\'s log line');
    expect(JSON.parse(logged[0])).to.include({ level: 50, dataset: 'sneaky', owner: 'team-b-notes', msg: 'storage holds another dataset\'s retained data' });
    const read = await as('mallory')({ path: `/sneaky/demo.Note/${noteId}` });
    expect(read.status).to.be.within(400, 599);
    expect(read.text).to.not.contain('team-a secret');
  });
});
