/** Sort strings: the spec's rules 1–5, several keys, the id as tie-breaker, errors with positions. */
import { expect } from 'chai';
import { FilterError } from './filter.js';
import { compareUnder, compileSort, parseSort, sortText } from './sort.js';
import type { RecordSchemaDef } from './types.js';

const person: RecordSchemaDef = {
  properties: {
    name: { type: 'string' },
    age: { type: 'integer' },
    address: { type: 'object', properties: { postcode: { type: 'string' } } },
    employer: { type: 'link', schema: 'demo.Company' },
  },
};

const text = (sort: string | undefined) => sortText(compileSort(sort, person));

function errorOf(run: () => unknown): FilterError {
  try {
    run();
  } catch (err) {
    expect(err).to.be.instanceOf(FilterError);
    return err as FilterError;
  }
  throw new Error('expected a FilterError');
}

describe('model: sort rules', () => {
  it('rule 1: a field name, then an optional direction, then an optional nulls order', () => {
    expect(text('age:desc:nulls-last')).to.equal('age:desc:nulls-last,id:asc:nulls-last');
    expect(text('age:asc:nulls-first')).to.equal('age:asc:nulls-first,id:asc:nulls-last');
    expect(text('address.postcode:desc')).to.equal('address.postcode:desc:nulls-first,id:asc:nulls-last');
  });

  it('rule 2: no direction is ascending', () => {
    expect(text('name')).to.equal('name:asc:nulls-last,id:asc:nulls-last');
    expect(text('name:nulls-first')).to.equal('name:asc:nulls-first,id:asc:nulls-last');
  });

  it('rule 3: no nulls order is nulls last ascending and nulls first descending', () => {
    expect(parseSort('age:asc')[0].nulls).to.equal('last');
    expect(parseSort('age:desc')[0].nulls).to.equal('first');
    expect(parseSort('age')[0].nulls).to.equal('last');
  });

  it('rule 4: the shorthands :first and :last stand for :nulls-first and :nulls-last', () => {
    expect(text('age:first')).to.equal(text('age:nulls-first'));
    expect(text('age:last')).to.equal(text('age:nulls-last'));
    expect(text('age:desc:last')).to.equal('age:desc:nulls-last,id:asc:nulls-last');
    expect(text('age:desc:first')).to.equal('age:desc:nulls-first,id:asc:nulls-last');
    expect(text('AGE'.toLowerCase() + ':DESC:Nulls-Last')).to.equal('age:desc:nulls-last,id:asc:nulls-last');
  });

  it('rule 5: ascending is numbers, A–Z, a–z, then nulls; descending the reverse', () => {
    const values = ['b', null, 'B', '9', 'a', 'Z', '10', null, 'A', 'z'];
    const asc = compileSort('name', person)[0];
    const desc = compileSort('name:desc', person)[0];
    expect([...values].sort((x, y) => compareUnder(asc, x, y))).to.deep.equal(['10', '9', 'A', 'B', 'Z', 'a', 'b', 'z', null, null]);
    expect([...values].sort((x, y) => compareUnder(desc, x, y))).to.deep.equal([null, null, 'z', 'b', 'a', 'Z', 'B', 'A', '9', '10']);
    const ages = [3, null, -1, 20];
    expect([...ages].sort((x, y) => compareUnder(compileSort('age:nulls-first', person)[0], x, y))).to.deep.equal([null, -1, 3, 20]);
    expect([...ages].sort((x, y) => compareUnder(compileSort('age:desc:last', person)[0], x, y))).to.deep.equal([20, 3, -1, null]);
  });

  it('orders text by code point, as COLLATE "C" on UTF-8 does (not by UTF-16 unit)', () => {
    const key = compileSort('name', person)[0];
    // U+FF21 (fullwidth A) is below U+1F600 by code point, above its surrogates by UTF-16 unit.
    expect(['😀', 'Ａ', 'é', 'e'].sort((x, y) => compareUnder(key, x, y))).to.deep.equal(['e', 'é', 'Ａ', '😀']);
  });

  it('takes several keys separated by commas, and the id breaks ties', () => {
    expect(text('address.postcode:desc, name ,age:first')).to.equal('address.postcode:desc:nulls-first,name:asc:nulls-last,age:asc:nulls-first,id:asc:nulls-last');
    expect(text(undefined)).to.equal('id:asc:nulls-last');
    expect(text('id:desc')).to.equal('id:desc:nulls-first');
    expect(text('name,id:desc')).to.equal('name:asc:nulls-last,id:desc:nulls-first');
    expect(text('employer')).to.equal(text('employer.id'));
    expect(text('version:desc')).to.equal('version:desc:nulls-first,id:asc:nulls-last');
  });

  const refused: [string, number, RegExp][] = [
    ['', 1, /empty/],
    ['name,', 6, /key is empty/],
    ['name,,age', 6, /key is empty/],
    ['name:up', 6, /unknown sort modifier ":up"/],
    ['age:desc:asc', 10, /direction given twice/],
    ['age:first:desc', 11, /direction comes before the nulls order/],
    ['age:first:last', 11, /nulls order given twice/],
    ['age, nickname', 6, /unknown property "nickname"/],
    ['address', 1, /"address" is an object/],
    ['employer.name', 1, /only by its id/],
    ['name, age, name:desc', 12, /"name" is sorted on twice/],
    ['employer, employer.id', 11, /"employer.id" is sorted on twice/],
    ['na me', 1, /"na me" is not a property name/],
    ['a,b,c,d,e,f,g,h,i', 17, /at most 8 keys/],
  ];
  for (const [sort, position, message] of refused) {
    it(`refuses ${JSON.stringify(sort)} at position ${position}`, () => {
      const err = errorOf(() => compileSort(sort, person));
      expect(err.message).to.match(message);
      expect(err.position).to.equal(position);
    });
  }
});
