/**
 * The scalar type names a raw SQL argument may carry (`{"value": …, "type": "<name>"}`): for each,
 * which JSON values fit, how the value is sent to the database, and the cast on its bind
 * placeholder so the database sees the intended type (`${minAge}` → `$1::integer`).
 *
 * Every value is sent as text; the cast turns it into the declared type on the server. `null` is
 * accepted for every type and binds SQL NULL of that type (for `json` too: write `'null'::jsonb`
 * in the SQL for a JSON null). Type names are case-sensitive and lower case; docs/raw-sql.md holds
 * the same table for users.
 */

export interface ScalarType {
  /** Canonical name (aliases resolve to it). */
  name: string;
  /** The PostgreSQL type of the bind placeholder cast. */
  postgres: string;
  /** What a fitting JSON value looks like, for error messages and docs. */
  expects: string;
  /** The text sent for a fitting non-null value, or an explanation of why the value does not fit. */
  encode(value: unknown): { ok: true; text: string } | { ok: false; reason: string };
}

const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const FLOAT4_MAX = 3.4028234663852886e38;

const ok = (text: string) => ({ ok: true as const, text });
const no = (reason: string) => ({ ok: false as const, reason });
const show = (value: unknown) => {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
};

function daysIn(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** A valid calendar date `YYYY-MM-DD` from year 0001 on (PostgreSQL has no year 0). */
function validDate(y: string, m: string, d: string): boolean {
  const year = Number(y);
  const month = Number(m);
  const day = Number(d);
  return year >= 1 && month >= 1 && month <= 12 && day >= 1 && day <= daysIn(year, month);
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
/** ISO-8601 date-time with a zone: `2024-05-01T12:30:00Z`, `…T12:30:00.123+02:00`, `…T12:30+0200`. */
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|z|[+-](\d{2})(?::?(\d{2}))?)$/;
const DECIMAL = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d{1,4})?$/;
const INTEGER_TEXT = /^[+-]?\d{1,19}$/;
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

function text(value: unknown) {
  if (typeof value !== 'string') return no(`${show(value)} is not a string`);
  if (value.includes('\u0000')) return no('a string must not contain NUL (\\u0000) characters');
  return ok(value);
}

function finite(value: unknown, what: string) {
  if (typeof value !== 'number' || !Number.isFinite(value)) return no(`${show(value)} is not ${what}`);
  return ok(String(value));
}

const TYPES: ScalarType[] = [
  { name: 'string', postgres: 'text', expects: 'a string', encode: text },
  {
    name: 'integer',
    postgres: 'integer',
    expects: `a whole JSON number from ${INT32_MIN} to ${INT32_MAX} (32-bit; use "long" beyond)`,
    encode(value) {
      if (typeof value !== 'number' || !Number.isInteger(value)) return no(`${show(value)} is not a whole JSON number`);
      if (value < INT32_MIN || value > INT32_MAX) return no(`${value} is outside the 32-bit range ${INT32_MIN}..${INT32_MAX}; use type "long"`);
      return ok(String(value));
    },
  },
  {
    name: 'long',
    postgres: 'bigint',
    expects: 'a whole JSON number within ±(2^53-1), or a string of decimal digits within the 64-bit range',
    encode(value) {
      if (typeof value === 'number') {
        if (!Number.isInteger(value)) return no(`${show(value)} is not a whole number`);
        if (!Number.isSafeInteger(value)) return no(`${value} is beyond ±(2^53-1), where JSON numbers lose precision; send it as a string of digits`);
        return ok(String(value));
      }
      if (typeof value === 'string' && INTEGER_TEXT.test(value)) {
        const n = BigInt(value);
        if (n < INT64_MIN || n > INT64_MAX) return no(`${value} is outside the 64-bit range`);
        return ok(n.toString());
      }
      return no(`${show(value)} is not a whole number or a string of decimal digits`);
    },
  },
  {
    name: 'float',
    postgres: 'real',
    expects: 'a finite JSON number (single precision)',
    encode(value) {
      const r = finite(value, 'a finite JSON number');
      if (r.ok && Math.abs(value as number) > FLOAT4_MAX) return no(`${value} is outside the single-precision range; use type "double"`);
      return r;
    },
  },
  { name: 'double', postgres: 'double precision', expects: 'a finite JSON number', encode: (value) => finite(value, 'a finite JSON number') },
  {
    name: 'decimal',
    postgres: 'numeric',
    expects: 'a finite JSON number, or a string holding a decimal number (exact), e.g. "12345678901234567890.125"',
    encode(value) {
      if (typeof value === 'number') return finite(value, 'a finite JSON number');
      if (typeof value === 'string' && DECIMAL.test(value)) return ok(value);
      return no(`${show(value)} is not a number or a string holding a decimal number`);
    },
  },
  {
    name: 'boolean',
    postgres: 'boolean',
    expects: 'true or false',
    encode: (value) => (typeof value === 'boolean' ? ok(value ? 'true' : 'false') : no(`${show(value)} is not true or false`)),
  },
  {
    name: 'date',
    postgres: 'date',
    expects: 'a calendar date "YYYY-MM-DD"',
    encode(value) {
      const m = typeof value === 'string' ? DATE.exec(value) : null;
      if (!m) return no(`${show(value)} is not a date "YYYY-MM-DD"`);
      if (!validDate(m[1], m[2], m[3])) return no(`${show(value)} is not a valid calendar date`);
      return ok(value as string);
    },
  },
  {
    name: 'timestamp',
    postgres: 'timestamp with time zone',
    expects: 'an ISO-8601 date-time with a zone, e.g. "2024-05-01T12:30:00Z" or "2024-05-01T14:30:00.5+02:00"',
    encode(value) {
      const m = typeof value === 'string' ? TIMESTAMP.exec(value) : null;
      if (!m) return no(`${show(value)} is not an ISO-8601 date-time with a zone (Z or ±hh:mm)`);
      const [, y, mo, d, h, mi, s, zh, zm] = m;
      const fits = validDate(y, mo, d) && Number(h) <= 23 && Number(mi) <= 59 && Number(s ?? 0) <= 59 && Number(zh ?? 0) <= 15 && Number(zm ?? 0) <= 59;
      if (!fits) return no(`${show(value)} is not a valid date-time`);
      return ok(value as string);
    },
  },
  {
    name: 'uuid',
    postgres: 'uuid',
    expects: 'a UUID string "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"',
    encode: (value) => (typeof value === 'string' && UUID.test(value) ? ok(value) : no(`${show(value)} is not a UUID`)),
  },
  {
    name: 'json',
    postgres: 'jsonb',
    expects: 'any JSON value (bound as JSON text)',
    encode: (value) => ok(JSON.stringify(value)),
  },
];

/** Other accepted names for the types above. */
const ALIASES: Record<string, string> = { text: 'string', number: 'double' };

const BY_NAME = new Map<string, ScalarType>([
  ...TYPES.map((t) => [t.name, t] as const),
  ...Object.entries(ALIASES).map(([alias, name]) => [alias, TYPES.find((t) => t.name === name)!] as const),
]);

/** Every recognised type name, aliases included, for error messages and docs. */
export const SCALAR_TYPE_NAMES: readonly string[] = [...BY_NAME.keys()];

export function scalarType(name: string): ScalarType | undefined {
  return BY_NAME.get(name);
}

/** The text to bind for a value (null for SQL NULL), or why it does not fit the type. */
export function encodeArgument(type: ScalarType, value: unknown): { ok: true; param: string | null } | { ok: false; reason: string } {
  if (value === null) return { ok: true, param: null };
  const result = type.encode(value);
  return result.ok ? { ok: true, param: result.text } : result;
}
