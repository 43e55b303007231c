/**
 * TEST PEER ONLY. PostgreSQL results → Snowflake's JSON rowset (`rowtype` + `rowset` of strings),
 * encoded exactly as snowflake-sdk decodes them (node_modules/snowflake-sdk/dist/lib/connection/
 * result/column.js): fixed/real as decimal text, boolean "1"/"0", date as days since the epoch,
 * time as seconds since midnight, timestamp_ntz/ltz as epoch seconds with nine fractional digits,
 * timestamp_tz as "<epoch seconds> <1440 + offset minutes>" (result version 1), variant/object/
 * array as JSON text, binary as upper-case hex. Pure: values are PostgreSQL's text output (the
 * peer's sessions run with TimeZone UTC and DateStyle ISO).
 */
import { swapCase } from './errors.js';

export type SnowflakeType =
  | 'fixed'
  | 'real'
  | 'text'
  | 'boolean'
  | 'date'
  | 'time'
  | 'timestamp_ntz'
  | 'timestamp_ltz'
  | 'timestamp_tz'
  | 'variant'
  | 'object'
  | 'array'
  | 'binary';

export interface RowType {
  name: string;
  database: string;
  schema: string;
  table: string;
  type: SnowflakeType;
  nullable: boolean;
  precision: number | null;
  scale: number | null;
  length: number | null;
  byteLength: number | null;
  collation: null;
}

export interface PgField {
  name: string;
  dataTypeID: number;
  dataTypeModifier: number;
  tableID: number;
  columnID: number;
}

/** PostgreSQL type OIDs the peer knows. */
const OID = {
  bool: 16,
  bytea: 17,
  int8: 20,
  int2: 21,
  int4: 23,
  text: 25,
  oid: 26,
  json: 114,
  float4: 700,
  float8: 701,
  bpchar: 1042,
  varchar: 1043,
  date: 1082,
  time: 1083,
  timestamp: 1114,
  timestamptz: 1184,
  numeric: 1700,
  jsonb: 3802,
} as const;

/** The Snowflake type of a result column; `domain` is the peer domain a table column was declared with. */
export function snowflakeTypeOf(field: PgField, domain?: string): SnowflakeType {
  if (domain === 'variant' || domain === 'object' || domain === 'array' || domain === 'timestamp_ltz' || domain === 'timestamp_tz') return domain;
  switch (field.dataTypeID) {
    case OID.bool:
      return 'boolean';
    case OID.int2:
    case OID.int4:
    case OID.int8:
    case OID.numeric:
    case OID.oid:
      return 'fixed';
    case OID.float4:
    case OID.float8:
      return 'real';
    case OID.date:
      return 'date';
    case OID.time:
      return 'time';
    case OID.timestamp:
      return 'timestamp_ntz';
    case OID.timestamptz:
      return 'timestamp_ltz';
    case OID.json:
    case OID.jsonb:
      return 'variant';
    case OID.bytea:
      return 'binary';
    default:
      return 'text';
  }
}

function numericTypmod(mod: number): { precision: number; scale: number } | undefined {
  if (mod < 4) return undefined;
  const m = mod - 4;
  return { precision: (m >> 16) & 0xffff, scale: m & 0xffff };
}

/** Builds the rowtype entry; numbers without a declared scale take the largest scale seen in the values. */
export function rowTypeOf(field: PgField, type: SnowflakeType, values: (string | null)[], where: { database: string; schema: string }): RowType {
  let precision: number | null = null;
  let scale: number | null = null;
  let length: number | null = null;
  let byteLength: number | null = null;
  if (type === 'fixed') {
    const declared = field.dataTypeID === OID.numeric ? numericTypmod(field.dataTypeModifier) : undefined;
    if (declared) {
      precision = declared.precision;
      scale = declared.scale;
    } else if (field.dataTypeID === OID.numeric) {
      precision = 38;
      scale = Math.min(37, values.reduce((max, v) => Math.max(max, v && v.includes('.') ? v.length - v.indexOf('.') - 1 : 0), 0));
    } else {
      precision = field.dataTypeID === OID.int8 ? 19 : 38;
      scale = 0;
    }
  } else if (type === 'time' || type.startsWith('timestamp')) {
    scale = 9;
  } else if (type === 'text' || type === 'variant' || type === 'object' || type === 'array') {
    const declared = field.dataTypeID === OID.varchar && field.dataTypeModifier >= 4 ? field.dataTypeModifier - 4 : undefined;
    length = declared ?? 16777216;
    byteLength = declared !== undefined ? declared * 4 : 16777216;
  } else if (type === 'binary') {
    length = 8388608;
    byteLength = 8388608;
  }
  return {
    name: swapCase(field.name),
    database: where.database,
    schema: where.schema,
    table: '',
    type,
    nullable: true,
    precision,
    scale,
    length,
    byteLength,
    collation: null,
  };
}

const DATE_RE = /^(\d{4,})-(\d\d)-(\d\d)( BC)?$/;
const TIMESTAMP_RE = /^(\d{4,})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:\.(\d+))?(?:([+-])(\d\d)(?::?(\d\d))?(?::?(\d\d))?)?( BC)?$/;

function utcSeconds(y: number, mo: number, d: number, h = 0, mi = 0, s = 0): bigint {
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d);
  date.setUTCHours(h, mi, s, 0);
  return BigInt(date.getTime() / 1000);
}

/** Epoch nanoseconds as Snowflake's "<seconds>.<nine digits>" (floor division for negative values). */
function formatNanos(total: bigint): string {
  const sign = total < 0n ? '-' : '';
  const abs = total < 0n ? -total : total;
  return `${sign}${abs / 1_000_000_000n}.${(abs % 1_000_000_000n).toString().padStart(9, '0')}`;
}

export function parseTimestamp(text: string): { nanos: bigint; offsetMinutes: number } | undefined {
  const m = TIMESTAMP_RE.exec(text);
  if (!m) return undefined;
  let year = Number(m[1]);
  if (m[12]) year = 1 - year;
  const secs = utcSeconds(year, Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
  const frac = BigInt((m[7] ?? '').padEnd(9, '0').slice(0, 9) || '0');
  const offsetMinutes = m[8] ? (m[8] === '-' ? -1 : 1) * (Number(m[9]) * 60 + Number(m[10] ?? 0)) : 0;
  return { nanos: (secs - BigInt(offsetMinutes * 60)) * 1_000_000_000n + frac, offsetMinutes };
}

/** One PostgreSQL text value → the string Snowflake's JSON rowset carries for it. */
export function encodeValue(type: SnowflakeType, text: string | null): string | null {
  if (text === null) return null;
  switch (type) {
    case 'boolean':
      return text === 't' || text === 'true' ? '1' : '0';
    case 'date': {
      const m = DATE_RE.exec(text);
      if (!m) return text;
      const year = m[4] ? 1 - Number(m[1]) : Number(m[1]);
      return String(utcSeconds(year, Number(m[2]), Number(m[3])) / 86400n);
    }
    case 'time': {
      const m = /^(\d\d):(\d\d):(\d\d)(?:\.(\d+))?$/.exec(text);
      if (!m) return text;
      const secs = Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]);
      return `${secs}.${(m[4] ?? '').padEnd(9, '0').slice(0, 9)}`;
    }
    case 'timestamp_ntz':
    case 'timestamp_ltz': {
      const ts = parseTimestamp(text);
      return ts ? formatNanos(ts.nanos) : text;
    }
    case 'timestamp_tz': {
      const ts = parseTimestamp(text);
      return ts ? `${formatNanos(ts.nanos)} ${1440 + ts.offsetMinutes}` : text;
    }
    case 'binary':
      return text.startsWith('\\x') ? text.slice(2).toUpperCase() : text;
    default:
      return text;
  }
}

/** Session parameters every result carries: the SDK formats dates and timestamps with them. */
export const RESULT_PARAMETERS = [
  { name: 'TIMEZONE', value: 'UTC' },
  { name: 'TIMESTAMP_OUTPUT_FORMAT', value: 'YYYY-MM-DD HH24:MI:SS.FF3 TZHTZM' },
  { name: 'TIMESTAMP_NTZ_OUTPUT_FORMAT', value: 'YYYY-MM-DD HH24:MI:SS.FF3' },
  { name: 'TIMESTAMP_LTZ_OUTPUT_FORMAT', value: '' },
  { name: 'TIMESTAMP_TZ_OUTPUT_FORMAT', value: '' },
  { name: 'DATE_OUTPUT_FORMAT', value: 'YYYY-MM-DD' },
  { name: 'TIME_OUTPUT_FORMAT', value: 'HH24:MI:SS' },
  { name: 'BINARY_OUTPUT_FORMAT', value: 'HEX' },
  { name: 'CLIENT_RESULT_CHUNK_SIZE', value: 160 },
  { name: 'QUERY_CONTEXT_CACHE_SIZE', value: 5 },
];

/** Statement type ids the SDK tells DML apart by (connection/result/statement_type.js). */
export const STATEMENT_TYPE = {
  select: 0x1000,
  insert: 0x3100,
  update: 0x3200,
  delete: 0x3300,
  merge: 0x3400,
  /** COPY INTO <table>: DML, but not one whose rows the SDK counts. */
  copy: 0x3600,
  session: 0x4000,
  transaction: 0x5000,
  ddl: 0x6000,
} as const;

export function fixedColumn(name: string): RowType {
  return { name, database: '', schema: '', table: '', type: 'fixed', nullable: false, precision: 19, scale: 0, length: null, byteLength: null, collation: null };
}

export function textColumn(name: string): RowType {
  return { name, database: '', schema: '', table: '', type: 'text', nullable: true, precision: null, scale: null, length: 16777216, byteLength: 16777216, collation: null };
}
