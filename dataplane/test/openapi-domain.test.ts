/**
 * Issue 28, finding 6, through `npm start` (dataplane/src/main.ts): with the Environment's
 * `spec.domain` set, the OpenAPI documents' `servers` name the published gateways
 * (`https://iam.<domain>`, `https://public.<domain>`) first and then the listening address —
 * never the request's Host, whatever it says.
 */
import { expect } from 'chai';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { EXAMPLES_DIR } from '../test-support/dataplane.js';
import { call } from '../test-support/http.js';
import { startReadyMain, stopMain, type ReadyMain } from '../test-support/main-process.js';

describe('OpenAPI servers from the Environment\'s spec.domain (npm start)', function () {
  this.timeout(180_000);
  let main: ReadyMain;
  let url: string;

  before(async () => {
    const manifests = mkdtempSync(join(tmpdir(), 'das-domain-manifests-'));
    cpSync(EXAMPLES_DIR, manifests, { recursive: true });
    const file = join(manifests, 'environment.yaml');
    const documents = parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJS());
    documents[0].spec.domain = 'data.example.com';
    writeFileSync(file, documents.map((d) => stringify(d)).join('---\n'));
    main = await startReadyMain({ DAS_MANIFESTS: manifests });
    url = main.url;
  });

  after(() => stopMain(main));

  it('a dataset\'s and the admin API\'s documents name https://iam.<domain> first, then the listening address; a foreign Host changes nothing', async () => {
    const doc = await call(url, { path: '/demo/openapi', host: 'iam.localhost', headers: { authorization: 'Proxy demo-admin' } });
    expect(doc.status, doc.text).to.equal(200);
    const urls = (doc.json.servers as { url: string }[]).map((s) => s.url);
    expect(urls[0]).to.equal('https://iam.data.example.com/demo');
    expect(urls).to.include(`${url}/demo`);
    const foreign = await call(url, { path: '/demo/openapi', host: 'evil.example:1234', headers: { authorization: 'Proxy demo-admin', 'x-forwarded-host': 'evil.example' } });
    expect(foreign.status, foreign.text).to.equal(200);
    expect(foreign.json.servers).to.deep.equal(doc.json.servers);
    expect(foreign.text).not.to.contain('evil.example');
    const admin = await call(url, { path: '/_admin/openapi', host: 'iam.evil.example', headers: { authorization: 'Proxy demo-admin' } });
    expect(admin.status, admin.text).to.equal(200);
    expect(admin.json.servers[0].url).to.equal('https://iam.data.example.com/_admin');
    expect(admin.text).not.to.contain('evil.example');
  });
});
