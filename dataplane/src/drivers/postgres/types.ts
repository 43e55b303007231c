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
    if (oid === TIMESTAMPTZ) return isoTimestamp;
    if (oid === TIMESTAMP) return (v: string) => v.replace(' ', 'T'); // no zone: as stored
    return types.getTypeParser(oid, format as 'text');
  },
};

/**
 * `2026-11-22 22:40:48.123456+00` → `2026-11-22T22:40:48.123456Z`: ISO-8601 by string edits
 * (the session time zone is UTC or an offset), without a Date round trip on every row.
 */
export function isoTimestamp(value: string): string {
  const match = /^(\d{4,}-\d\d-\d\d) (\d\d:\d\d:\d\d(?:\.\d+)?)([+-]\d\d)(?::?(\d\d))?(?::\d\d)?$/.exec(value);
  if (!match) return value; // infinity, BC dates: as PostgreSQL writes them
  const [, date, time, hours, minutes] = match;
  return hours === '+00' && !minutes ? `${date}T${time}Z` : `${date}T${time}${hours}:${minutes ?? '00'}`;
}
