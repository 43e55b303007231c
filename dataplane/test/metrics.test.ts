/**
 * GET /metrics on a real data plane: requests counted by dataset, gateway, method and status (a
 * dataset nobody serves never becomes a label), their latency, and bulk loads' rows and outcomes.
 */
import { expect } from 'chai';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { adminClient, startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { transactionManifests, waitForTransaction, type Api } from '../test-support/transactions.js';

/** The value of one series in the Prometheus text, or undefined. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const inside = line.slice(name.length + 1, line.lastIndexOf('}'));
    const parts = inside.split(',');
    if (wanted.every((w) => parts.includes(w)) && parts.length === wanted.length) return Number(line.slice(line.lastIndexOf('}') + 1).trim());
  }
  return undefined;
}

describe('GET /metrics: requests and bulk loads', function () {
  this.timeout(60_000);
  let dp: TestDataPlane;
  let api: Api;
  const metrics = async () => (await api({ path: '/metrics' })).text;

  before(async () => {
    dp = await startTestDataPlane({ manifests: transactionManifests(), env: { DAS_BULK_CHUNK_ROWS: '2', DAS_BULK_POLL_MS: '50' } });
    api = adminClient(dp);
  });
  after(async () => {
    await dp?.stop();
  });

  it('counts requests by dataset, gateway, method and status, with their latency; a made-up dataset is "-"', async () => {
    const created = await api({ path: '/demo', body: { create: { schema: 'demo.Company', id: 'm1', data: { name: 'M' } } } });
    expect(created.status, created.text).to.equal(201);
    for (let i = 0; i < 3; i++) expect((await api({ path: '/demo/demo.Company/m1' })).status).to.equal(200);
    expect((await api({ path: '/demo/demo.Company/nobody' })).status).to.equal(404);
    for (const name of ['made-up-1', 'made-up-2']) expect((await api({ path: `/${name}/demo.Company/m1` })).status).to.equal(404);
    const text = await metrics();
    expect(sample(text, 'das_http_requests_total', { dataset: 'demo', gateway: 'iam', method: 'GET', status: '200' })).to.equal(3);
    expect(sample(text, 'das_http_requests_total', { dataset: 'demo', gateway: 'iam', method: 'GET', status: '404' })).to.equal(1);
    expect(sample(text, 'das_http_requests_total', { dataset: 'demo', gateway: 'iam', method: 'POST', status: '201' })).to.equal(1);
    expect(sample(text, 'das_http_requests_total', { dataset: '-', gateway: 'iam', method: 'GET', status: '404' })).to.equal(2);
    expect(text).not.to.include('made-up');
    expect(sample(text, 'das_http_request_duration_seconds_count', { dataset: 'demo', gateway: 'iam', method: 'GET' })).to.equal(4);
    expect(sample(text, 'das_http_request_duration_seconds_bucket', { dataset: 'demo', gateway: 'iam', method: 'GET', le: '+Inf' })).to.equal(4);
  });

  it('counts a bulk load: rows read, written and refused, and the transaction by status', async () => {
    const imports = join(dp.dataDir, 'imports');
    mkdirSync(imports, { recursive: true });
    // Five rows, one refused by validation (age is not an integer).
    const rows = [1, 2, 3, 4, 5].map((i) => JSON.stringify({ id: `bulk-${i}`, name: `P${i}`, age: i === 3 ? 'old' : i }));
    writeFileSync(join(imports, 'people.ndjson'), rows.join('\n') + '\n');
    const res = await api({
      path: '/demo',
      body: { create: { schema: 'Transaction', data: { actions: [{ locationUri: pathToFileURL(join(imports, 'people.ndjson')).href, operation: 'UPSERT', format: 'NDJSON', schema: 'demo.Person' }] } } },
    });
    expect(res.status, res.text).to.equal(202);
    const done = await waitForTransaction(api, res.json.id);
    expect(done.actions[0]).to.include({ rowsRead: 5, rowsWritten: 4, rowsRejected: 1 });
    const text = await metrics();
    expect(sample(text, 'das_bulk_load_rows_total', { dataset: 'demo', outcome: 'read' })).to.equal(5);
    expect(sample(text, 'das_bulk_load_rows_total', { dataset: 'demo', outcome: 'written' })).to.equal(4);
    expect(sample(text, 'das_bulk_load_rows_total', { dataset: 'demo', outcome: 'rejected' })).to.equal(1);
    expect(sample(text, 'das_bulk_load_transactions_total', { dataset: 'demo', status: 'SUCCEEDED' })).to.equal(1);
    expect(text).to.match(/^das_bulk_load_running 0$/m);
    // The subscriptions' figures are on the same page.
    expect(text).to.match(/^das_subscriptions \d+$/m);
  });
});
