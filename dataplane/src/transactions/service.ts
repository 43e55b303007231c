/**
 * Transactions as the engine serves them: `create` (202, run in the background), `read` and
 * `list` of the system schema `Transaction`. The state lives in the dataset's store (the driver's
 * BulkLoadStore); the runner (runner.ts) does the loading.
 */
import { randomUUID } from 'node:crypto';
import type { DatasetConfig, RecordSchemaDef } from '../../../model/types.js';
import { compileFilter, FilterError, type TypedFilter } from '../../../model/filter.js';
import { compileSort } from '../../../model/sort.js';
import type { BulkLoadStore, LocationDriver, StatementContext } from '../engine/contract.js';
import { ApiError, badRequest } from '../engine/errors.js';
import { apiErrorOf, StoreError } from '../engine/store-outcomes.js';
import { parseTransaction, transactionRecord } from './request.js';

export const TRANSACTION_SCHEMA = 'Transaction';
const STATUSES = ['PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED'];
/** What a list of transactions may filter and sort on. */
const LISTED: RecordSchemaDef = { properties: { status: { type: 'string' }, createdAt: { type: 'timestamp' } } } as RecordSchemaDef;

export interface TransactionListRequest {
  filter?: string;
  sort?: string;
  limit?: number;
  nextToken?: string;
}

export class TransactionService {
  constructor(
    private readonly driverFor: (dataset: DatasetConfig) => LocationDriver,
    private readonly importRoot: string,
    /** Called after a create so a runner starts without waiting for its next poll. */
    private readonly onCreated: () => void = () => undefined,
  ) {}

  private store(dataset: DatasetConfig): BulkLoadStore {
    const driver = this.driverFor(dataset);
    if (!driver.capabilities.bulkLoad || !driver.bulkLoad) {
      throw new ApiError(501, 'NOT_SUPPORTED', `${driver.kind} datasets do not take bulk loads (transactions) yet`);
    }
    return driver.bulkLoad;
  }

  async create(dataset: DatasetConfig, data: Record<string, unknown>, id: string | undefined, path: string, ctx: StatementContext | undefined, whenServed: () => void = () => undefined) {
    const store = this.store(dataset);
    const spec = await parseTransaction(dataset, data, `${path}.data`, this.importRoot);
    whenServed(); // a load that can never run is refused 400 first, whatever the store's readiness
    // The executor (already checked against the environment's) goes with the load: the runner uses its warehouse.
    if (ctx?.executor) spec.executor = ctx.executor;
    const tx = await storeCall(() => store.create(dataset, { id: id ?? randomUUID(), spec }));
    this.onCreated();
    return { status: 202, body: transactionRecord(dataset, tx) };
  }

  async read(dataset: DatasetConfig, id: string) {
    const tx = await storeCall(() => this.store(dataset).get(dataset, id));
    if (!tx) throw new ApiError(404, 'RECORD_NOT_FOUND', `no Transaction with id "${id}"`);
    return transactionRecord(dataset, tx);
  }

  async list(dataset: DatasetConfig, request: TransactionListRequest, at: (field: string) => string) {
    const status = statusFilter(request.filter, at('filter'));
    const descending = sortDescending(request.sort, at('sort'));
    const limit = request.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw badRequest('INVALID_LIMIT', '"limit" must be from 1 to 1000', [{ path: at('limit'), message: 'out of range' }]);
    let after: [string, string] | undefined;
    if (request.nextToken !== undefined) {
      const token = decodeToken(request.nextToken);
      if (!token || token.status !== status || token.descending !== descending) {
        throw badRequest('INVALID_PAGE_TOKEN', 'nextToken does not belong to this list of transactions (same filter and sort)', [{ path: at('nextToken'), message: 'invalid token' }]);
      }
      after = token.after;
    }
    const rows = await storeCall(() => this.store(dataset).list(dataset, { status, descending, limit: limit + 1, after }));
    const items = rows.slice(0, limit);
    const last = items[items.length - 1];
    const more = rows.length > limit && last;
    return {
      items: items.map((tx) => transactionRecord(dataset, tx)),
      ...(more ? { nextToken: Buffer.from(JSON.stringify({ status, descending, after: [last.createdAt, last.id] })).toString('base64url') } : {}),
    };
  }
}

/** Store outcomes as API errors (an unreachable store is a 503, an id taken a 409). */
async function storeCall<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof StoreError) throw apiErrorOf(err.failure);
    throw err;
  }
}

/** `status == "RUNNING"` (or none): what a list of transactions filters on. */
function statusFilter(text: string | undefined, path: string): string | undefined {
  if (text === undefined) return undefined;
  let filter: TypedFilter;
  try {
    filter = compileFilter(text, LISTED);
  } catch (err) {
    if (err instanceof FilterError) throw badRequest('INVALID_FILTER', err.message, [{ path, message: err.message }]);
    throw err;
  }
  if (filter.kind !== 'compare' || filter.op !== '==' || filter.field.dotted !== 'status' || !('value' in filter.value) || !STATUSES.includes(String(filter.value.value))) {
    throw badRequest('INVALID_FILTER', `transactions filter on status only: status == 'PENDING' (or RUNNING, SUCCEEDED, FAILED)`, [{ path, message: 'unsupported filter' }]);
  }
  return String(filter.value.value);
}

function sortDescending(text: string | undefined, path: string): boolean {
  if (text === undefined) return false;
  let keys;
  try {
    keys = compileSort(text, LISTED);
  } catch (err) {
    if (err instanceof FilterError) throw badRequest('INVALID_SORT', err.message, [{ path, message: err.message }]);
    throw err;
  }
  const named = keys.filter((k) => k.field.dotted !== 'id');
  if (named.length !== 1 || named[0].field.dotted !== 'createdAt') throw badRequest('INVALID_SORT', 'transactions sort on createdAt only (createdAt or createdAt:desc)', [{ path, message: 'unsupported sort' }]);
  return named[0].direction === 'desc';
}

function decodeToken(text: string): { status?: string; descending: boolean; after: [string, string] } | undefined {
  try {
    const token = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (Array.isArray(token.after) && token.after.length === 2 && token.after.every((v: unknown) => typeof v === 'string') && !Number.isNaN(Date.parse(token.after[0]))) {
      return { status: token.status ?? undefined, descending: token.descending === true, after: token.after };
    }
  } catch {
    /* not a token */
  }
  return undefined;
}
