/**
 * The data plane's real /metrics (the compiled entry point, as the container runs it, on embedded
 * PostgreSQL) passes `promtool check metrics` after it has answered requests of several kinds, so
 * the labelled series exist. The operator's /metrics gets the same check in e2e/operator/elastic.test.ts.
 */
import { expect } from 'chai';
import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call } from '../../dataplane/test-support/http.js';
import { startMain, waitReady } from '../../dataplane/test-support/main-process.js';
import { freePort } from '../operator/harness.js';
import { promtool } from '../operator/promtool.js';

describe('data plane /metrics: promtool check metrics', function () {
  this.timeout(120_000);

  it('names and types follow Prometheus conventions (no findings at all)', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'das-metrics-'));
    chmodSync(dataDir, 0o755); // as root, the embedded server runs as the postgres user and must reach it
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const main = startMain({ DATA_DIR: dataDir, PORT: String(port) }, 'compiled');
    try {
      await waitReady(url, main);
      const admin = { host: 'iam.localhost', headers: { authorization: 'Proxy demo-admin' } };
      expect((await call(url, { ...admin, path: '/demo', body: { create: { schema: 'demo.Person', id: 'm1', data: { name: 'M', age: 1 } } } })).status).to.equal(201);
      expect((await call(url, { ...admin, path: '/demo/demo.Person/m1' })).status).to.equal(200);
      expect((await call(url, { ...admin, path: '/demo/demo.Person/absent' })).status).to.equal(404);
      const metrics = await call(url, { path: '/metrics' });
      expect(metrics.status).to.equal(200);
      expect(metrics.text).to.match(/^das_http_requests_total\{.*status="404"/m);
      expect(metrics.text).to.match(/^das_http_request_duration_seconds_bucket\{/m);
      expect(metrics.text).to.match(/^das_dataset_paused\{dataset="demo"\} 0$/m);
      const checked = await promtool(['check', 'metrics'], metrics.text);
      expect(checked.code, checked.output).to.equal(0);
      expect(checked.output).to.equal('');
    } finally {
      main.child.kill('SIGTERM');
      await main.exited;
    }
  });
});
