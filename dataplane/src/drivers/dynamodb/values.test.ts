import { expect } from 'chai';
import { compileFilter } from '../../../../model/filter.js';
import type { RecordSchemaDef } from '../../../../model/types.js';
import { filterExpression } from './filter-expression.js';
import { itemSize, shownTimestamp, storedData, storedTimestamp } from './values.js';

const schema: RecordSchemaDef = {
  properties: { name: { type: 'string' }, at: { type: 'timestamp' }, address: { type: 'object', properties: { city: { type: 'string' } } }, owner: { type: 'link', schema: 'x.Y' } },
};

describe('DynamoDB values and filter expressions (pure)', () => {
  it('stores timestamps in one UTC form whose text order is instant order, and shows them without padding', () => {
    expect(storedTimestamp('2024-01-01T10:00:00+02:00')).to.equal('2024-01-01T08:00:00.000000000Z');
    expect(storedTimestamp('2024-01-01T08:00:00.5Z')).to.equal('2024-01-01T08:00:00.500000000Z');
    expect(storedTimestamp('2023-12-31T23:59:59-05:00')).to.equal('2024-01-01T04:59:59.000000000Z');
    expect(shownTimestamp('2024-01-01T08:00:00.500000000Z')).to.equal('2024-01-01T08:00:00.5Z');
    expect(shownTimestamp('2024-01-01T08:00:00.000000000Z')).to.equal('2024-01-01T08:00:00Z');
  });

  it('merges like PostgreSQL: a given null unsets, an absent property keeps its value; only schema fields are kept', () => {
    const previous = storedData(schema, { name: 'A', address: { city: 'Oslo' }, owner: { id: 'c1' }, extra: 1 });
    expect(previous).to.deep.equal({ name: 'A', address: { city: 'Oslo' }, owner: { id: 'c1' } });
    expect(storedData(schema, { name: null, address: { city: 'Paris' } }, previous)).to.deep.equal({ address: { city: 'Paris' }, owner: { id: 'c1' } });
    expect(storedData(schema, { name: 'B' })).to.deep.equal({ name: 'B' });
  });

  it('counts item sizes as DynamoDB does (names and UTF-8 values)', () => {
    expect(itemSize({ id: 'abc' })).to.equal(5);
    expect(itemSize({ s: 'é' })).to.equal(3);
    expect(itemSize({ d: { a: 'x'.repeat(1000) } })).to.be.within(1003, 1010);
  });

  it('binds every name and value: no literal reaches the expression text', () => {
    const f = filterExpression(compileFilter("name == 'x) OR (1=1' and address.city != 'Oslo' or owner.id in ('a', 'b') or at > '2024-01-01T10:00:00+02:00'", schema))!;
    expect(f.expression).not.to.match(/x\)|Oslo|'a'|2024/);
    expect(f.expression).to.equal('((#n0.#n1 = :v0 AND (attribute_not_exists(#n0.#n2.#n3) OR #n0.#n2.#n3 <> :v1)) OR #n0.#n4.#n5 IN (:v2, :v3) OR #n0.#n6 > :v4)');
    expect(f.names).to.deep.equal({ '#n0': 'd', '#n1': 'name', '#n2': 'address', '#n3': 'city', '#n4': 'owner', '#n5': 'id', '#n6': 'at' });
    expect(f.values[':v4']).to.equal('2024-01-01T08:00:00.000000000Z');
  });

  it('splits IN lists over 100 values, and leaves a filter over 4 KB to the in-memory evaluator', () => {
    const values = Array.from({ length: 150 }, (_, i) => `'v${i}'`).join(', ');
    expect(filterExpression(compileFilter(`name in (${values})`, schema))!.expression).to.match(/^\(#n0\.#n1 IN \(.*\) OR #n0\.#n1 IN \(.*\)\)$/);
    const long = Array.from({ length: 300 }, () => `name==''`).join(' or ');
    expect(filterExpression(compileFilter(long, schema))).to.equal(undefined);
  });
});
