/** Value conversions between PostgreSQL and record JSON. */
import pg from 'pg';

const { types } = pg;
const INT8 = 20;
const DATE = 1082;
const TIMESTAMPTZ = 1184;
const TIMESTAMP = 1114;

/**
 * Record reads: bigint as a JSON number (record integers are JSON numbers, exact to 2^53), dates
 * as `YYYY-MM-DD` strings (no time-zone shift), timestamps as ISO-8601 strings.
 */
export const recordTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8) return (v: string) => {
      const n = Number(v);
      return Number.isSafeInteger(n) ? n : v;
    };
    if (oid === DATE) return (v: string) => v;
    if (oid === TIMESTAMPTZ || oid === TIMESTAMP) {
      const parseDate = types.getTypeParser(oid, 'text') as (v: string) => Date;
      return (v: string) => {
        const date = parseDate(v);
        return Number.isNaN(date.getTime()) ? v : date.toISOString(); // 'infinity' stays as it is
      };
    }
    return types.getTypeParser(oid, format as 'text');
  },
};
