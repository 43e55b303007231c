import { expect } from 'chai';
import { CidrSet } from '../../../model/cidr.js';
import { parseHop, resolveClientAddress } from './client-address.js';
import { checkIpRules } from './ip-rules.js';

describe('client address', () => {
  const proxies = new CidrSet(['10.0.0.0/8', 'fd00::/8']);
  const none = new CidrSet([]);

  it('is the socket peer when no proxy is trusted, whatever X-Forwarded-For says', () => {
    expect(resolveClientAddress('203.0.113.7', '127.0.0.1', none)).to.equal('203.0.113.7');
    expect(resolveClientAddress('203.0.113.7', undefined, proxies)).to.equal('203.0.113.7');
  });

  it('normalises IPv4-mapped IPv6 peers', () => {
    expect(resolveClientAddress('::ffff:203.0.113.7', undefined, none)).to.equal('203.0.113.7');
    expect(resolveClientAddress('::ffff:10.1.2.3', '198.51.100.1', proxies)).to.equal('198.51.100.1');
  });

  it('ignores X-Forwarded-For from a peer that is not a trusted proxy', () => {
    expect(resolveClientAddress('203.0.113.7', '127.0.0.1', proxies)).to.equal('203.0.113.7');
  });

  it('walks X-Forwarded-For right to left from a trusted proxy, skipping trusted hops', () => {
    expect(resolveClientAddress('10.0.0.5', '198.51.100.1', proxies)).to.equal('198.51.100.1');
    // The client forged "127.0.0.1"; the hop our proxies saw is 198.51.100.1.
    expect(resolveClientAddress('10.0.0.5', '127.0.0.1, 198.51.100.1, 10.0.0.9', proxies)).to.equal('198.51.100.1');
    expect(resolveClientAddress('10.0.0.5', ['127.0.0.1, 198.51.100.1', '10.0.0.9'], proxies)).to.equal('198.51.100.1');
    expect(resolveClientAddress('fd00::1', '2001:db8::7, fd00::2', proxies)).to.equal('2001:db8::7');
  });

  it('takes the leftmost hop when every hop is a trusted proxy', () => {
    expect(resolveClientAddress('10.0.0.5', '10.0.0.1, 10.0.0.2', proxies)).to.equal('10.0.0.1');
    expect(resolveClientAddress('10.0.0.5', '', proxies)).to.equal('10.0.0.5');
  });

  it('reads ports, brackets and mapped forms in hops; an unparseable hop is the client', () => {
    expect(parseHop('198.51.100.1:4711')).to.equal('198.51.100.1');
    expect(parseHop('[2001:db8::7]:443')).to.equal('2001:db8::7');
    expect(parseHop('[2001:db8::7]')).to.equal('2001:db8::7');
    expect(parseHop('::ffff:198.51.100.1')).to.equal('198.51.100.1');
    expect(resolveClientAddress('10.0.0.5', 'garbage', proxies)).to.equal('garbage');
    // An unparseable client is in no allowed range, so an allowed list still blocks it.
    expect(checkIpRules('garbage', { allowed: new CidrSet(['0.0.0.0/0']), blocked: none })?.ruleId).to.equal('ip.not-allowed');
  });
});

describe('ip rules', () => {
  const rules = (allowed: string[], blocked: string[]) => ({ allowed: new CidrSet(allowed), blocked: new CidrSet(blocked) });

  it('lets everything through without lists', () => {
    expect(checkIpRules('203.0.113.7', rules([], []))).to.equal(undefined);
    expect(checkIpRules('2001:db8::1', rules([], []))).to.equal(undefined);
  });

  it('blocks IPv4 and IPv6 ranges of the blocked list', () => {
    const r = rules([], ['203.0.113.0/24', '2001:db8:bad::/48']);
    expect(checkIpRules('203.0.113.7', r)?.ruleId).to.equal('ip.blocked');
    expect(checkIpRules('203.0.114.7', r)).to.equal(undefined);
    expect(checkIpRules('2001:db8:bad::1', r)?.ruleId).to.equal('ip.blocked');
    expect(checkIpRules('2001:db8:bad0::1', r)).to.equal(undefined);
    expect(checkIpRules('::ffff:203.0.113.7', r)?.ruleId).to.equal('ip.blocked');
  });

  it('with an allowed list, blocks everything outside it', () => {
    const r = rules(['127.0.0.0/8', '::1/128', '2001:db8::/32'], []);
    expect(checkIpRules('127.0.0.1', r)).to.equal(undefined);
    expect(checkIpRules('::1', r)).to.equal(undefined);
    expect(checkIpRules('::ffff:127.0.0.1', r)).to.equal(undefined);
    expect(checkIpRules('2001:db8:1::1', r)).to.equal(undefined);
    expect(checkIpRules('192.168.1.1', r)?.ruleId).to.equal('ip.not-allowed');
    expect(checkIpRules('2001:db9::1', r)?.ruleId).to.equal('ip.not-allowed');
    expect(checkIpRules('', r)?.ruleId).to.equal('ip.not-allowed');
  });

  it('lets the blocked list win over the allowed list', () => {
    const r = rules(['10.0.0.0/8'], ['10.6.6.0/24']);
    expect(checkIpRules('10.1.1.1', r)).to.equal(undefined);
    const verdict = checkIpRules('10.6.6.6', r);
    expect(verdict?.ruleId).to.equal('ip.blocked');
    expect(verdict?.message).to.include('10.6.6.6');
  });
});
