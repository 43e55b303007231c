import { expect } from 'chai';
import { encodeArgument, scalarType, SCALAR_TYPE_NAMES } from './scalar-types.js';

function encode(type: string, value: unknown) {
  const t = scalarType(type);
  if (!t) throw new Error(`no type ${type}`);
  return encodeArgument(t, value);
}

const fits = (type: string, value: unknown, text?: string | null) => {
  const r = encode(type, value);
  expect(r.ok, `${type} ${JSON.stringify(value)} should fit: ${r.ok ? '' : r.reason}`).to.equal(true);
  if (r.ok && text !== undefined) expect(r.param).to.equal(text);
};
const misfits = (type: string, value: unknown) => {
  const r = encode(type, value);
  expect(r.ok, `${type} ${JSON.stringify(value)} should not fit`).to.equal(false);
};

describe('raw SQL argument types', () => {
  it('recognises the documented names, lower case only', () => {
    expect(SCALAR_TYPE_NAMES).to.have.members(['string', 'text', 'integer', 'long', 'float', 'double', 'number', 'decimal', 'boolean', 'date', 'timestamp', 'uuid', 'json']);
    for (const name of ['String', 'INTEGER', 'int', 'varchar', 'toString', '__proto__', 'constructor', '']) expect(scalarType(name), name).to.equal(undefined);
    expect(scalarType('text')!.name).to.equal('string');
    expect(scalarType('number')!.name).to.equal('double');
  });

  it('binds null as SQL NULL for every type', () => {
    for (const name of SCALAR_TYPE_NAMES) fits(name, null, null);
  });

  it('string: strings without NUL', () => {
    fits('string', "x' OR '1'='1", "x' OR '1'='1");
    fits('string', '');
    misfits('string', 1);
    misfits('string', 'a\u0000b');
  });

  it('integer: whole numbers in the 32-bit range', () => {
    fits('integer', 2147483647, '2147483647');
    fits('integer', -2147483648, '-2147483648');
    misfits('integer', 2147483648);
    misfits('integer', 1.5);
    misfits('integer', '5');
    misfits('integer', true);
  });

  it('long: safe integers, or digit strings within 64 bits', () => {
    fits('long', 9007199254740991, '9007199254740991');
    fits('long', '9223372036854775807', '9223372036854775807');
    fits('long', '-9223372036854775808', '-9223372036854775808');
    misfits('long', 9007199254740992);
    misfits('long', '9223372036854775808');
    misfits('long', '1.0');
    misfits('long', '12abc');
  });

  it('float and double: finite numbers', () => {
    fits('double', 1.25, '1.25');
    fits('double', 1e300, '1e+300');
    fits('float', 3.5, '3.5');
    misfits('float', 1e39);
    misfits('double', '1.5');
  });

  it('decimal: numbers or decimal strings', () => {
    fits('decimal', 0.1, '0.1');
    fits('decimal', '12345678901234567890.125', '12345678901234567890.125');
    fits('decimal', '-1.5e3', '-1.5e3');
    misfits('decimal', '1,5');
    misfits('decimal', 'NaN');
    misfits('decimal', '');
  });

  it('boolean: strictly true or false', () => {
    fits('boolean', true, 'true');
    fits('boolean', false, 'false');
    misfits('boolean', 'true');
    misfits('boolean', 0);
  });

  it('date: valid calendar dates YYYY-MM-DD', () => {
    fits('date', '2024-02-29', '2024-02-29');
    misfits('date', '2023-02-29');
    misfits('date', '2024-13-01');
    misfits('date', '2024-04-31');
    misfits('date', '0000-01-01');
    misfits('date', '2024-1-1');
    misfits('date', '2024-01-01T00:00:00Z');
  });

  it('timestamp: ISO-8601 with a zone', () => {
    fits('timestamp', '2024-05-01T12:30:00Z');
    fits('timestamp', '2024-05-01T12:30:00.123456+02:00');
    fits('timestamp', '2024-05-01T12:30-0530');
    misfits('timestamp', '2024-05-01T12:30:00');
    misfits('timestamp', '2024-05-01 12:30:00Z');
    misfits('timestamp', '2024-02-30T12:30:00Z');
    misfits('timestamp', '2024-05-01T24:00:00Z');
    misfits('timestamp', 1714566600000);
  });

  it('uuid and json', () => {
    fits('uuid', '123e4567-e89b-12d3-a456-426614174000');
    misfits('uuid', '123e4567e89b12d3a456426614174000');
    fits('json', { a: [1, null] }, '{"a":[1,null]}');
    fits('json', 'text', '"text"');
    fits('json', [1, 2], '[1,2]');
  });
});
