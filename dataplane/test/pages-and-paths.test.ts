/**
 * Over HTTP on a real data plane and PostgreSQL: the browser pages and their assets (no
 * credentials needed, a self-only Content-Security-Policy, versioned and long-cached files), the
 * answers for wrong paths (404 where nothing is served, 405 with Allow only where the path exists
 * with other methods), unlabelled hosts (the Authorization scheme picks the gateway) and the
 * admin API's OpenAPI document.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { expect } from 'chai';
import { startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { call } from '../test-support/http.js';
import { componentValidator } from '../test-support/openapi.js';

const ADMIN = { authorization: 'Proxy demo-admin' };
const PROXY = 'Proxy demo-admin';
const BEARER = 'Bearer &#60;token&#62;';
const HTML = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

describe('pages, assets and the answers for wrong paths', function () {
  this.timeout(60_000);
  let dp: TestDataPlane;
  let port: string;

  before(async () => {
    dp = await startTestDataPlane();
    port = new URL(dp.url).port;
    const created = await call(dp.url, { path: '/demo', headers: ADMIN, body: { create: { schema: 'demo.Company', id: 'acme', data: { name: 'Acme' } } } });
    expect(created.status, created.text).to.equal(201);
  });
  after(async () => dp?.stop());

  const scriptsAndStyles = (html: string) => [...html.matchAll(/(?:src|href)="(\/_assets\/[^"]+)"/g)].map((m) => m[1]);

  it('serves Swagger UI and GraphiQL without credentials, on both gateways and a dataset host label, with a self-only CSP', async () => {
    const pages = [
      { host: 'iam.localhost', path: '/demo/docs', data: 'data-openapi="/demo/openapi"', example: PROXY },
      { host: 'public.localhost', path: '/demo/docs', data: 'data-openapi="/demo/openapi"', example: BEARER },
      { host: 'demo.iam.localhost', path: '/docs', data: 'data-openapi="/openapi"', example: PROXY },
      { host: `127.0.0.1:${port}`, path: '/demo/docs', data: 'data-openapi="/demo/openapi"', example: PROXY },
      { host: 'iam.localhost', path: '/demo/graphql', data: 'data-graphql="/demo/graphql"', example: PROXY },
      { host: 'demo.public.localhost', path: '/graphql', data: 'data-graphql="/graphql"', example: BEARER },
      // The administrative API is on the iam gateway only: its page suggests Proxy whatever the host.
      { host: 'public.localhost', path: '/_admin/docs', data: 'data-openapi="/_admin/openapi"', example: PROXY },
    ];
    for (const { host, path, data, example } of pages) {
      const res = await call(dp.url, { path, host, headers: HTML });
      expect(res.status, `${host}${path}: ${res.text.slice(0, 200)}`).to.equal(200);
      expect(res.headers['content-type']).to.equal('text/html; charset=utf-8');
      expect(res.text).to.contain(data);
      // The Authorization the page suggests: the gateway's scheme; the development environment's example principal.
      expect(res.text, `${host}${path}`).to.contain(`data-authorization-example="${example}"`);
      // The admin page on a public host says where the administrative API answers.
      expect(res.text.includes('answers on the iam gateway only: open this page on an iam. host'), `${host}${path}`).to.equal(host === 'public.localhost' && path === '/_admin/docs');
      // Nothing inline to execute, nothing from another origin.
      expect(res.text).to.not.match(/<script(?![^>]*\ssrc=)/);
      expect(res.text).to.not.match(/(?:src|href)="(?:https?:)?\/\//);
      const csp = String(res.headers['content-security-policy']);
      expect(csp).to.contain("default-src 'none'").and.contain("script-src 'self';").and.contain("connect-src 'self' ws://" + host);
      expect(csp).to.not.match(/https?:|\*/);
      expect(res.headers['cache-control']).to.equal('no-store');
    }
    const head = await call(dp.url, { method: 'HEAD', path: '/demo/docs', host: 'iam.localhost' });
    expect(head.status).to.equal(200);
    expect(head.text).to.equal('');
  });

  it('answers the pages the same for a dataset that exists and one that does not (no dataset names without credentials)', async () => {
    for (const [path, headers] of [['docs', {}], ['graphql', HTML]] as const) {
      for (const method of ['GET', 'HEAD', 'PUT', 'DELETE']) {
        const [real, ghost] = await Promise.all(
          ['demo', 'nosuch'].map((name) => call(dp.url, { method, path: `/${name}/${path}`, host: 'iam.localhost', headers })),
        );
        expect(ghost.status, `${method} /nosuch/${path}`).to.equal(real.status);
        expect(ghost.headers.allow).to.equal(real.headers.allow);
        const same = (text: string) => text.replace(/"requestId":"[^"]*"/g, '"requestId":""').replaceAll('nosuch', 'demo');
        expect(same(ghost.text), `${method} /nosuch/${path}`).to.equal(same(real.text));
      }
    }
  });

  it('serves the pages’ files from the npm packages under a versioned path, cached for a year', async () => {
    const page = await call(dp.url, { path: '/demo/graphql', host: 'iam.localhost', headers: HTML });
    const swagger = await call(dp.url, { path: '/demo/docs', host: 'iam.localhost' });
    const assets = [...new Set([...scriptsAndStyles(page.text), ...scriptsAndStyles(swagger.text)])];
    expect(assets.map((a) => a.split('/').at(-1))).to.have.members([
      'graphiql.css', 'pages.css', 'react.js', 'react-dom.js', 'graphiql.js', 'graphql-ws.js', 'graphiql-init.js', 'swagger-ui.css', 'swagger-ui-bundle.js', 'swagger-init.js',
    ]);
    for (const asset of assets) {
      const res = await call(dp.url, { path: asset, host: 'iam.localhost' });
      expect(res.status, asset).to.equal(200);
      expect(res.headers['content-type']).to.match(asset.endsWith('.css') ? /^text\/css/ : /^text\/javascript/);
      expect(res.headers['cache-control']).to.equal('public, max-age=31536000, immutable');
      expect(res.text.length).to.be.greaterThan(100);
    }
    const version = assets[0].split('/')[2];
    for (const path of ['/_assets/0123456789ab/graphiql.js', `/_assets/${version}/package.json`, `/_assets/${version}/../../package.json`, `/_assets/${version}`]) {
      const res = await call(dp.url, { path, host: 'iam.localhost' });
      expect(res.status, path).to.equal(404);
      expect(res.json.error.code).to.equal('NOT_FOUND');
    }
    const post = await call(dp.url, { path: assets[0], host: 'iam.localhost', body: {} });
    expect(post.status).to.equal(405);
    expect(post.headers.allow).to.equal('GET,HEAD');
  });

  it('answers 404 NOT_FOUND for any method on a path that is no endpoint, 405 with Allow only where the path exists', async () => {
    for (const path of ['/docs', '/openapi', '/health', '/nosuch', '/demo/a/b/c/d', '/demo/queries', '/demo/demo.Nothing/1', '/_admin/nothing']) {
      for (const method of ['GET', 'POST', 'PUT', 'DELETE']) {
        const res = await call(dp.url, { method, path, host: 'iam.localhost', headers: ADMIN, ...(method === 'GET' || method === 'DELETE' ? {} : { body: {} }) });
        expect(res.status, `${method} ${path}: ${res.text}`).to.equal(404);
        // GET names what is missing (DATASET_NOT_FOUND, SCHEMA_NOT_FOUND); other methods: NOT_FOUND.
        expect(res.json.error.code, `${method} ${path}`).to.match(/^(|DATASET_|SCHEMA_)NOT_FOUND$/);
        expect(res.json.requestId).to.equal(res.headers['x-request-id']);
      }
    }
    const allowed = [
      { method: 'GET', path: '/demo', allow: 'POST' },
      { method: 'DELETE', path: '/demo/demo.Company/acme', allow: 'GET,HEAD' },
      { method: 'POST', path: '/demo/docs', allow: 'GET,HEAD' },
      { method: 'PUT', path: '/demo/graphql', allow: 'GET,HEAD,POST' },
      { method: 'POST', path: '/demo/openapi', allow: 'GET,HEAD' },
      { method: 'POST', path: '/healthz', allow: 'GET,HEAD' },
      { method: 'DELETE', path: '/readyz', allow: 'GET,HEAD' },
      { method: 'POST', path: '/_admin/docs', allow: 'GET,HEAD' },
      { method: 'DELETE', path: '/_admin/datasets', allow: 'GET,POST' },
      { method: 'GET', path: '/_admin/datasets/demo/pause', allow: 'POST' },
    ];
    for (const { method, path, allow } of allowed) {
      const res = await call(dp.url, { method, path, host: 'iam.localhost', headers: ADMIN });
      expect(res.status, `${method} ${path}: ${res.text}`).to.equal(405);
      expect(res.headers.allow, `${method} ${path}`).to.equal(allow);
      expect(res.json.error.code).to.equal('METHOD_NOT_ALLOWED');
    }
  });

  it('routes an unlabelled host (127.0.0.1) by the Authorization scheme, and its OpenAPI servers are usable as they are', async () => {
    const host = `127.0.0.1:${port}`;
    const iam = await call(dp.url, { path: '/demo/echo', host, headers: ADMIN });
    expect(iam.status, iam.text).to.equal(200);
    expect(iam.json.caller.schema).to.equal('iam');
    const bearer = await call(dp.url, { path: '/demo/echo', host, headers: { authorization: 'Bearer not-a-token' } });
    expect(bearer.status).to.equal(401); // the public gateway checked it as a token
    const doc = await call(dp.url, { path: '/demo/openapi', host, headers: ADMIN });
    // Asked on any host, the first server is the listening address, which a generated client can resolve.
    const labelled = await call(dp.url, { path: '/demo/openapi', host: `iam.localhost:${port}`, headers: ADMIN });
    expect(labelled.json.servers).to.deep.equal(doc.json.servers);
    const loopback = doc.json.servers[0];
    expect(loopback.url).to.equal(`http://127.0.0.1:${port}/demo`);
    const read = await fetch(`${loopback.url}/demo.Company/acme`, { headers: ADMIN });
    expect(read.status).to.equal(200);
    expect(await read.json()).to.deep.equal({ id: 'acme', version: 1, name: 'Acme' });
  });

  it('serves the admin API’s OpenAPI document to admin principals only, valid and describing what the API answers', async () => {
    const none = await call(dp.url, { path: '/_admin/openapi', host: 'iam.localhost' });
    expect(none.status).to.equal(401);
    const stranger = await call(dp.url, { path: '/_admin/openapi', host: 'iam.localhost', headers: { authorization: 'Proxy mallory' } });
    expect(stranger.status).to.equal(403);
    const res = await call(dp.url, { path: '/_admin/openapi', host: `iam.localhost:${port}`, headers: ADMIN });
    expect(res.status, res.text).to.equal(200);
    const result = await new Validator().validate(structuredClone(res.json));
    expect(result.valid, JSON.stringify(result.errors)).to.equal(true);
    expect(res.json.servers.map((s: { url: string }) => s.url)).to.deep.equal([`http://127.0.0.1:${port}/_admin`, `http://iam.localhost:${port}/_admin`]);
    const check = componentValidator(res.json);
    const list = await call(dp.url, { path: '/_admin/datasets', host: 'iam.localhost', headers: ADMIN });
    for (const item of list.json.items) expect(check('DatasetState', item)).to.deep.equal([]);
    expect(check('Error', stranger.json)).to.deep.equal([]);
  });
});
