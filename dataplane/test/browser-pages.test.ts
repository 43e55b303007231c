/**
 * The browser pages in a real browser: Debian's chromium (scripts/chromium/install.sh, run by
 * `pretest`) driven by playwright-core, against the data plane as `npm start` runs it (main.ts as a
 * child process). Swagger UI lists the dataset's operations and "Try it out" reads a record with the
 * Authorization typed into the page; GraphiQL runs a query, and a subscription in the page
 * receives a change written through REST. Every request the pages make is intercepted: each must
 * go to the data plane's own origin. Screenshots go to test-artifacts/ (gitignored).
 */
import { expect } from 'chai';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { freePort } from '../src/db/embedded.js';
import { call } from '../test-support/http.js';
import { ROOT, startMain, waitReady, type MainProcess } from '../test-support/main-process.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = join(ROOT, 'test-artifacts');
const AUTHORIZATION = 'Proxy demo-admin';

describe('browser pages: Swagger UI and GraphiQL in chromium', function () {
  this.timeout(120_000);
  let main: MainProcess;
  let url: string;
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
    const port = await freePort();
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
    const origin = new URL(url).origin;
    // Interception: what leaves for another origin is refused and recorded.
    await context.route('**/*', (route) => {
      const request = route.request();
      requests.push({ method: request.method(), url: request.url(), authorization: request.headers()['authorization'], tags: request.headers()['tags'], body: request.postData() ?? undefined });
      if (new URL(request.url()).origin !== origin) {
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
    // The document itself was fetched with it too (the page's first fetch, before it was typed, answered 401).
    expect(requests.filter((r) => r.url === `${url}/demo/openapi`).at(-1)?.authorization).to.equal(AUTHORIZATION);
    await page.screenshot({ path: join(ARTIFACTS, 'swagger-ui.png') });
    await page.close();
  });

  it('Swagger UI renders the administrative API’s document', async () => {
    const page = await context.newPage();
    expect((await page.goto(`${url}/_admin/docs`))!.status()).to.equal(200);
    await page.fill('#das-authorization', AUTHORIZATION);
    await page.click('#das-auth button[type=submit]');
    await page.locator('.opblock-summary-path[data-path="/datasets/{id}/pause"]').waitFor({ timeout: 30_000 });
    const operations = await page.locator('.opblock-summary-path').allTextContents();
    expect(operations.map((p) => p.replace(/\u200b/g, ''))).to.include.members(['/datasets', '/datasets/{id}', '/datasets/{id}/resume', '/openapi']);
    await page.close();
  });

  it('GraphiQL runs a query and a mutation, shows the Mutation type, and a subscription in the page receives a change written through REST', async () => {
    const page = await context.newPage();
    const response = await page.goto(`${url}/demo/graphql`);
    expect(response!.status()).to.equal(200);
    expect(response!.headers()['content-security-policy']).to.contain("connect-src 'self'");
    await page.fill('#das-authorization', AUTHORIZATION);
    await page.click('#das-auth button[type=submit]');
    await page.locator('.graphiql-query-editor .CodeMirror').waitFor({ timeout: 30_000 });

    // In the page: GraphiQL's CodeMirror editors (query, result).
    const RESULT = "(document.querySelector('.result-window .CodeMirror')?.CodeMirror.getValue() ?? '')";
    const setQuery = (query: string) => page.evaluate(`document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror.setValue(${JSON.stringify(query)})`);
    const result = async () => String(await page.evaluate(RESULT));
    // A function, not a string: the page's CSP (no 'unsafe-eval') refuses strings evaluated in it.
    const resultShows = (text: string) =>
      page.waitForFunction((t) => ((globalThis as any).document.querySelector('.result-window .CodeMirror')?.CodeMirror.getValue() ?? '').includes(t), text, { timeout: 30_000 });

    await setQuery('{ demo_Company(id: "acme") { id name } }');
    await page.click('.graphiql-execute-button');
    await resultShows('Acme');
    expect(JSON.parse(await result())).to.deep.equal({ data: { demo_Company: { id: 'acme', name: 'Acme' } } });
    const posted = requests.filter((r) => r.method === 'POST' && r.url === `${url}/demo/graphql` && r.body?.includes('acme'));
    expect(posted).to.have.length(1);
    expect(posted[0].authorization).to.equal(AUTHORIZATION);

    // A mutation from the page, and the Mutation type in GraphiQL's documentation explorer.
    await setQuery('mutation { create_demo_Company(id: "initech", data: { name: "Initech" }) { id version } }');
    await page.click('.graphiql-execute-button');
    await resultShows('initech');
    expect(JSON.parse(await result())).to.deep.equal({ data: { create_demo_Company: { id: 'initech', version: 1 } } });
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
    await setQuery('subscription { demo_Company { op record { id name } } }');
    await page.click('.graphiql-execute-button');
    await initSent;
    expect(frames.find((f) => f.includes('connection_init'))).to.contain(AUTHORIZATION);
    await writeCompany('hooli', 'Hooli');
    await resultShows('Hooli');
    expect(JSON.parse(await result())).to.deep.equal({ data: { demo_Company: { op: 'CREATE', record: { id: 'hooli', name: 'Hooli' } } } });
    expect(sockets).to.include(`${url.replace('http:', 'ws:')}/demo/graphql`);
    await page.screenshot({ path: join(ARTIFACTS, 'graphiql.png') });
    await page.close();
  });

  it('made every request to the data plane’s own origin, with no Content-Security-Policy violation', () => {
    expect(requests.length).to.be.greaterThan(10);
    expect(foreign).to.deep.equal([]);
    for (const socket of sockets) expect(new URL(socket).host).to.equal(new URL(url).host);
    expect(problems.filter((p) => /Content Security Policy|Refused to/i.test(p))).to.deep.equal([]);
  });
});
