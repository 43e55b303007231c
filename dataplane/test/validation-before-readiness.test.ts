/**
 * Issue 19, finding 13: a request that can never succeed is refused 400 before the store's
 * readiness is considered, so clients do not retry it. An iceberg dataset whose warehouse cannot
 * be reached (nothing listens at its accessUrl) stays "being prepared": ATOMIC_ALL (refused on
 * open-table locations) and other invalid requests get their 400, a valid one gets 503
 * DATASET_NOT_READY with Retry-After, and nothing crashes.
 */
import { expect } from 'chai';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { freePort } from '../src/db/embedded.js';
import { EXAMPLES_DIR, startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { client } from '../test-support/http.js';

describe('requests are validated before the store\'s readiness (warehouse unreachable)', function () {
  this.timeout(60_000);
  let dp: TestDataPlane;
  let lake: ReturnType<typeof client>;

  before(async () => {
    const manifests = mkdtempSync(join(tmpdir(), 'das-unready-'));
    cpSync(join(EXAMPLES_DIR, 'warehouse'), manifests, { recursive: true });
    rmSync(join(manifests, 'dataset-sales.yaml'));
    // Nothing listens on this port: the warehouse cannot be reached.
    const closed = await freePort();
    const file = join(manifests, 'dataset-lake.yaml');
    const dataset = parse(readFileSync(file, 'utf8'));
    dataset.spec.location.accessUrl = `http://127.0.0.1:${closed}`;
    writeFileSync(file, stringify(dataset));
    const dataDir = mkdtempSync(join(tmpdir(), 'das-unready-data-'));
    mkdirSync(join(dataDir, 'secrets', 'warehouse-login'), { recursive: true });
    writeFileSync(join(dataDir, 'secrets', 'warehouse-login', 'login'), JSON.stringify({ username: 'das', password: 'das' }));
    dp = await startTestDataPlane({ manifests, dataDir, env: { SNOWFLAKE_DISABLE_PLATFORM_DETECTION: 'true' } });
    lake = client(dp.url, { host: 'iam.localhost', headers: { authorization: 'Proxy lake-admin' } });
  });
  after(async () => dp?.stop());

  it('the dataset is being prepared (its store unreachable)', async () => {
    const state = dp.dataPlane.store.dataset('lake');
    expect(state?.status).to.equal('pending');
    const valid = await lake({ path: '/lake', body: { create: { schema: 'lake.Device', data: { name: 'probe-1' } } } });
    expect(valid.status, valid.text).to.equal(503);
    expect(valid.json.error.code).to.equal('DATASET_NOT_READY');
    expect(valid.headers['retry-after']).to.not.equal(undefined);
  });

  it('ATOMIC_ALL on the iceberg dataset: 400 naming the field, as when the warehouse is up', async () => {
    const single = await lake({ path: '/lake', body: { create: { schema: 'lake.Device', data: { name: 'x' }, consistency: 'ATOMIC_ALL' } } });
    expect(single.status, single.text).to.equal(400);
    expect(single.json.error.code).to.equal('CONSISTENCY_NOT_SUPPORTED');
    expect(single.json.error.details[0].path).to.equal('$.create.consistency');
    const batch = await lake({
      path: '/lake',
      body: { batch: { actions: { a: { create: { schema: 'lake.Device', data: { name: 'a' }, consistency: 'ATOMIC_ALL' } }, b: { create: { schema: 'lake.Reading', data: { celsius: 1 } } } } } },
    });
    expect(batch.status, batch.text).to.equal(400);
    expect(batch.json.error.code).to.equal('CONSISTENCY_NOT_SUPPORTED');
  });

  it('other requests that cannot succeed: an unknown schema, a wrong property type, an unknown link to expand', async () => {
    const unknownSchema = await lake({ path: '/lake', body: { create: { schema: 'lake.Nothing', data: {} } } });
    expect(unknownSchema.status, unknownSchema.text).to.equal(404);
    expect(unknownSchema.json.error.code).to.equal('SCHEMA_NOT_FOUND');
    const wrongType = await lake({ path: '/lake', body: { create: { schema: 'lake.Reading', data: { celsius: 'warm' } } } });
    expect(wrongType.status, wrongType.text).to.equal(400);
    expect(JSON.stringify(wrongType.json.error.details)).to.contain('celsius');
    const expand = await lake({ path: '/lake', body: { create: { schema: 'lake.Reading', data: { celsius: 1 }, expand: ['nope'] } } });
    expect(expand.status, expand.text).to.equal(400);
    // Reads go to the store: 503 until it is reachable.
    const read = await lake({ path: '/lake/lake.Device/some-id' });
    expect(read.status).to.equal(503);
    expect(read.json.error.code).to.equal('DATASET_NOT_READY');
  });

  it('raw SQL that can never run: 400 naming the problem; SQL that could: 503', async () => {
    const alias = await lake({ path: '/lake/raw-query', body: { sql: 'SELECT @{x.name} FROM @{d}', using: { d: 'lake.Device' } } });
    expect(alias.status, alias.text).to.equal(400);
    const unknown = await lake({ path: '/lake/raw-query', body: { sql: 'SELECT 1 FROM @{d}', using: { d: 'lake.Nothing' } } });
    expect(unknown.status, unknown.text).to.be.within(400, 404);
    const valid = await lake({ path: '/lake/raw-query', body: { sql: 'SELECT @{d.name} FROM @{d}', using: { d: 'lake.Device' } } });
    expect(valid.status, valid.text).to.equal(503);
    expect(valid.json.error.code).to.equal('DATASET_NOT_READY');
  });

  it('a bulk load that can never run: 400; one that could: 503', async () => {
    const load = (locationUri: string) => ({ create: { schema: 'Transaction', data: { dataset: { id: 'lake' }, actions: [{ locationUri, operation: 'UPSERT', format: 'NDJSON', schema: 'lake.Device' }] } } });
    const ftp = await lake({ path: '/lake', body: load('ftp://example/x.ndjson') });
    expect(ftp.status, ftp.text).to.equal(400);
    const outside = await lake({ path: '/lake', body: load('file:///etc/passwd') });
    expect(outside.status, outside.text).to.equal(400);
    const valid = await lake({ path: '/lake', body: load('s3://bucket/devices.ndjson') });
    expect(valid.status, valid.text).to.equal(503);
    expect(valid.json.error.code).to.equal('DATASET_NOT_READY');
  });

  it('the data plane is alive and still retrying the preparation', async () => {
    expect((await client(dp.url, {})({ path: '/healthz' })).status).to.equal(200);
    expect(dp.dataPlane.store.dataset('lake')?.status).to.equal('pending');
  });
});
