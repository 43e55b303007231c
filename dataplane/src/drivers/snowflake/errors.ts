/**
 * What the warehouse's errors mean in the store's terms (engine/store-outcomes.ts). Snowflake
 * errors carry Snowflake's own code (a six-digit string: `002003` object does not exist, `003001`
 * insufficient privileges, `100038` a value that does not convert, …) and a SQLSTATE; the SDK's own
 * failures (no connection, a response that never came) carry its numeric codes (401001 …).
 */
import { StoreError, type ErrorDetail, type StoreFailure } from '../../engine/contract.js';

interface SnowflakeErrorLike {
  code?: unknown;
  sqlState?: unknown;
  message?: unknown;
}

const codeOf = (err: unknown): string => {
  const code = (err as SnowflakeErrorLike | undefined)?.code;
  return code === undefined || code === null ? '' : String(code);
};

/** The SDK's network and response failures, and Node's socket errors. */
const SDK_OUTAGE_CODES = new Set(['401001', '401002', '401003', '402001', '402002', '405501', '405502', '405503']);
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNABORTED', 'ESOCKETTIMEDOUT']);
/** Snowflake's own "try again": the service is unavailable, overloaded or restarting; the session expired. */
const SERVER_OUTAGE_CODES = new Set(['000605', '000606', '000625', '390111', '390112', '390114']);

export function isOutage(err: unknown): boolean {
  if (err instanceof StoreError) return err.failure.kind === 'unavailable';
  const code = codeOf(err);
  if (SDK_OUTAGE_CODES.has(code) || SOCKET_CODES.has(code) || SERVER_OUTAGE_CODES.has(code)) return true;
  const cause = (err as { cause?: unknown } | undefined)?.cause;
  return cause !== undefined && cause !== err && isOutage(cause);
}

/** The failure as a retryable store outcome, or undefined when it is something else. */
export function outageOf(err: unknown): StoreError | undefined {
  if (err instanceof StoreError) return err.failure.kind === 'unavailable' ? err : undefined;
  if (!isOutage(err)) return undefined;
  return new StoreError({ kind: 'unavailable', detail: `Snowflake: ${codeOf(err) || 'connection lost'}` });
}

/** Codes of a value the column cannot take, by kind. */
const VALUE_CODES: Record<string, 'range' | 'datetime' | 'form'> = {
  '100038': 'form', // numeric value not recognized
  '100037': 'form', // boolean value not recognized
  '100072': 'form', // NULL into a NOT NULL column
  '100039': 'range', // numeric value out of range
  '100046': 'range', // number out of representable range
  '100035': 'datetime', // timestamp not recognized
  '100040': 'datetime', // date not recognized
  '100096': 'datetime',
  '100097': 'datetime',
};

/** What a failed write or read statement means; anything unforeseen is rethrown as it is (a 500). */
export function statementFailure(err: unknown, schema: string): StoreFailure {
  if (err instanceof StoreError) return err.failure;
  const outage = outageOf(err);
  if (outage) return outage.failure;
  const code = codeOf(err);
  const reason = VALUE_CODES[code];
  if (reason) return { kind: 'invalid-value', reason, schema, detail: String((err as SnowflakeErrorLike).message ?? '') };
  // The table or a column is missing: the dataset's storage is not (or no longer) prepared.
  if (code === '002003' || code === '000904') return { kind: 'not-prepared', schema };
  throw err;
}

/** A failure of a request-level call (a read, an atomic write) as the error to throw. */
export function requestError(err: unknown, schema: string): unknown {
  try {
    return new StoreError(statementFailure(err, schema));
  } catch (unforeseen) {
    return unforeseen;
  }
}

/** Longest message passed on, in characters. */
const MAX_MESSAGE = 2000;
const clip = (message: string) => (message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE)}… (${message.length - MAX_MESSAGE} more characters)` : message);

export const refused = (problem: 'invalid' | 'forbidden' | 'conflict' | 'busy', code: string, message: string, details: ErrorDetail[] = []) =>
  new StoreError({ kind: 'query-refused', problem, code, message, details });

/**
 * An error the warehouse raised for a raw SQL statement, as what the store refused and why: what
 * the SQL text can cause is `invalid` (or `forbidden`: the read-only role may not write) with the
 * warehouse's own message and codes; connection trouble is `busy` without internals.
 */
export function rawQueryError(err: unknown, timeoutMs: number): StoreError {
  if (err instanceof StoreError) return err;
  if (isOutage(err)) return refused('busy', 'DATABASE_UNAVAILABLE', 'the warehouse could not run the query; try again later');
  const code = codeOf(err);
  const sqlState = (err as SnowflakeErrorLike).sqlState;
  const text = clip(String((err as SnowflakeErrorLike).message ?? 'the warehouse refused the query'));
  const detail: ErrorDetail = { path: '$.sql', message: text, snowflakeCode: code, ...(typeof sqlState === 'string' ? { sqlState } : {}) };
  const fail = (problem: 'invalid' | 'forbidden' | 'busy', apiCode: string, message: string) => refused(problem, apiCode, message, [detail]);
  switch (code) {
    case '003001':
    case '003011':
      return fail('forbidden', 'PERMISSION_DENIED', `the raw SQL session's read-only role may only read: ${text}`);
    case '001003':
      return fail('invalid', 'SQL_SYNTAX_ERROR', text);
    case '000008':
      return fail('invalid', 'MULTIPLE_STATEMENTS', 'send exactly one statement (no ";"-separated list)');
    case '002003':
      return fail('invalid', 'UNDEFINED_TABLE', text);
    case '000904':
      return fail('invalid', 'UNDEFINED_COLUMN', text);
    case '002140':
    case '002141':
      return fail('invalid', 'UNDEFINED_FUNCTION', text);
    case '000630':
      return fail('invalid', 'QUERY_TIMEOUT', `the query ran longer than the raw SQL time limit of ${timeoutMs} ms`);
    case '000604':
      return fail('busy', 'QUERY_CANCELED', 'the query was canceled by the warehouse; try again');
    case '100051':
      return fail('invalid', 'DIVISION_BY_ZERO', text);
  }
  if (code.startsWith('100')) return fail('invalid', 'DATA_EXCEPTION', text);
  return fail('invalid', 'SQL_ERROR', text);
}

/** Snowflake's "object does not exist or not authorized" (a table not created yet). */
export function isMissingObject(err: unknown): boolean {
  return codeOf(err) === '002003';
}
