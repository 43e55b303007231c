/**
 * The browser pages in a real browser: Debian's chromium (scripts/chromium/install.sh, run by
 * `pretest`) driven by playwright-core, against the data plane as `npm start` runs it (main.ts as a
 * child process). Swagger UI lists the dataset's operations and "Try it out" reads a record with the
 * Authorization typed into the page; GraphiQL runs a query, and a subscription in the page
 * receives a change written through REST. Every request the pages make is intercepted: each must
 * go to the data plane's own origin. Without credentials each page opens on a prompt, never on an
 * error: Swagger UI (a dataset's and the administrative API's) asks for them instead of fetching its
 * document, GraphiQL holds the Authorization template of the gateway it was opened on and fetches
 * nothing before the first run. Screenshots go to test-artifacts/ (gitignored); the first screens
 * there are the ones committed under docs/images/.
 */
import { expect } from 'chai';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { developmentIssuerOn, loadOrCreateDevIssuer } from '../src/auth/dev-issuer.js';
import { freePort } from '../src/db/embedded.js';
import { call } from '../test-support/http.js';
import { ROOT, startMain, waitReady, type MainProcess } from '../test-support/main-process.js';
import { subscriptionsCounted } from '../test-support/dataplane.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = join(ROOT, 'test-artifacts');
const AUTHORIZATION = 'Proxy demo-admin';

describe('browser pages: Swagger UI and GraphiQL in chromium', function () {
  this.timeout(120_000);
  let main: MainProcess;
  let url: string;
  let port: number;
  let dataDir: string;
  let profile: string;
  let context: BrowserContext;
  /** Every request any page made: method, URL, Authorization header. */
  const requests: { method: string; url: string; authorization?: string; tags?: string; body?: string }[] = [];
  const foreign: string[] = [];
  const sockets: string[] = [];
  const problems: string[] = [];

  before(async function () {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run bash scripts/chromium/install.sh (npm test's pretest does)`);
    dataDir = mkdtempSync(join(tmpdir(), 'das-browser-'));
    chmodSync(dataDir, 0o755); // as root, the embedded server runs as the postgres user and must reach it
    port = await freePort();
    url = `http://127.0.0.1:${port}`;
    main = startMain({ DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1' });
    await waitReady(url, main);
    profile = mkdtempSync(join(tmpdir(), 'das-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      viewport: { width: 1280, height: 900 },
    });
    // The data plane's own origins: this address, and the gateways' *.localhost hosts on the same port.
    const origins = new Set([url, `http://iam.localhost:${port}`, `http://public.localhost:${port}`]);
    // Interception: what leaves for another origin is refused and recorded.
    await context.route('**/*', (route) => {
      const request = route.request();
      requests.push({ method: request.method(), url: request.url(), authorization: request.headers()['authorization'], tags: request.headers()['tags'], body: request.postData() ?? undefined });
      if (!origins.has(new URL(request.url()).origin)) {
        foreign.push(request.url());
        return route.abort();
      }
      return route.continue();
    });
    context.on('page', watch);
    // Every CSP violation reported to the console, whatever the browser logs by itself.
    await context.addInitScript(() =>
      (globalThis as any).document.addEventListener('securitypolicyviolation', (e: any) => console.error(`Content Security Policy violation: ${e.violatedDirective} ${e.blockedURI}`)),
    );
    mkdirSync(ARTIFACTS, { recursive: true });
  });

  after(async () => {
    await context?.close();
    if (main) {
      main.child.kill('SIGTERM');
      await main.exited;
    }
    for (const dir of [profile, dataDir]) if (dir) rmSync(dir, { recursive: true, force: true });
  });

  function watch(page: Page): void {
    page.on('websocket', (ws) => sockets.push(ws.url()));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    page.on('pageerror', (err) => problems.push(err.message));
  }

  /** The first screen of a Swagger UI page without credentials: the prompt naming the example, no fetch of the document, no error. */
  async function expectPrompt(page: Page, documentPath: string, example: string): Promise<void> {
    const prompt = page.locator('#swagger-ui .das-prompt');
    await prompt.waitFor({ timeout: 30_000 });
    expect(await prompt.locator('h2').textContent()).to.equal('Enter credentials');
    expect(await prompt.locator('code').first().textContent()).to.equal(example);
    expect(await page.locator('#das-authorization').getAttribute('placeholder')).to.contain(example);
    // The field has the focus: typing goes straight into it.
    expect(await page.evaluate(() => (globalThis as any).document.activeElement?.id)).to.equal('das-authorization');
    expect(await page.locator('body').textContent()).to.not.match(/Failed to load|Unauthorized|MISSING_CREDENTIALS|ADMIN_IAM_ONLY/);
    expect(requests.filter((r) => new URL(r.url).pathname === documentPath)).to.deep.equal([]);
  }

  async function writeCompany(id: string, name: string): Promise<void> {
    const res = await call(url, { path: '/demo', headers: { authorization: AUTHORIZATION }, body: { create: { schema: 'demo.Company', id, data: { name } } } });
    expect(res.status, res.text).to.equal(201);
  }

  it('Swagger UI lists the dataset’s operations and “Try it out” reads a record with the Authorization typed into the page', async () => {
    await writeCompany('acme', 'Acme');
    const page = await context.newPage();
    const response = await page.goto(`${url}/demo/docs`);
    expect(response!.status()).to.equal(200);
    expect(response!.headers()['content-security-policy']).to.contain("default-src 'none'").and.contain("script-src 'self'");
    await expectPrompt(page, '/demo/openapi', 'Proxy demo-admin');
    await page.screenshot({ path: join(ARTIFACTS, 'swagger-ui.png') });
    await page.fill('#das-authorization', AUTHORIZATION);
    await page.click('#das-auth button[type=submit]');
    const read = page.locator('.opblock-get:has(.opblock-summary-path[data-path="/demo.Company/{id}"])');
    await read.waitFor({ timeout: 30_000 });
    // The operations the document lists, among them records, transactions and GraphQL.
    const operations = await page.locator('.opblock-summary-path').allTextContents();
    expect(operations.map((p) => p.replace(/\u200b/g, ''))).to.include.members(['/demo.Company/{id}', '/demo.Person', '/Transaction/{id}', '/graphql', '/raw-query']);

    await read.locator('.opblock-summary').click();
    await read.locator('.try-out__btn').click();
    await read.locator('input[placeholder="id"]').fill('acme');
    // The tags header is a text field (a JSON object's text), not a file chooser.
    expect(await read.locator('input[type=file]').count(), 'no file input').to.equal(0);
    await read.locator('input[placeholder="tags"]').fill('{"team":"docs"}');
    await read.locator('.execute').click();
    const body = read.locator('.live-responses-table .response-col_description pre');
    await body.first().waitFor({ timeout: 30_000 });
    const text = await body.first().textContent();
    expect(JSON.parse(text!)).to.deep.equal({ id: 'acme', version: 1, name: 'Acme' });
    const sent = requests.find((r) => r.url === `${url}/demo/demo.Company/acme`);
    expect(sent, 'the read went to the data plane').to.not.equal(undefined);
    expect(sent!.authorization).to.equal(AUTHORIZATION);
    expect(sent!.tags).to.equal('{"team":"docs"}');
    // The document itself was fetched with it too, and never without it.
    const documentFetches = requests.filter((r) => r.url === `${url}/demo/openapi`);
    expect(documentFetches).to.not.deep.equal([]);
    for (const fetched of documentFetches) expect(fetched.authorization).to.equal(AUTHORIZATION);
    await page.screenshot({ path: join(ARTIFACTS, 'swagger-ui-loaded.png') });
    await page.close();
  });

  it('Swagger UI renders the administrative API’s document once credentials are given', async () => {
    const page = await context.newPage();
    expect((await page.goto(`${url}/_admin/docs`))!.status()).to.equal(200);
    // No 403 ADMIN_IAM_ONLY on the first screen: the page asks; the API behind it stays protected.
    await expectPrompt(page, '/_admin/openapi', 'Proxy demo-admin');
    await page.screenshot({ path: join(ARTIFACTS, 'admin-docs.png') });
    expect((await call(url, { path: '/_admin/openapi' })).status).to.equal(403);
    await page.fill('#das-authorization', AUTHORIZATION);
    await page.click('#das-auth button[type=submit]');
    await page.locator('.opblock-summary-path[data-path="/datasets/{id}/pause"]').waitFor({ timeout: 30_000 });
    const operations = await page.locator('.opblock-summary-path').allTextContents();
    expect(operations.map((p) => p.replace(/\u200b/g, ''))).to.include.members(['/datasets', '/datasets/{id}', '/datasets/{id}/resume', '/openapi']);
    await page.close();
  });

  // In the page: GraphiQL's CodeMirror editors. Functions, not strings: the page's CSP (no 'unsafe-eval') refuses strings evaluated in it.
  const QUERY_EDITOR = '.graphiql-query-editor .CodeMirror';
  const HEADERS_EDITOR = '.graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror';
  /** GraphiQL's first screen on `origin` without credentials: the headers template, no request to the endpoint, no error. */
  async function openGraphiql(origin: string): Promise<Page> {
    const page = await context.newPage();
    expect((await page.goto(`${origin}/demo/graphql`))!.status()).to.equal(200);
    // The headers tab is open on the first screen, its editor shown.
    await page.locator('.graphiql-editor-tools button[data-name="headers"].active').waitFor({ timeout: 30_000 });
    await page.locator(HEADERS_EDITOR).waitFor({ timeout: 30_000 });
    // The page's own scripts have run: GraphiQL rendered, and had it introspected, the POST would be listed by now.
    await page.locator(QUERY_EDITOR).waitFor({ timeout: 30_000 });
    expect(requests.filter((r) => r.url.startsWith(origin) && r.method === 'POST')).to.deep.equal([]);
    expect(await resultText(page)).to.equal('');
    expect(await page.locator('body').textContent()).to.not.match(/MISSING_CREDENTIALS|WRONG_SCHEME|Unauthorized|"errors"/);
    return page;
  }
  const headersEditor = (page: Page) => page.evaluate((s) => ((globalThis as any).document.querySelector(s)?.CodeMirror.getValue() ?? '') as string, HEADERS_EDITOR);
  const resultText = (page: Page) => page.evaluate(() => ((globalThis as any).document.querySelector('.result-window .CodeMirror')?.CodeMirror.getValue() ?? '') as string);
  const setEditor = (page: Page, selector: string, text: string) =>
    page.evaluate(([s, t]) => (globalThis as any).document.querySelector(s).CodeMirror.setValue(t), [selector, text] as const);
  const waitForResult = (page: Page, text: string) =>
    page.waitForFunction((t) => ((globalThis as any).document.querySelector('.result-window .CodeMirror')?.CodeMirror.getValue() ?? '').includes(t), text, { timeout: 30_000 });

  it('GraphiQL on the iam gateway opens with {"Authorization": "Proxy demo-admin"} and no error; Run works as it stands, then the schema is fetched', async () => {
    await writeCompany('globex', 'Globex');
    const origin = `http://iam.localhost:${port}`;
    const page = await openGraphiql(origin);
    expect(JSON.parse(await headersEditor(page))).to.deep.equal({ Authorization: AUTHORIZATION });
    await page.screenshot({ path: join(ARTIFACTS, 'graphiql.png') });

    await setEditor(page, QUERY_EDITOR, '{ demo_Company(id: "globex") { id name } }');
    // The run succeeded: the schema follows, with the same headers.
    const introspection = page.waitForRequest((r) => r.url() === `${origin}/demo/graphql` && (r.postData() ?? '').includes('IntrospectionQuery'), { timeout: 30_000 });
    await page.click('.graphiql-execute-button');
    await waitForResult(page, 'Globex');
    expect(JSON.parse(await resultText(page))).to.deep.equal({ data: { demo_Company: { id: 'globex', name: 'Globex' } } });
    await introspection;
    for (const posted of requests.filter((r) => r.method === 'POST' && r.url === `${origin}/demo/graphql`)) expect(posted.authorization).to.equal(AUTHORIZATION);
    await page.click('.graphiql-sidebar button[aria-label="Show Documentation Explorer"]');
    await page.locator('.graphiql-doc-explorer a', { hasText: 'Query' }).first().waitFor({ timeout: 30_000 });
    await page.close();
  });

  it('GraphiQL on the public gateway opens with {"Authorization": "Bearer <token>"} and no error; a token given with Use fills the headers and runs a query', async () => {
    await writeCompany('umbrella', 'Umbrella');
    const origin = `http://public.localhost:${port}`;
    const page = await openGraphiql(origin);
    expect(JSON.parse(await headersEditor(page))).to.deep.equal({ Authorization: 'Bearer <token>' });
    expect(await page.locator('#das-authorization').getAttribute('placeholder')).to.equal('Bearer <token>');
    // A token of the development issuer, as `npm run -s token -- --sub alice` prints it.
    const issuer = await loadOrCreateDevIssuer(dataDir, { issuer: developmentIssuerOn('http://localhost:8080/.well-known/dev-issuer', port), audience: 'data-access-local' });
    const token = await issuer.sign({ sub: 'alice' });
    // Typed into the field above and Use: GraphiQL remounts with it in the headers editor, and fetches the schema with it.
    const introspection = page.waitForRequest((r) => r.url() === `${origin}/demo/graphql` && (r.postData() ?? '').includes('IntrospectionQuery'), { timeout: 30_000 });
    await page.fill('#das-authorization', `Bearer ${token}`);
    await page.click('#das-auth button[type=submit]');
    await page.waitForFunction((s) => ((globalThis as any).document.querySelector(s)?.CodeMirror.getValue() ?? '').includes('Bearer ey'), HEADERS_EDITOR, { timeout: 30_000 });
    expect(JSON.parse(await headersEditor(page))).to.deep.equal({ Authorization: `Bearer ${token}` });
    expect((await introspection).headers()['authorization']).to.equal(`Bearer ${token}`);
    await setEditor(page, QUERY_EDITOR, '{ demo_Company(id: "umbrella") { id name } }');
    await page.click('.graphiql-execute-button');
    await waitForResult(page, 'Umbrella');
    expect(JSON.parse(await resultText(page))).to.deep.equal({ data: { demo_Company: { id: 'umbrella', name: 'Umbrella' } } });
    expect(requests.find((r) => r.url === `${origin}/demo/graphql` && r.body?.includes('umbrella'))?.authorization).to.equal(`Bearer ${token}`);
    await page.close();
  });

  it('GraphiQL runs a query and a mutation, shows the Mutation type, and a subscription in the page receives a change written through REST', async () => {
    const page = await context.newPage();
    const response = await page.goto(`${url}/demo/graphql`);
    expect(response!.status()).to.equal(200);
    expect(response!.headers()['content-security-policy']).to.contain("connect-src 'self'");
    await page.fill('#das-authorization', AUTHORIZATION);
    await page.click('#das-auth button[type=submit]');
    await page.locator(QUERY_EDITOR).waitFor({ timeout: 30_000 });
    await setEditor(page, QUERY_EDITOR, '{ demo_Company(id: "acme") { id name } }');
    await page.click('.graphiql-execute-button');
    await waitForResult(page, 'Acme');
    expect(JSON.parse(await resultText(page))).to.deep.equal({ data: { demo_Company: { id: 'acme', name: 'Acme' } } });
    const posted = requests.filter((r) => r.method === 'POST' && r.url === `${url}/demo/graphql` && r.body?.includes('acme'));
    expect(posted).to.have.length(1);
    expect(posted[0].authorization).to.equal(AUTHORIZATION);

    // A mutation from the page, and the Mutation type in GraphiQL's documentation explorer.
    await setEditor(page, QUERY_EDITOR, 'mutation { create_demo_Company(id: "initech", data: { name: "Initech" }) { id version } }');
    await page.click('.graphiql-execute-button');
    await waitForResult(page, 'initech');
    expect(JSON.parse(await resultText(page))).to.deep.equal({ data: { create_demo_Company: { id: 'initech', version: 1 } } });
    await page.click('.graphiql-sidebar button[aria-label="Show Documentation Explorer"]');
    await page.locator('.graphiql-doc-explorer-root-type', { hasText: 'mutation' }).waitFor({ timeout: 10_000 });
    await page.locator('.graphiql-doc-explorer a', { hasText: 'Mutation' }).first().waitFor({ timeout: 10_000 });

    // The subscription: connection_init carries the Authorization (a browser cannot set WebSocket headers).
    const initSent = new Promise<string>((resolve) =>
      page.on('websocket', (ws) =>
        ws.on('framesent', ({ payload }) => {
          if (String(payload).includes('"subscribe"')) resolve(String(payload));
        }),
      ),
    );
    const frames: string[] = [];
    page.on('websocket', (ws) => ws.on('framesent', ({ payload }) => frames.push(String(payload))));
    await setEditor(page, QUERY_EDITOR, 'subscription { demo_Company { op record { id name } } }');
    await page.click('.graphiql-execute-button');
    await initSent;
    expect(frames.find((f) => f.includes('connection_init'))).to.contain(AUTHORIZATION);
    // A subscription gets the changes committed once it has taken its start position (docs/subscriptions.md):
    // the write waits until das_subscriptions counts it, or it could commit first and never be delivered.
    await subscriptionsCounted({ url });
    await writeCompany('hooli', 'Hooli');
    await waitForResult(page, 'Hooli');
    expect(JSON.parse(await resultText(page))).to.deep.equal({ data: { demo_Company: { op: 'CREATE', record: { id: 'hooli', name: 'Hooli' } } } });
    expect(sockets).to.include(`${url.replace('http:', 'ws:')}/demo/graphql`);
    await page.screenshot({ path: join(ARTIFACTS, 'graphiql-subscription.png') });
    await page.close();
  });

  it('made every request to the data plane’s own origin, with no Content-Security-Policy violation', () => {
    expect(requests.length).to.be.greaterThan(10);
    expect(foreign).to.deep.equal([]);
    for (const socket of sockets) expect(new URL(socket).port).to.equal(String(port));
    expect(problems.filter((p) => /Content Security Policy|Refused to/i.test(p))).to.deep.equal([]);
  });
});
