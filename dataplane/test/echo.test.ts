/** The echo endpoint's edge cases: empty headers and query, media types, request ids, anonymous callers. */
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminClient, startTestDataPlane, EXAMPLES_DIR, type TestDataPlane } from '../test-support/dataplane.js';
import { call, client } from '../test-support/http.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A dataset serving anonymous callers; `anonymous` is listed as super to show it never makes one. */
const OPEN_DATASET = `apiVersion: dataaccess.dev/v1alpha1
kind: Dataset
metadata:
  name: open
spec:
  environment: local
  location:
    kind: postgres
    databaseSchema: open
  auth:
    iam:
      principals: [demo-admin]
    public:
      enabled: true
  caller:
    super: [demo-admin, anonymous]
    anon: true
  schemas:
    open.Note:
      properties:
        text: { type: string }
`;

describe('echo endpoint', function () {
  this.timeout(60000);
  let dp: TestDataPlane;
  let echo: ReturnType<typeof client>;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'das-echo-'));
    for (const file of ['environment.yaml', 'dataset-demo.yaml']) copyFileSync(join(EXAMPLES_DIR, file), join(dir, file));
    writeFileSync(join(dir, 'dataset-open.yaml'), OPEN_DATASET);
    dp = await startTestDataPlane({ manifests: dir });
    echo = adminClient(dp);
  });
  after(async () => dp?.stop());

  it('reports empty headers and query when the request carries nothing beyond transport headers', async () => {
    const res = await echo({ path: '/demo/echo' });
    expect(res.status, res.text).to.equal(200);
    expect(res.json).to.deep.equal({
      path: '/demo/echo',
      headers: { empty: true },
      requestId: res.headers['x-request-id'],
      caller: { anon: false, schema: 'iam', id: 'demo-admin', claims: {}, super: true },
      method: 'get',
      query: { empty: true },
      contentType: 'json',
      accept: 'json',
    });
  });

  it('counts an empty query string as an empty query, and a bare parameter as a query', async () => {
    expect((await echo({ path: '/demo/echo?' })).json.query).to.deep.equal({ empty: true });
    expect((await echo({ path: '/demo/echo?flag' })).json.query).to.deep.equal({ empty: false });
  });

  it('reflects a non-JSON Accept and a Content-Type sent on a GET, without counting them as extra headers', async () => {
    const res = await echo({ path: '/demo/echo', headers: { accept: 'text/plain', 'content-type': 'application/xml; charset=utf-8' } });
    expect(res.status, res.text).to.equal(200);
    expect(res.json).to.deep.include({ accept: 'plain', contentType: 'xml', headers: { empty: true } });
    const vendor = await echo({ path: '/demo/echo', headers: { accept: 'application/vnd.api+json, text/html;q=0.5', 'content-type': 'text/csv' } });
    expect(vendor.json).to.include({ accept: 'json', contentType: 'csv' });
    const any = await echo({ path: '/demo/echo', headers: { accept: '*/*' } });
    expect(any.json.accept).to.equal('json');
  });

  it('gives a UUID request id equal to the x-request-id response header', async () => {
    const res = await echo({ path: '/demo/echo' });
    expect(res.json.requestId).to.match(UUID);
    expect(res.json.requestId).to.equal(res.headers['x-request-id']);
    const next = await echo({ path: '/demo/echo' });
    expect(next.json.requestId).to.match(UUID).and.not.equal(res.json.requestId);
  });

  it("echoes the caller's UUID x-request-id, and replaces one that is not a UUID", async () => {
    const mine = randomUUID();
    const res = await echo({ path: '/demo/echo', headers: { 'x-request-id': mine } });
    expect(res.json.requestId).to.equal(mine);
    expect(res.headers['x-request-id']).to.equal(mine);
    const upper = randomUUID();
    expect((await echo({ path: '/demo/echo', headers: { 'x-request-id': upper.toUpperCase() } })).json.requestId).to.equal(upper);
    const bogus = await echo({ path: '/demo/echo', headers: { 'x-request-id': 'not-a-uuid <script>' } });
    expect(bogus.json.requestId).to.match(UUID).and.not.contain('not-a-uuid');
    expect(bogus.headers['x-request-id']).to.equal(bogus.json.requestId);
  });

  for (const gateway of ['iam', 'public'] as const) {
    it(`reports an anonymous caller on a dataset with caller.anon, on the ${gateway} gateway`, async () => {
      const res = await call(dp.url, { host: `${gateway}.localhost`, path: '/open/echo' });
      expect(res.status, res.text).to.equal(200);
      expect(res.json.caller).to.deep.equal({ anon: true, schema: 'anonymous', id: 'anonymous', claims: {}, super: false });
      expect(res.json.headers).to.deep.equal({ empty: true });
    });
  }

  it('still refuses an anonymous caller on a dataset without caller.anon', async () => {
    const res = await call(dp.url, { host: 'public.localhost', path: '/demo/echo' });
    expect(res.status).to.equal(401);
    expect(res.json.error.code).to.equal('MISSING_CREDENTIALS');
  });
});
