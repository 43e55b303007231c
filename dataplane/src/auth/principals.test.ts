import { expect } from 'chai';
import { anyMatches, principalMatches } from './principals.js';

describe('principalMatches', () => {
  it('matches exact names, case-sensitively, over the whole string', () => {
    expect(principalMatches('demo-admin', 'demo-admin')).to.equal(true);
    expect(principalMatches('demo-admin', 'Demo-admin')).to.equal(false);
    expect(principalMatches('demo-admin', 'demo-admin2')).to.equal(false);
    expect(principalMatches('demo-admin', 'x-demo-admin')).to.equal(false);
    expect(principalMatches('', '')).to.equal(true);
    expect(principalMatches('', 'a')).to.equal(false);
  });

  it('lets * match any run, including / and : and nothing', () => {
    const role = 'arn:aws:iam::123456789012:role/*';
    expect(principalMatches(role, 'arn:aws:iam::123456789012:role/reader')).to.equal(true);
    expect(principalMatches(role, 'arn:aws:iam::123456789012:role/team/reader')).to.equal(true);
    expect(principalMatches(role, 'arn:aws:iam::123456789012:role/')).to.equal(true);
    expect(principalMatches(role, 'arn:aws:iam::999999999999:role/reader')).to.equal(false);
    expect(principalMatches('arn:aws:sts::*:assumed-role/etl-*/*', 'arn:aws:sts::123456789012:assumed-role/etl-nightly/session-1')).to.equal(true);
    expect(principalMatches('arn:aws:sts::*:assumed-role/etl-*/*', 'arn:aws:sts::123456789012:assumed-role/web/etl-x')).to.equal(false);
    expect(principalMatches('*', 'anything at all')).to.equal(true);
    expect(principalMatches('a*b*c', 'abc')).to.equal(true);
    expect(principalMatches('a*b*c', 'axxbyyc')).to.equal(true);
    expect(principalMatches('a*b*c', 'axxbyycd')).to.equal(false);
    expect(principalMatches('*admin', 'demo-admin')).to.equal(true);
    expect(principalMatches('**', '')).to.equal(true);
  });

  it('lets ? match exactly one character', () => {
    expect(principalMatches('user-?', 'user-1')).to.equal(true);
    expect(principalMatches('user-?', 'user-')).to.equal(false);
    expect(principalMatches('user-?', 'user-12')).to.equal(false);
  });

  it('treats regular-expression metacharacters literally', () => {
    expect(principalMatches('a.b', 'a.b')).to.equal(true);
    expect(principalMatches('a.b', 'axb')).to.equal(false);
    expect(principalMatches('a+', 'aaa')).to.equal(false);
    expect(principalMatches('a+', 'a+')).to.equal(true);
    expect(principalMatches('(x|y)', 'x')).to.equal(false);
    expect(principalMatches('(x|y)', '(x|y)')).to.equal(true);
    expect(principalMatches('[ab]', 'a')).to.equal(false);
    expect(principalMatches('^x$', 'x')).to.equal(false);
    expect(principalMatches('^x$', '^x$')).to.equal(true);
    expect(principalMatches('a\\*', 'a\\bcd')).to.equal(true); // the backslash is literal, the star still a wildcard
    expect(principalMatches('.*', 'anything')).to.equal(false);
    expect(principalMatches('.*', '.xyz')).to.equal(true);
  });

  it('stays fast on patterns that make backtracking regexes explode', () => {
    const pattern = `${'*a'.repeat(30)}*b`;
    const principal = 'a'.repeat(2000);
    const started = Date.now();
    expect(principalMatches(pattern, principal)).to.equal(false);
    expect(Date.now() - started).to.be.below(500);
  });

  it('anyMatches checks every pattern against every defined name', () => {
    expect(anyMatches(['x', 'alice*'], [undefined, 'alice@example.com'])).to.equal(true);
    expect(anyMatches([], ['x'])).to.equal(false);
    expect(anyMatches(['x'], [undefined])).to.equal(false);
  });
});
