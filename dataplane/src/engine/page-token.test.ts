/** Signed page tokens: round trip, and refusal when forged, expired, mismatched or malformed. */
import { expect } from 'chai';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiError } from './errors.js';
import { loadPageTokenKey, PageTokens, pageTokenKeyPath, type PageBinding } from './page-token.js';
import { dataPlaneSettings } from '../../../model/settings/dataplane.js';

const binding: PageBinding = { dataset: 'demo', target: 'list:demo.Person', filter: '{"kind":"null"}', sort: 'age:asc:nulls-last,id:asc:nulls-last' };
const key = Buffer.alloc(32, 7);

function refusal(run: () => unknown): ApiError {
  try {
    run();
  } catch (err) {
    expect(err).to.be.instanceOf(ApiError);
    return err as ApiError;
  }
  throw new Error('expected a refusal');
}

describe('page tokens', () => {
  it('round-trips the keyset position, as opaque base64url', () => {
    const tokens = new PageTokens(key);
    const token = tokens.issue(binding, [null, 42, 'p-1']);
    expect(token).to.match(/^[A-Za-z0-9_-]+$/);
    expect(tokens.open(token, { ...binding })).to.deep.equal([null, 42, 'p-1']);
  });

  it('refuses a token used with another dataset, target, filter, sort or arguments', () => {
    const tokens = new PageTokens(key);
    const token = tokens.issue(binding, ['x']);
    for (const other of [
      { ...binding, dataset: 'sealed' },
      { ...binding, target: 'list:demo.Company' },
      { ...binding, target: 'link:demo.Company/c1/employees' },
      { ...binding, filter: '' },
      { ...binding, sort: 'id:asc:nulls-last' },
      { ...binding, arguments: '{"a":1}' },
    ]) {
      const err = refusal(() => tokens.open(token, other));
      expect(err.status).to.equal(400);
      expect(err.code).to.equal('INVALID_NEXT_TOKEN');
      expect(err.message).to.match(/another dataset, schema, link, filter, sort or arguments/);
      expect(err.details).to.deep.equal([{ path: 'nextToken', message: 'issued for another dataset, schema, link, filter, sort or arguments' }]);
    }
  });

  it('refuses a tampered token, and one signed with another key', () => {
    const tokens = new PageTokens(key);
    const token = tokens.issue(binding, [1, 'a']);
    const raw = Buffer.from(token, 'base64url');
    const forged = Buffer.from(raw.toString('latin1').replace('"a"', '"b"'), 'latin1').toString('base64url');
    expect(forged).not.to.equal(token);
    expect(refusal(() => tokens.open(forged, binding)).message).to.match(/signature does not match/);
    const flipped = Buffer.from(raw);
    flipped[flipped.length - 1] ^= 1;
    expect(refusal(() => tokens.open(flipped.toString('base64url'), binding)).message).to.match(/signature/);
    expect(refusal(() => new PageTokens(Buffer.alloc(32, 8)).open(token, binding)).message).to.match(/signature/);
  });

  it('refuses an expired token', () => {
    let now = Date.parse('2030-01-01T00:00:00Z');
    const tokens = new PageTokens(key, { ttlMs: 60_000, now: () => now });
    const token = tokens.issue(binding, ['a']);
    now += 59_000;
    expect(tokens.open(token, binding)).to.deep.equal(['a']);
    now += 2_000;
    expect(refusal(() => tokens.open(token, binding)).message).to.match(/expired/);
  });

  it('refuses what is not a token at all', () => {
    const tokens = new PageTokens(key);
    for (const bad of ['', 'abc', 'not a token!', '%%%', 'A'.repeat(9000), Buffer.alloc(40).toString('base64url')]) {
      const err = refusal(() => tokens.open(bad, binding));
      expect(err.code).to.equal('INVALID_NEXT_TOKEN');
    }
  });

  it('creates the key once under DATA_DIR (0600) and reuses it; DAS_PAGE_TOKEN_KEY overrides it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'das-tokens-'));
    const first = loadPageTokenKey(dir, dataPlaneSettings({}));
    expect(first.length).to.equal(32);
    expect(statSync(pageTokenKeyPath(dir)).mode & 0o777).to.equal(0o600);
    expect(loadPageTokenKey(dir, dataPlaneSettings({})).equals(first)).to.equal(true);
    const configured = 'k'.repeat(40);
    expect(loadPageTokenKey(dir, { DAS_PAGE_TOKEN_KEY: configured }).toString()).to.equal(configured);
    expect(() => dataPlaneSettings({ DAS_PAGE_TOKEN_KEY: 'short' })).to.throw('DAS_PAGE_TOKEN_KEY=(a value, not shown) is not allowed: at least 32 bytes of text');
    writeFileSync(pageTokenKeyPath(dir), 'abc\n');
    expect(() => loadPageTokenKey(dir, dataPlaneSettings({}))).to.throw(/too short; delete it/);
    expect(readFileSync(pageTokenKeyPath(dir), 'utf8')).to.equal('abc\n');
  });
});
