import { expect } from 'chai';
import { ALL_IPV4, ALL_IPV6, cidrContains, cidrStrictlyContains, firewallIpBlocks } from './cidr-math.js';

describe('operator: CIDR containment', () => {
  it('IPv4: nested ranges, host bits, disjoint ranges', () => {
    expect(cidrContains('10.0.0.0/8', '10.1.2.0/24')).to.equal(true);
    expect(cidrContains('10.0.0.0/8', '10.0.0.0/8')).to.equal(true);
    expect(cidrContains('10.1.2.3/16', '10.1.200.0/24')).to.equal(true); // host bits in the outer range
    expect(cidrContains('10.0.0.0/8', '11.0.0.0/24')).to.equal(false);
    expect(cidrContains('10.1.2.0/24', '10.0.0.0/8')).to.equal(false); // larger is not inside smaller
    expect(cidrContains('0.0.0.0/0', '192.168.1.1/32')).to.equal(true);
  });

  it('IPv6: compressed notation, nested and disjoint ranges', () => {
    expect(cidrContains('2001:db8::/32', '2001:db8:1::/48')).to.equal(true);
    expect(cidrContains('2001:db8::/32', '2001:db9::/48')).to.equal(false);
    expect(cidrContains('::/0', '::1/128')).to.equal(true);
    expect(cidrContains('fd00::/8', 'fd12:3456::/64')).to.equal(true);
  });

  it('never mixes families', () => {
    expect(cidrContains('0.0.0.0/0', '::1/128')).to.equal(false);
    expect(cidrContains('::/0', '10.0.0.0/8')).to.equal(false);
  });

  it('strict containment excludes equal ranges (what NetworkPolicy requires of an except)', () => {
    expect(cidrStrictlyContains('10.0.0.0/8', '10.0.0.0/8')).to.equal(false);
    expect(cidrStrictlyContains('10.0.0.0/8', '10.0.0.0/9')).to.equal(true);
  });
});

describe('operator: firewall → NetworkPolicy ipBlocks', () => {
  it('an allowed list becomes the only blocks, each with the blocked ranges inside it as except', () => {
    const blocks = firewallIpBlocks(['10.0.0.0/8', '192.168.0.0/16', '2001:db8::/32'], ['10.1.0.0/16', '192.168.5.0/24', '172.16.0.0/12', '2001:db8:bad::/48']);
    expect(blocks).to.deep.equal([
      { cidr: '10.0.0.0/8', except: ['10.1.0.0/16'] },
      { cidr: '192.168.0.0/16', except: ['192.168.5.0/24'] },
      { cidr: '2001:db8::/32', except: ['2001:db8:bad::/48'] },
    ]);
  });

  it('a blocked range outside every allowed range is not an except (Kubernetes would reject it)', () => {
    expect(firewallIpBlocks(['10.0.0.0/8'], ['11.0.0.0/8'])).to.deep.equal([{ cidr: '10.0.0.0/8', except: [] }]);
  });

  it('an allowed range that a blocked range covers is dropped: blocked wins', () => {
    expect(firewallIpBlocks(['10.1.0.0/16', '10.2.0.0/16'], ['10.1.0.0/16'])).to.deep.equal([{ cidr: '10.2.0.0/16', except: [] }]);
    expect(firewallIpBlocks(['10.1.2.0/24'], ['10.0.0.0/8'])).to.deep.equal([]);
  });

  it('no allowed list: every IPv4 and IPv6 address but the blocked ones, per family', () => {
    expect(firewallIpBlocks([], ['203.0.113.0/24', '2001:db8::/32'])).to.deep.equal([
      { cidr: ALL_IPV4, except: ['203.0.113.0/24'] },
      { cidr: ALL_IPV6, except: ['2001:db8::/32'] },
    ]);
    expect(firewallIpBlocks([], [])).to.deep.equal([
      { cidr: ALL_IPV4, except: [] },
      { cidr: ALL_IPV6, except: [] },
    ]);
  });

  it('blocking everything of one family removes that family', () => {
    expect(firewallIpBlocks([], ['0.0.0.0/0'])).to.deep.equal([{ cidr: ALL_IPV6, except: [] }]);
  });

  it('lists a repeated blocked range once', () => {
    expect(firewallIpBlocks(['10.0.0.0/8'], ['10.9.0.0/16', '10.9.0.0/16'])).to.deep.equal([{ cidr: '10.0.0.0/8', except: ['10.9.0.0/16'] }]);
  });

  it('rejects a malformed range', () => {
    expect(() => firewallIpBlocks(['10.0.0.0/33'], [])).to.throw(/invalid CIDR/);
  });
});
