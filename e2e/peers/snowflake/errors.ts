/**
 * TEST PEER ONLY. Snowflake errors as the Snowflake test peer reports them: Snowflake's numeric
 * error code (a string of six digits), its SQLSTATE and its message style ("SQL compilation
 * error:\n…"), and the mapping from the PostgreSQL errors of the database behind the peer.
 */

export class SnowflakeSqlError extends Error {
  override name = 'SnowflakeSqlError';
  constructor(
    readonly code: string,
    readonly sqlState: string,
    message: string,
  ) {
    super(message);
  }

  static syntax(detail: string): SnowflakeSqlError {
    return new SnowflakeSqlError('001003', '42000', `SQL compilation error:\n${detail}`);
  }

  static unsupportedType(name: string): SnowflakeSqlError {
    return new SnowflakeSqlError('002040', '42601', `SQL compilation error:\nUnsupported data type '${name}'.`);
  }

  static statementCount(actual: number): SnowflakeSqlError {
    return new SnowflakeSqlError('000008', '0A000', `Actual statement count ${actual} did not match the desired statement count 1.`);
  }

  static unsupported(what: string): SnowflakeSqlError {
    return new SnowflakeSqlError('001003', '42000', `SQL compilation error:\n${what} is not supported by the Snowflake test peer.`);
  }
}

/** ASCII case swap: the peer stores Snowflake name N as PostgreSQL name swapCase(N) (see translate.ts). */
export function swapCase(s: string): string {
  return s.replace(/[A-Za-z]/g, (c) => (c >= 'a' ? c.toUpperCase() : c.toLowerCase()));
}

interface PgErrorLike {
  code?: string;
  message?: string;
  table?: string;
  column?: string;
  schema?: string;
}

/** Names in PostgreSQL messages are stored names: swap them back to the Snowflake spelling. */
function quotedName(message: string): string {
  const m = /"([^"]+)"/.exec(message);
  return m ? m[1].split('.').map(swapCase).join('.') : '?';
}

/** A value that does not read as its type: Snowflake's code depends on the type. */
function badValue(message: string): SnowflakeSqlError {
  const value = /: "(.*)"$/.exec(message)?.[1] ?? '?';
  if (/type boolean/.test(message)) return new SnowflakeSqlError('100037', '22018', `Boolean value '${value}' is not recognized`);
  if (/type date\b|date\/time field value out of range/.test(message) && !/timestamp/.test(message)) return new SnowflakeSqlError('100040', '22007', `Date '${value}' is not recognized`);
  if (/timestamp|time zone|date\/time/.test(message)) return new SnowflakeSqlError('100035', '22007', `Timestamp '${value}' is not recognized`);
  if (/type json/.test(message)) return new SnowflakeSqlError('100069', '22P02', `Error parsing JSON: ${message}`);
  return new SnowflakeSqlError('100038', '22018', `Numeric value '${value}' is not recognized`);
}

/** Maps an error of the PostgreSQL behind the peer to the error Snowflake reports in that case. */
export function fromPostgresError(err: unknown): SnowflakeSqlError {
  if (err instanceof SnowflakeSqlError) return err;
  const e = (err ?? {}) as PgErrorLike;
  const message = e.message ?? String(err);
  const name = quotedName(message);
  switch (e.code) {
    case '42P01':
      return new SnowflakeSqlError('002003', '42S02', `SQL compilation error:\nObject '${name}' does not exist or not authorized.`);
    case '3F000':
      return new SnowflakeSqlError('002003', '02000', `SQL compilation error:\nSchema '${name}' does not exist or not authorized.`);
    case '3D000':
      return new SnowflakeSqlError('002003', '02000', `SQL compilation error:\nDatabase '${name}' does not exist or not authorized.`);
    case '42703':
      return new SnowflakeSqlError('000904', '42000', `SQL compilation error: error line 1 at position 0\ninvalid identifier '${name}'`);
    case '42601':
      return SnowflakeSqlError.syntax(`syntax error: ${message}`);
    case '42501':
      return new SnowflakeSqlError('003001', '42501', `SQL access control error:\nInsufficient privileges to operate on ${e.table ? `table '${swapCase(e.table)}'` : `'${name}'`}.`);
    case '23502':
      return new SnowflakeSqlError('100072', '22000', `NULL result in a non-nullable column${e.column ? ` '${swapCase(e.column)}'` : ''}`);
    case '23505':
      // Snowflake does not enforce PRIMARY KEY/UNIQUE; the peer's PostgreSQL does. Reported as a DML error.
      return new SnowflakeSqlError('100116', '23000', `Duplicate key value violates unique constraint (enforced by the Snowflake test peer only): ${message}`);
    case '23503':
    case '23514':
      return new SnowflakeSqlError('100132', '23000', `Constraint violation: ${message}`);
    case '22P02':
    case '22007':
    case '22008':
      return badValue(message);
    case '22003':
      return new SnowflakeSqlError('100039', '22003', `Numeric value out of range: ${message}`);
    case '22001':
      return new SnowflakeSqlError('100074', '22000', `String is too long and would be truncated: ${message}`);
    case '22012':
      return new SnowflakeSqlError('100051', '22012', 'Division by zero');
    case '42883':
      return new SnowflakeSqlError('002140', '42601', `SQL compilation error:\nUnknown function or invalid argument types: ${message}`);
    case '42804':
    case '42846':
      return new SnowflakeSqlError('002023', '22000', `SQL compilation error:\nExpression type does not match column data type: ${message}`);
    case '42P07':
    case '42P06':
    case '42710':
      return new SnowflakeSqlError('002002', '42710', `SQL compilation error:\nObject '${name}' already exists.`);
    case '42701':
      return new SnowflakeSqlError('002002', '42710', `SQL compilation error:\ncolumn '${name}' already exists`);
    case '42702':
      return new SnowflakeSqlError('002028', '42601', `SQL compilation error:\nambiguous column name '${name}'`);
    case '21000':
      // PostgreSQL's "MERGE command cannot affect row a second time": a target row matched by several source rows.
      return new SnowflakeSqlError('100090', '42P18', `Duplicate row detected during DML action: ${message}`);
    case '57014':
      return new SnowflakeSqlError('000604', '57014', 'SQL execution canceled');
    case '40001':
    case '40P01':
      return new SnowflakeSqlError('000625', '57014', `Statement aborted because of a conflict: ${message}`);
    default:
      return new SnowflakeSqlError('000603', 'XX000', `SQL execution internal error: ${message}`);
  }
}
