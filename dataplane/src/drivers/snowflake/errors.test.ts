import { expect } from 'chai';
import { StoreError } from '../../engine/contract.js';
import { isOutage, outageOf, rawQueryError, statementFailure } from './errors.js';

const sfError = (code: string, message = 'm', sqlState = '42000') => Object.assign(new Error(message), { code, sqlState });

describe('warehouse errors → store outcomes', () => {
  it('the SDK\'s network failures and Snowflake\'s "try again" are outages (503, retryable)', () => {
    expect(isOutage(Object.assign(new Error('connect ECONNREFUSED'), { code: 401001 }))).to.equal(true);
    expect(isOutage(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).to.equal(true);
    expect(isOutage(Object.assign(new Error('wrapped'), { cause: Object.assign(new Error('x'), { code: 'ECONNREFUSED' }) }))).to.equal(true);
    expect(outageOf(sfError('000605'))?.failure.kind).to.equal('unavailable');
    expect(isOutage(sfError('002003'))).to.equal(false);
  });

  it('a write statement\'s failure: values it cannot hold, storage missing; anything else rethrown', () => {
    expect(statementFailure(sfError('100038', "Numeric value 'x' is not recognized"), 's')).to.deep.include({ kind: 'invalid-value', reason: 'form', schema: 's' });
    expect(statementFailure(sfError('100040'), 's')).to.deep.include({ kind: 'invalid-value', reason: 'datetime' });
    expect(statementFailure(sfError('100039'), 's')).to.deep.include({ kind: 'invalid-value', reason: 'range' });
    expect(statementFailure(sfError('002003'), 's')).to.deep.equal({ kind: 'not-prepared', schema: 's' });
    expect(statementFailure(Object.assign(new Error('gone'), { code: 401001 }), 's').kind).to.equal('unavailable');
    const odd = sfError('999999');
    expect(() => statementFailure(odd, 's')).to.throw(odd);
  });

  it('raw SQL: the read-only role\'s refusal is a 403, SQL problems 400s with the warehouse\'s message, outages busy', () => {
    const denied = rawQueryError(sfError('003001', 'Insufficient privileges to operate on table', '42501'), 1000);
    expect(denied).to.be.instanceOf(StoreError);
    expect(denied.failure).to.deep.include({ kind: 'query-refused', problem: 'forbidden', code: 'PERMISSION_DENIED' });
    expect(denied.failure.kind === 'query-refused' && denied.failure.details[0]).to.deep.include({ path: '$.sql', snowflakeCode: '003001', sqlState: '42501' });
    expect(rawQueryError(sfError('001003', 'syntax error line 1 at position 7'), 1000).failure).to.deep.include({ problem: 'invalid', code: 'SQL_SYNTAX_ERROR' });
    expect(rawQueryError(sfError('002003'), 1000).failure).to.deep.include({ code: 'UNDEFINED_TABLE' });
    expect(rawQueryError(sfError('000630'), 1500).failure).to.deep.include({ code: 'QUERY_TIMEOUT', message: 'the query ran longer than the raw SQL time limit of 1500 ms' });
    expect(rawQueryError(Object.assign(new Error('x'), { code: 401001 }), 1000).failure).to.deep.include({ problem: 'busy', code: 'DATABASE_UNAVAILABLE' });
    expect(rawQueryError(sfError('123456'), 1000).failure).to.deep.include({ problem: 'invalid', code: 'SQL_ERROR' });
  });
});
