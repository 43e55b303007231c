import { expect } from 'chai';
import { ApiError } from '../engine/errors.js';
import { serverErrorLevel } from './errors.js';

describe('how loud a 5xx answer is logged', () => {
  it('a paused dataset is info, a retryable 503 (store down, queue full, draining caps) warn, anything else error', () => {
    expect(serverErrorLevel(new ApiError(503, 'DATASET_PAUSED', 'paused', [], 30))).to.equal('info');
    expect(serverErrorLevel(new ApiError(503, 'DATABASE_UNAVAILABLE', 'down', [], 1))).to.equal('warn');
    expect(serverErrorLevel(new ApiError(503, 'ASYNC_QUEUE_FULL', 'full', [], 1))).to.equal('warn');
    expect(serverErrorLevel(new ApiError(500, 'INTERNAL', 'broken'))).to.equal('error');
    expect(serverErrorLevel(new ApiError(502, 'UPSTREAM', 'bad gateway'))).to.equal('error');
  });
});
