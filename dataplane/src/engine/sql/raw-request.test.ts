import { expect } from 'chai';
import { ApiError } from '../errors.js';
import { demoDataset } from '../../../test-support/rawsql-fixtures.js';
import { MAX_SQL_LENGTH, parseRawSqlRequest } from './raw-request.js';

const dataset = demoDataset();

function rejected(body: unknown): ApiError {
  try {
    parseRawSqlRequest(body, dataset);
  } catch (err) {
    expect(err).to.be.instanceOf(ApiError);
    expect((err as ApiError).status).to.equal(400);
    return err as ApiError;
  }
  throw new Error('expected a 400');
}

const expectError = (body: unknown, code: string, path: string) => {
  const err = rejected(body);
  expect(err.code, err.message).to.equal(code);
  expect(err.details[0].path).to.equal(path);
  return err;
};

describe('raw SQL request body', () => {
  it('parses sql, using and arguments', () => {
    const request = parseRawSqlRequest(
      { sql: 'SELECT 1', using: { p: 'demo.Person' }, arguments: { minAge: { value: 30, type: 'integer' }, nothing: { value: null, type: 'string' } } },
      dataset,
    );
    expect(request.sql).to.equal('SELECT 1');
    expect([...request.using]).to.deep.equal([['p', 'demo.Person']]);
    expect(request.arguments.get('minAge')).to.include({ name: 'minAge', param: '30' });
    expect(request.arguments.get('nothing')!.param).to.equal(null);
  });

  it(`refuses a text longer than ${MAX_SQL_LENGTH} characters with SQL_TOO_LONG; that many is fine`, () => {
    const err = expectError({ sql: `SELECT 1 ${' '.repeat(MAX_SQL_LENGTH)}` }, 'SQL_TOO_LONG', '$.sql');
    expect(err.message).to.equal(`"sql" is ${MAX_SQL_LENGTH + 9} characters long; at most ${MAX_SQL_LENGTH} are accepted`);
    expect(parseRawSqlRequest({ sql: `SELECT 1 --${'x'.repeat(MAX_SQL_LENGTH - 11)}` }, dataset).sql).to.have.length(MAX_SQL_LENGTH);
  });

  it('takes using and arguments as optional (absent or null)', () => {
    const request = parseRawSqlRequest({ sql: 'SELECT 1', using: null }, dataset);
    expect(request.using.size).to.equal(0);
    expect(request.arguments.size).to.equal(0);
  });

  it('400 when the body is not an object', () => {
    for (const body of [null, 'SELECT 1', [], 42]) expectError(body, 'INVALID_BODY', '$');
  });

  it('400 when sql is missing, not a string or blank', () => {
    expectError({}, 'SQL_REQUIRED', '$.sql');
    expectError({ sql: null }, 'SQL_REQUIRED', '$.sql');
    expectError({ sql: '' }, 'SQL_REQUIRED', '$.sql');
    expectError({ sql: ' \n\t ' }, 'SQL_REQUIRED', '$.sql');
    expectError({ sql: 'SELECT 1\u0000' }, 'INVALID_SQL', '$.sql');
    expectError({ sql: 42 }, 'INVALID_BODY', '$.sql');
    expectError({ sql: ['SELECT 1'] }, 'INVALID_BODY', '$.sql');
  });

  it('400 for an unknown body field', () => {
    expectError({ sql: 'SELECT 1', params: {} }, 'UNKNOWN_FIELD', '$.params');
    expectError({ sql: 'SELECT 1', 'odd key': 1 }, 'UNKNOWN_FIELD', '$["odd key"]');
  });

  it('400 when using is not a map of alias names to schemas of the dataset', () => {
    expectError({ sql: 'SELECT 1', using: ['demo.Person'] }, 'INVALID_USING', '$.using');
    expectError({ sql: 'SELECT 1', using: { p: 1 } }, 'INVALID_USING', '$.using.p');
    expectError({ sql: 'SELECT 1', using: { 'p x': 'demo.Person' } }, 'INVALID_USING', '$.using["p x"]');
    const err = expectError({ sql: 'SELECT 1', using: { p: 'demo.Persons' } }, 'UNKNOWN_SCHEMA', '$.using.p');
    expect(err.message).to.include('demo.Person');
    expectError({ sql: 'SELECT 1', using: { p: 'constructor' } }, 'UNKNOWN_SCHEMA', '$.using.p');
  });

  it('400 for arguments that are not {value, type} objects', () => {
    expectError({ sql: 'SELECT 1', arguments: [] }, 'INVALID_ARGUMENTS', '$.arguments');
    expectError({ sql: 'SELECT 1', arguments: { a: 5 } }, 'INVALID_ARGUMENTS', '$.arguments.a');
    expectError({ sql: 'SELECT 1', arguments: { '1a': { value: 1, type: 'integer' } } }, 'INVALID_ARGUMENTS', '$.arguments["1a"]');
    expectError({ sql: 'SELECT 1', arguments: { a: { value: 1, type: 'integer', cast: 'x' } } }, 'UNKNOWN_FIELD', '$.arguments.a.cast');
    expectError({ sql: 'SELECT 1', arguments: { a: { type: 'integer' } } }, 'INVALID_ARGUMENT_VALUE', '$.arguments.a.value');
  });

  it('400 for an unrecognised or non-string type', () => {
    const err = expectError({ sql: 'SELECT 1', arguments: { minAge: { value: 30, type: 'integr' } } }, 'INVALID_ARGUMENT_TYPE', '$.arguments.minAge.type');
    expect(err.message).to.include('integer').and.include('timestamp');
    expectError({ sql: 'SELECT 1', arguments: { minAge: { value: 30, type: 7 } } }, 'INVALID_ARGUMENT_TYPE', '$.arguments.minAge.type');
    expectError({ sql: 'SELECT 1', arguments: { minAge: { value: 30 } } }, 'INVALID_ARGUMENT_TYPE', '$.arguments.minAge.type');
    expectError({ sql: 'SELECT 1', arguments: { minAge: { value: 30, type: 'INTEGER' } } }, 'INVALID_ARGUMENT_TYPE', '$.arguments.minAge.type');
  });

  it('400 for a value that does not fit its type', () => {
    const cases: [unknown, string][] = [
      ['thirty', 'integer'],
      [2 ** 31, 'integer'],
      [2 ** 53 + 2, 'long'],
      ['1.5.1', 'decimal'],
      ['2023-02-29', 'date'],
      ['2024-01-01T00:00:00', 'timestamp'],
      ['yes', 'boolean'],
      [1, 'string'],
    ];
    for (const [value, type] of cases) {
      const err = expectError({ sql: 'SELECT 1', arguments: { v: { value, type } } }, 'INVALID_ARGUMENT_VALUE', '$.arguments.v.value');
      expect(err.message).to.include(type);
    }
  });
});
