/** Record validation's checks after the schema (record-validation.ts): NUL in text, indexed values over the store's limit. */
import { expect } from 'chai';
import { hasNul, nulPath, validateRecordData } from './record-validation.js';
import { ApiError } from './errors.js';
import type { DatasetConfig } from '../../../model/types.js';

const dataset = {
  id: 'demo',
  schemas: {
    'demo.Person': {
      properties: {
        name: { type: 'string', sortable: true },
        note: { type: 'string' },
        address: { type: 'object', properties: { street: { type: 'string' }, postcode: { type: 'string', sortable: true } } },
        employer: { type: 'link', schema: 'demo.Person', sortable: true },
      },
    },
  },
} as unknown as DatasetConfig;

const refusal = (data: Record<string, unknown>, limits: { indexedKeyBytes?: number; id?: string } = {}) => {
  try {
    validateRecordData(dataset, 'demo.Person', data, true, '$.create.data', limits);
    return undefined;
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    return { code: err.code, path: err.details[0]?.path };
  }
};

describe('record validation (record-validation.ts)', () => {
  it('the quick NUL test agrees with the walk that names the path, at any depth, in arrays and under odd keys', () => {
    const values: unknown[] = [
      'plain', '\u0000', 'a\u0000', '', 0, null, true, [], {}, ['a', ['b', ['\u0000']]], { a: { b: { c: 'x\u0000y' } } }, { '\u0000': 'key only' },
      JSON.parse('{"__proto__": "a\\u0000"}'), JSON.parse('{"__proto__": {"x": "ok"}, "y": "ok"}'), { constructor: 'c\u0000' }, [1, 2, { z: null }],
    ];
    for (const value of values) expect(hasNul(value), JSON.stringify(value)).to.equal(nulPath(value, '$') !== undefined);
  });

  it('refuses NUL in text with the JSON path of the first value holding it', () => {
    expect(refusal({ name: 'ok', note: 'fine', address: { street: 'x\u0000' } })).to.deep.equal({ code: 'INVALID_TEXT', path: '$.create.data.address.street' });
    expect(refusal({ employer: { id: 'a\u0000' } })).to.deep.equal({ code: 'INVALID_TEXT', path: '$.create.data.employer.id' });
    expect(refusal({ name: 'ok', address: { street: 'x', postcode: 'N1' } })).to.equal(undefined);
  });

  it('refuses an indexed value over the store\'s limit, sortable fields only, nested and links included, the same on every call', () => {
    for (let round = 0; round < 2; round++) {
      expect(refusal({ name: 'x'.repeat(100) }, { indexedKeyBytes: 64, id: 'p1' })).to.deep.equal({ code: 'VALUE_TOO_LARGE', path: '$.create.data.name' });
      expect(refusal({ address: { postcode: 'é'.repeat(40) } }, { indexedKeyBytes: 64 })).to.deep.equal({ code: 'VALUE_TOO_LARGE', path: '$.create.data.address.postcode' });
      expect(refusal({ employer: { id: 'e'.repeat(70) } }, { indexedKeyBytes: 64, id: 'p1' })).to.deep.equal({ code: 'VALUE_TOO_LARGE', path: '$.create.data.employer' });
      expect(refusal({ note: 'n'.repeat(1000), address: { street: 's'.repeat(1000) } }, { indexedKeyBytes: 64, id: 'p1' }), 'not sortable').to.equal(undefined);
      expect(refusal({ name: 'x'.repeat(20) }, { indexedKeyBytes: 64, id: 'p1' })).to.equal(undefined);
    }
  });
});
