/** WeakCache: a WeakMap that answers its last key at once, and never another key's value. */
import { expect } from 'chai';
import { WeakCache } from './weak-cache.js';

describe('WeakCache', () => {
  it('answers each key its own value, the last one and earlier ones alike; an unknown key (a new config object) gets nothing', () => {
    const cache = new WeakCache<object, string>();
    const first = {};
    const second = {};
    cache.set(first, 'first');
    expect(cache.get(first)).to.equal('first');
    // A new object equal in content is another key: a reloaded config is compiled afresh.
    expect(cache.get({})).to.equal(undefined);
    cache.set(second, 'second');
    expect(cache.get(second)).to.equal('second');
    expect(cache.get(first)).to.equal('first');
    expect(cache.get(second)).to.equal('second');
    cache.set(first, 'replaced');
    expect(cache.get(first)).to.equal('replaced');
    expect(cache.get(second)).to.equal('second');
  });
});
