/** Value conversions between PostgreSQL and record JSON. */
import pg from 'pg';
import type { ColumnParser } from './prepared-read.js';

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

/** The type OIDs of the column types the driver creates (dialect.ts column types). */
const COLUMN_TYPE_OIDS: Record<string, number> = {
  text: 25,
  integer: 23,
  bigint: INT8,
  'double precision': 701,
  boolean: 16,
  date: DATE,
  'timestamp with time zone': TIMESTAMPTZ,
};

/** The parser of a text-format column of a type the driver creates: what a query with recordTypes would apply. */
export function columnParser(sqlType: string): ColumnParser {
  const oid = COLUMN_TYPE_OIDS[sqlType];
  if (oid === undefined) throw new Error(`no parser for column type "${sqlType}"`);
  return recordTypes.getTypeParser(oid, 'text') as ColumnParser;
}

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
