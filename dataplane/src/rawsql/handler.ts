/**
 * `POST /{datasetId}/raw-query`: gate (iam gateway, dataset switch), parse, rewrite, run on the
 * location's read-only connection. The HTTP route calls executeRawQuery and sends its rows as the
 * JSON array response; every client error is an ApiError.
 */
import { DATAPLANE_DEFAULTS, type DataPlaneSettings } from '../../../model/settings/dataplane.js';
import { kindFacts } from '../../../model/location-kinds.js';
import type { DatasetConfig, LocationKind } from '../../../model/types.js';
import { ApiError } from '../engine/errors.js';
import { fromStore } from '../engine/store-outcomes.js';
import type { LocationDriver, StatementContext } from '../engine/contract.js';
import { parseRawSqlRequest, type RawSqlRequest } from '../engine/sql/raw-request.js';
import { rewriteRawSql, sourcePosition, type RewrittenSql } from '../engine/sql/raw-rewrite.js';

export interface RawSqlLimits {
  /** More rows than this is a 400 ROW_LIMIT_EXCEEDED (never a silently truncated result). */
  rowLimit: number;
  /** statement_timeout of the query; beyond it a 400 QUERY_TIMEOUT. */
  timeoutMs: number;
  /**
   * Budget for the answer's JSON size in bytes, counted while rows arrive; beyond it a 400
   * RESULT_TOO_LARGE. Bounds the data plane's memory per query (a few times this much).
   */
  maxBytes: number;
}

/** The limits of the settings RAW_SQL_ROW_LIMIT, RAW_SQL_TIMEOUT_MS and RAW_SQL_MAX_BYTES. */
export function rawSqlLimits(s: Pick<DataPlaneSettings, 'RAW_SQL_ROW_LIMIT' | 'RAW_SQL_TIMEOUT_MS' | 'RAW_SQL_MAX_BYTES'>): RawSqlLimits {
  return { rowLimit: s.RAW_SQL_ROW_LIMIT, timeoutMs: s.RAW_SQL_TIMEOUT_MS, maxBytes: s.RAW_SQL_MAX_BYTES };
}

export const DEFAULT_RAW_SQL_LIMITS: RawSqlLimits = rawSqlLimits(DATAPLANE_DEFAULTS);


export interface RawQueryInput {
  dataset: DatasetConfig;
  /** The gateway the request came through. */
  authkind: 'iam' | 'public';
  /** The parsed JSON body. */
  body: unknown;
  driver: LocationDriver;
  /** Tags and executor from the request headers. */
  ctx: StatementContext;
  /** The process's limits (bootstrap.ts, from its settings), else the defaults. */
  limits?: Partial<RawSqlLimits>;
  /** Called once the SQL is checked, before the store is asked: 503 while the dataset is not served. */
  whenServed?: () => void;
}

/** The endpoint exists on the iam gateway only (spec: 403 through any other). */
export function rawSqlIamOnly(): ApiError {
  return new ApiError(403, 'RAW_SQL_IAM_ONLY', 'the raw SQL endpoint is available only through the iam gateway');
}

export async function executeRawQuery(input: RawQueryInput): Promise<Record<string, unknown>[]> {
  const { dataset, driver, ctx } = input;
  if (input.authkind !== 'iam') throw rawSqlIamOnly();
  if (!dataset.auth.iam.rawSqlEndpointEnabled) {
    throw new ApiError(403, 'RAW_SQL_DISABLED', `the raw SQL endpoint is not enabled for dataset "${dataset.id}" (auth.iam.rawSqlEndpointEnabled)`);
  }
  const kind = dataset.location.kind;
  if (!kindFacts(kind).sql) throw new ApiError(400, 'RAW_SQL_NOT_SUPPORTED', `the dataset is stored in ${kindFacts(kind).title}, which has no SQL engine for raw queries`);
  if (!driver.capabilities.rawSql || !driver.rawSqlDialect) throw new ApiError(501, 'RAW_SQL_NOT_AVAILABLE', `raw SQL is not available yet on ${kind} locations`);
  return runRawSql(dataset, driver, parseRawSqlRequest(input.body, dataset), ctx, input.limits, input.whenServed);
}

/**
 * Rewrites parsed raw SQL and runs it on the location's read-only connection: the raw SQL endpoint
 * (after its gates) and SQL-based query schemas (engine/queries.ts) share this.
 */
export async function runRawSql(dataset: DatasetConfig, driver: LocationDriver, request: RawSqlRequest, ctx: StatementContext, overrides?: Partial<RawSqlLimits>, whenServed?: () => void): Promise<Record<string, unknown>[]> {
  const dialect = driver.rawSqlDialect;
  if (!driver.capabilities.rawSql || !dialect || !driver.rawQuery) throw new ApiError(501, 'RAW_SQL_NOT_AVAILABLE', `SQL is not available yet on ${driver.kind} locations`);
  const rewritten = rewriteRawSql(request.sql, request.using, request.arguments, dataset, dialect);
  whenServed?.(); // SQL that can never run is refused 400 first, whatever the store's readiness
  const limits = { ...DEFAULT_RAW_SQL_LIMITS, ...overrides };
  try {
    return await driver.rawQuery(dataset, { text: rewritten.text, values: rewritten.values }, { ...limits, tags: ctx.tags, executor: ctx.executor, warehouse: ctx.warehouse });
  } catch (err) {
    const mapped = fromStore(err);
    throw mapped instanceof ApiError ? withSourcePositions(mapped, request.sql, rewritten) : mapped;
  }
}

/** Database error positions refer to the rewritten SQL; report them in the caller's SQL. */
function withSourcePositions(err: ApiError, sql: string, rewritten: RewrittenSql): ApiError {
  if (!err.details.some((d) => typeof d.position === 'number')) return err;
  const details = err.details.map((d) => (typeof d.position === 'number' ? { ...d, position: sourcePosition(sql, rewritten, d.position) } : d));
  const message = err.message.replace(/\(at character \d+\)/, () => {
    const position = details.find((d) => typeof d.position === 'number')!.position;
    return `(at character ${position})`;
  });
  const mapped = new ApiError(err.status, err.code, message, details);
  mapped.stack = err.stack;
  return mapped;
}
