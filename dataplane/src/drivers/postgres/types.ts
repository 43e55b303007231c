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
  // pg asks for the parsers of every result's columns: hand out the same functions each time.
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8) return safeInteger;
    if (oid === DATE) return asWritten;
    if (oid === TIMESTAMPTZ) return isoTimestamp;
    if (oid === TIMESTAMP) return localTimestamp;
    return types.getTypeParser(oid, format as 'text');
  },
};

function safeInteger(v: string): number | string {
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : v;
}

function asWritten(v: string): string {
  return v;
}

/** No zone: as stored. */
function localTimestamp(v: string): string {
  return v.replace(' ', 'T');
}

/** `YYYY-MM-DD hh:mm:ss[.ffffff]+00`, what a UTC session writes: the common case, without a regex. */
const UTC_TEXT = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,6})?\+00$/;

/**
 * `2026-11-22 22:40:48.123456+00` → `2026-11-22T22:40:48.123456Z`: ISO-8601 by string edits
 * (the session time zone is UTC or an offset), without a Date round trip on every row.
 */
export function isoTimestamp(value: string): string {
  if (value.length >= 22 && value.charCodeAt(10) === 32 && value.endsWith('+00') && UTC_TEXT.test(value)) {
    return `${value.slice(0, 10)}T${value.slice(11, -3)}Z`;
  }
  const match = /^(\d{4,}-\d\d-\d\d) (\d\d:\d\d:\d\d(?:\.\d+)?)([+-]\d\d)(?::?(\d\d))?(?::\d\d)?$/.exec(value);
  if (!match) return value; // infinity, BC dates: as PostgreSQL writes them
  const [, date, time, hours, minutes] = match;
  return hours === '+00' && !minutes ? `${date}T${time}Z` : `${date}T${time}${hours}:${minutes ?? '00'}`;
}
