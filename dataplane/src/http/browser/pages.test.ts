import { expect } from 'chai';
import type { EnvironmentConfig } from '../../../../model/types.js';
import { authorizationExample, credentialHint, graphiqlPage, pageSecurityPolicy, swaggerPage, wantsHtml } from './pages.js';

describe('browser pages (http/browser/pages.ts)', () => {
  it('puts the addresses into data attributes, escaped, and loads only versioned files of this origin', () => {
    const html = swaggerPage('dataset "x"<y>', '/a"b/<openapi>');
    expect(html).to.contain('data-openapi="/a&#34;b/&#60;openapi&#62;"');
    expect(html).to.contain('<title>dataset &#34;x&#34;&#60;y&#62; — Swagger UI</title>');
    const sources = [...graphiqlPage('d', '/d/graphql').matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    for (const source of sources.filter((s) => s !== 'data:,')) expect(source).to.match(/^\/_assets\/[0-9a-f]{12}\/[a-z-]+\.(js|css)$/);
    expect(graphiqlPage('d', '/d/graphql')).to.not.match(/<script>|<style|style="/);
  });

  it('allows only its own origin, naming the WebSocket of a plain host only', () => {
    expect(pageSecurityPolicy('127.0.0.1:8080', false)).to.contain("connect-src 'self' ws://127.0.0.1:8080;");
    expect(pageSecurityPolicy('demo.iam.example.com', true)).to.contain("connect-src 'self' wss://demo.iam.example.com;");
    // A Host header that is no plain name is never copied into the policy.
    expect(pageSecurityPolicy('evil.com; script-src *', false)).to.contain("connect-src 'self';").and.not.contain('evil');
    expect(pageSecurityPolicy(undefined, false)).to.contain("connect-src 'self';");
    expect(pageSecurityPolicy('x', false)).to.match(/^default-src 'none'; script-src 'self'; style-src 'self';/);
  });

  it('tells a browser (Accept: text/html) from an API client', () => {
    expect(wantsHtml('text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8')).to.equal(true);
    expect(wantsHtml('application/json, text/html;q=0.5')).to.equal(true);
    expect(wantsHtml('application/json')).to.equal(false);
    expect(wantsHtml('*/*')).to.equal(false);
    expect(wantsHtml(undefined)).to.equal(false);
    expect(wantsHtml('text/htmlx')).to.equal(false);
  });

  it('suggests the Authorization of the gateway the page is on, and the example principal only on a development environment', () => {
    const development = { identityProvider: { development: true }, admin: { principals: ['demo-admin', 'ops'] } } as unknown as EnvironmentConfig;
    const production = { identityProvider: { development: false }, admin: { principals: ['ops'] } } as unknown as EnvironmentConfig;
    expect(credentialHint('iam', development)).to.deep.equal({ gateway: 'iam', principal: 'demo-admin' });
    expect(credentialHint('iam', production)).to.deep.equal({ gateway: 'iam' });
    expect(credentialHint(undefined, undefined)).to.deep.equal({ gateway: undefined });
    expect(authorizationExample({ gateway: 'iam', principal: 'demo-admin' })).to.deep.equal({ template: 'Proxy demo-admin', placeholder: 'Proxy demo-admin' });
    expect(authorizationExample({ gateway: 'iam' }).template).to.equal('Proxy <principal>');
    expect(authorizationExample({ gateway: 'public', principal: 'demo-admin' })).to.deep.equal({ template: 'Bearer <token>', placeholder: 'Bearer <token>' });
    // A host without a gateway label takes either scheme.
    expect(authorizationExample({ principal: 'demo-admin' })).to.deep.equal({ template: 'Proxy demo-admin', placeholder: 'Proxy demo-admin  or  Bearer <token>' });
  });

  it('puts the template into the page, escaped, and Swagger UI’s place holds the credentials prompt until they are given', () => {
    const html = swaggerPage('dataset demo', '/demo/openapi', { gateway: 'iam', principal: 'a"<b>' });
    expect(html).to.contain('data-authorization-example="Proxy a&#34;&#60;b&#62;"');
    expect(html).to.contain('placeholder="Proxy a&#34;&#60;b&#62;"');
    expect(html).to.match(/<div id="swagger-ui"><section class="das-prompt" role="status"><h2>Enter credentials<\/h2>/);
    expect(html).to.contain('<code>Proxy a&#34;&#60;b&#62;</code>');
    expect(swaggerPage('dataset demo', '/demo/openapi', {})).to.contain('(iam gateway) or <code>Bearer &lt;token&gt;</code> (public gateway)');
    expect(graphiqlPage('dataset demo', '/demo/graphql', { gateway: 'public' })).to.contain('data-authorization-example="Bearer &#60;token&#62;"').and.contain('<div id="graphiql"></div>');
  });
});
