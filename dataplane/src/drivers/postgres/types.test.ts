import { expect } from 'chai';
import { isoTimestamp, recordTypes } from './types.js';

describe('PostgreSQL value conversions', () => {
  it('writes timestamptz text as ISO-8601, UTC as Z, offsets kept', () => {
    expect(isoTimestamp('2026-11-22 22:40:48.123456+00')).to.equal('2026-11-22T22:40:48.123456Z');
    expect(isoTimestamp('2026-11-22 22:40:48+00')).to.equal('2026-11-22T22:40:48Z');
    expect(isoTimestamp('2026-11-22 22:40:48.5+05:30')).to.equal('2026-11-22T22:40:48.5+05:30');
    expect(isoTimestamp('2026-11-22 22:40:48-08')).to.equal('2026-11-22T22:40:48-08:00');
    expect(isoTimestamp('12026-11-22 22:40:48+00')).to.equal('12026-11-22T22:40:48Z');
    expect(isoTimestamp('infinity')).to.equal('infinity');
    expect(isoTimestamp('2026-11-22 22:40:48+00 BC')).to.equal('2026-11-22 22:40:48+00 BC');
  });

  it('bigint as a number while exact, text beyond; dates as written', () => {
    const int8 = recordTypes.getTypeParser(20) as (v: string) => unknown;
    expect(int8('42')).to.equal(42);
    expect(int8('9007199254740993')).to.equal('9007199254740993');
    expect((recordTypes.getTypeParser(1082) as (v: string) => unknown)('2026-02-28')).to.equal('2026-02-28');
    expect((recordTypes.getTypeParser(1114) as (v: string) => unknown)('2026-02-28 10:00:00')).to.equal('2026-02-28T10:00:00');
  });
});
