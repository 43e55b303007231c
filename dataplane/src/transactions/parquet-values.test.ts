import { expect } from 'chai';
import { exactDecimal } from './parquet-values.js';

describe('exactDecimal: the double a Parquet DECIMAL stores, from hyparquet\'s product', () => {
  it('gives the nearest double to unscaled / 10^scale, not the product\'s rounding', () => {
    expect(115 * 0.01).to.not.equal(1.15); // what hyparquet computes
    expect(exactDecimal(115 * 0.01, 2)).to.equal(1.15);
    expect(exactDecimal(-4999999 * 0.01, 2)).to.equal(-49999.99);
    expect(exactDecimal(42, 0)).to.equal(42);
  });

  it('answers undefined for a value of more than 15 significant digits, which no double holds exactly', () => {
    expect(exactDecimal(12345678901234567890123456789 * 1e-10, 10)).to.equal(undefined);
    expect(exactDecimal(2 ** 51, 0)).to.equal(undefined);
    expect(exactDecimal(2 ** 51 - 1, 0)).to.equal(2 ** 51 - 1);
  });
});
