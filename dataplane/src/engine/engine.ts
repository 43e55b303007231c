/**
 * The record engine: the one place that turns actions into driver calls and driver results into
 * API records. Every front door (REST, structured POST, function gateway, subscriptions) calls it.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Consistency, DatasetConfig } from '../../../model/types.js';
import type { ConfigStore } from '../config/store.js';
import type { LocationDriver, OpResult, StatementContext, StoreFailure, StoredRecord, WriteOp } from './contract.js';
import type { BatchAction, LinkAction, ListAction, ReadAction, SingleAction, StructuredAction, WriteAction, QueryAction } from './actions.js';
import { linkPage, listPage, type FieldPath, type ListDeps, type Page } from './lists.js';
import { queryPage, type QueryDeps, type SqlRunner } from './queries.js';
import { PageTokens } from './page-token.js';
import { AsyncWriter, type AsyncWriterOptions } from './async-writes.js';
import { checkAgainstDriver, effectiveConsistency, isAtomic } from './consistency.js';
import { apiErrorOf } from './store-outcomes.js';
import { ApiError, badRequest } from './errors.js';
import { fieldsOf, schemaDefOf, setAt, type Field } from './layout.js';
import { validateRecordData } from './record-validation.js';

export type ApiRecord = Record<string, unknown> & { id: string; version: number };

export interface EngineResult {
  status: number;
  body: unknown;
}

export type DriverRegistry = (dataset: DatasetConfig) => LocationDriver;

/** The system schema of bulk loads: a record of it is a transaction (transactions/service.ts). */
export const TRANSACTION_SCHEMA = 'Transaction';

/** Transactions (bulk loads) as records of `Transaction`; wired in by the process (bootstrap.ts). */
export interface TransactionFront {
  /** `whenServed` is called once the request is valid, before the store is asked (503 while the dataset is not served). */
  create(dataset: DatasetConfig, data: Record<string, unknown>, id: string | undefined, path: string, ctx: StatementContext | undefined, whenServed: () => void): Promise<EngineResult>;
  read(dataset: DatasetConfig, id: string): Promise<Record<string, unknown> & { id: string }>;
  list(dataset: DatasetConfig, request: { filter?: string; sort?: string; limit?: number; nextToken?: string }, at: FieldPath): Promise<Page<Record<string, unknown>>>;
}

export class RecordEngine {
  /** Background (ASYNC) writes; shutdown drains them. */
  readonly asyncWrites: AsyncWriter;
  /**
   * Signs and checks list/link page tokens. The process wiring (bootstrap.ts) sets the shared key;
   * without it the key is process-local and tokens do not outlive the process.
   */
  pageTokens: PageTokens | undefined;

  constructor(
    private readonly configs: ConfigStore,
    private readonly drivers: DriverRegistry,
    private readonly logger: Logger,
    asyncOptions?: AsyncWriterOptions,
  ) {
    this.asyncWrites = new AsyncWriter(logger, asyncOptions);
  }

  /** The dataset as currently served: 404 when unknown, 503 while it cannot be served. */
  dataset(id: string): DatasetConfig {
    const state = this.configs.dataset(id);
    if (!state) throw new ApiError(404, 'DATASET_NOT_FOUND', `no dataset "${id}" in this environment`);
    if (state.status === 'pending') throw new ApiError(503, 'DATASET_NOT_READY', `dataset "${id}" is being prepared; retry shortly`);
    if (state.status === 'failed') throw new ApiError(503, 'DATASET_UNAVAILABLE', `dataset "${id}" cannot be served: ${state.problem}`, [], 30);
    // Paused (spec.paused): storage and config kept, nothing served until it is resumed.
    if (state.config.paused) throw new ApiError(503, 'DATASET_PAUSED', `dataset "${id}" is paused; retry once it is resumed`, [], 30);
    return state.config;
  }

  /**
   * The dataset a request is checked against: as `dataset`, but a dataset still being prepared
   * (its store unreachable, say) is returned too, so that a request that can never succeed is
   * refused 400 before readiness is considered; its store calls are then refused 503 (driver()).
   */
  requestDataset(id: string): DatasetConfig {
    const state = this.configs.dataset(id);
    if (state?.status === 'pending' && !state.config.paused) return state.config;
    return this.dataset(id);
  }

  /** Transactions (bulk loads); without them `Transaction` requests are 501. */
  transactions: TransactionFront | undefined;

  private transactionFront(dataset: DatasetConfig): TransactionFront {
    const front = this.transactionsOrRefuse();
    this.whenServed(dataset);
    return front;
  }

  private transactionsOrRefuse(): TransactionFront {
    if (!this.transactions) throw new ApiError(501, 'NOT_AVAILABLE', 'transactions (bulk loads) are not available on this data plane');
    return this.transactions;
  }

  /**
   * Never throws: every refusal is the promise's. The common read (no expand, no projection) is one
   * `then` on the driver's promise rather than an async frame of its own (a promise, a suspended
   * frame and its resume closures per read).
   */
  read(dataset: DatasetConfig, action: Omit<ReadAction, 'kind'>, ctx?: StatementContext, path = '$.read'): Promise<ApiRecord> {
    let expand: Field[];
    let stored: Promise<StoredRecord | undefined>;
    try {
      if (action.schema === TRANSACTION_SCHEMA) return this.transactionFront(dataset).read(dataset, action.id) as Promise<ApiRecord>;
      // The error paths' field names are built only when they are needed (not on every read).
      if (!schemaDefOf(dataset, action.schema)) this.schemaOf(dataset, action.schema, `${path}.schema`);
      expand = action.expand.length ? this.expandFields(dataset, action.schema, action.expand, `${path}.expand`) : NO_FIELDS;
      const consistency = action.consistency ?? dataset.location.defaultConsistency;
      stored = this.driver(dataset).read(dataset, { schema: action.schema, id: action.id, version: action.version, consistency }, ctx);
    } catch (err) {
      return Promise.reject(err);
    }
    if (!expand.length && !action.projection) return stored.then((record) => apiForm(found(action, record))); // the common read: no second round trip to wait for
    return stored.then(async (record) => (await this.present(dataset, [found(action, record)], expand, action.projection, ctx))[0]);
  }

  /** A page of a schema's records: `{items, nextToken?}` (lists.ts). */
  list(dataset: DatasetConfig, action: Omit<ListAction, 'kind'>, ctx?: StatementContext, at: FieldPath = (f) => `$.list.${f}`): Promise<Page<ApiRecord>> {
    if (action.schema === TRANSACTION_SCHEMA) return this.transactionFront(dataset).list(dataset, action, at) as Promise<Page<ApiRecord>>;
    return listPage(this.listDeps, dataset, action, at, ctx);
  }

  /** A page of the records a link of one record leads to (lists.ts). */
  link(dataset: DatasetConfig, action: Omit<LinkAction, 'kind'>, ctx?: StatementContext, at: FieldPath = (f) => `$.link.${f}`): Promise<Page<ApiRecord>> {
    return linkPage(this.listDeps, dataset, action, at, ctx);
  }

  /** Runs SQL-based query schemas (rawsql/handler.ts runRawSql); set by the process wiring, without it they are 501. */
  runSql: SqlRunner | undefined;

  /** A page of a named query's results (queries.ts): records for a filter-based query, rows for an SQL one. */
  query(
    dataset: DatasetConfig,
    action: Omit<QueryAction, 'kind'>,
    ctx?: StatementContext,
    at: FieldPath = (f) => `$.query.${f}`,
    argAt?: (name: string) => string,
  ): Promise<Page<ApiRecord | Record<string, unknown>>> {
    const runSql = this.runSql;
    const sql: QueryDeps<ApiRecord>['sql'] = runSql && ((ds, request, c, limits) => runSql(ds, this.capabilitiesOf(ds), request, c, limits, () => this.whenServed(ds)));
    const deps: QueryDeps<ApiRecord> = { ...this.listDeps, sql };
    return queryPage(deps, dataset, action, at, ctx, argAt);
  }

  private readonly listDeps: ListDeps<ApiRecord> = {
    driver: (dataset) => this.driver(dataset),
    tokens: () => (this.pageTokens ??= PageTokens.ephemeral()),
    expandFields: (dataset, schema, names, path) => this.expandFields(dataset, schema, names, path),
    present: (dataset, stored, expand, ctx) => this.present(dataset, stored, expand, undefined, ctx),
  };

  /** Never throws: a refusal is the promise's. A read is one `then` on its promise (no async frame). */
  execute(dataset: DatasetConfig, action: StructuredAction, ctx?: StatementContext): Promise<EngineResult> {
    if (action.kind === 'read') return this.read(dataset, action, ctx).then((body) => ({ status: 200, body }));
    return this.executeOther(dataset, action, ctx);
  }

  private async executeOther(dataset: DatasetConfig, action: Exclude<StructuredAction, ReadAction>, ctx?: StatementContext): Promise<EngineResult> {
    if (action.kind === 'list') return { status: 200, body: await this.list(dataset, action, ctx) };
    if (action.kind === 'link') return { status: 200, body: await this.link(dataset, action, ctx) };
    if (action.kind === 'query') return { status: 200, body: await this.query(dataset, action, ctx) };
    if (action.kind === 'batch') return this.batch(dataset, action, ctx);
    if (action.kind === 'create' && action.schema === TRANSACTION_SCHEMA) return this.transactionsOrRefuse().create(dataset, action.data, action.id, '$.create', ctx, () => this.whenServed(dataset));
    const path = `$.${action.kind}`;
    const op = this.toOp(dataset, action, path);
    const consistency = effectiveConsistency(dataset, [{ level: action.consistency, path: `${path}.consistency` }]);
    checkAgainstDriver(this.capabilitiesOf(dataset), consistency, 1, `${path}.consistency`);
    if (consistency === 'ASYNC') return this.acceptAsync(dataset, [op], ctx, { id: op.id });
    const [result] = await this.driver(dataset).write(dataset, [op], consistency, ctx);
    if (!result.ok) throw apiErrorOf(result.failure);
    const body = this.writeResponse(dataset, action, result, ctx);
    return { status: action.kind === 'create' ? 201 : 200, body: body instanceof Promise ? await body : body };
  }

  private async batch(dataset: DatasetConfig, batch: BatchAction, ctx?: StatementContext): Promise<EngineResult> {
    const paths = batch.order.map((name) => `$.batch.actions[${JSON.stringify(name)}].${batch.actions[name].kind}`);
    const ops = batch.order.map((name, i) => this.toOp(dataset, batch.actions[name], paths[i]));
    const consistency = effectiveConsistency(
      dataset,
      batch.order.map((name, i) => ({ level: batch.actions[name].consistency, path: `${paths[i]}.consistency` })),
    );
    checkAgainstDriver(this.capabilitiesOf(dataset), consistency, ops.length, '$.batch');
    if (consistency === 'ASYNC') return this.acceptAsync(dataset, ops, ctx, { actions: Object.fromEntries(batch.order.map((name, i) => [name, { id: ops[i].id }])) });
    const results = await this.driver(dataset).write(dataset, ops, consistency, ctx);
    if (isAtomic(consistency)) {
      const failed = results.findIndex((r) => !r.ok && r.failure.kind !== 'aborted');
      if (failed >= 0) {
        const error = apiErrorOf((results[failed] as { ok: false; failure: StoreFailure }).failure);
        const name = batch.order[failed];
        throw new ApiError(error.status, error.code, `batch action "${name}" failed, nothing was written (${consistency}): ${error.message}`, [
          { path: paths[failed], message: error.message, action: name },
          ...error.details,
        ]);
      }
    }
    const entries: [string, unknown][] = [];
    let anyFailed = false;
    for (const [i, name] of batch.order.entries()) {
      const result = results[i];
      if (result.ok) {
        const answer = this.writeResponse(dataset, batch.actions[name], result, ctx);
        entries.push([name, answer instanceof Promise ? await answer : answer]);
      }
      else {
        anyFailed = true;
        const error = apiErrorOf(result.failure);
        entries.push([name, { error: { code: error.code, message: error.message, details: error.details }, status: error.status }]);
      }
    }
    // Under QUORUM/EVENTUAL the others were committed: 207 tells the caller to look at each action.
    // fromEntries defines own properties: an action named "__proto__" is answered like any other.
    return { status: anyFailed ? 207 : 200, body: Object.fromEntries(entries) };
  }

  private acceptAsync(dataset: DatasetConfig, ops: WriteOp[], ctx: StatementContext | undefined, body: Record<string, unknown>): EngineResult {
    this.asyncWrites.accept({ dataset, driver: this.driver(dataset), ops, ctx });
    return { status: 202, body: { accepted: true, consistency: 'ASYNC' satisfies Consistency, ...body } };
  }

  private toOp(dataset: DatasetConfig, action: WriteAction, path: string): WriteOp {
    // Error paths built only when they are needed, as in read.
    if (!schemaDefOf(dataset, action.schema)) this.schemaOf(dataset, action.schema, `${path}.schema`);
    if (action.kind === 'delete') return { op: 'delete', schema: action.schema, id: action.id };
    for (const reserved of SYSTEM_PROPERTIES) {
      if (reserved in action.data) {
        throw badRequest('INVALID_RECORD', `"${reserved}" is a system property; ${reserved === 'id' ? 'pass it as the action\'s "id"' : 'it is set by the service'}`, [
          { path: `${path}.data.${reserved}`, message: 'system property' },
        ]);
      }
    }
    validateRecordData(dataset, action.schema, action.data, action.kind === 'create' || !action.merge, `${path}.data`, {
      indexedKeyBytes: this.capabilitiesOf(dataset).capabilities.indexedKeyBytes,
      ...(action.id !== undefined ? { id: action.id } : {}),
    });
    if (action.expand.length) this.expandFields(dataset, action.schema, action.expand, `${path}.expand`);
    if (action.kind === 'create') return { op: 'create', schema: action.schema, id: action.id ?? randomUUID(), data: action.data };
    return { op: 'update', schema: action.schema, id: action.id, data: action.data, merge: action.merge };
  }

  /** The answer to one write; without links to expand it is ready at once (no promise to wait for). */
  private writeResponse(dataset: DatasetConfig, action: WriteAction, result: OpResult & { ok: true }, ctx?: StatementContext): WriteAnswer | Promise<WriteAnswer> {
    if (action.kind === 'delete') return { id: result.record.id, version: result.record.version, deleted: true };
    const expand = this.expandFields(dataset, action.schema, action.expand, '$');
    if (!expand.length) return action.projection ? project(apiForm(result.record), action.projection) : apiForm(result.record);
    return this.present(dataset, [result.record], expand, action.projection, ctx).then(([record]) => record);
  }

  /** API form of stored records, with links expanded in place of `{id}`. */
  private async present(dataset: DatasetConfig, stored: StoredRecord[], expand: Field[], projection: string[] | undefined, ctx?: StatementContext): Promise<ApiRecord[]> {
    const records = stored.map(apiForm);
    // One read per link field, all at once; the ids are taken before any link is replaced, and
    // the targets set in `expand` order afterwards, so the result is the same as one after another.
    const reads = expand.map((field) => {
      const ids = [...new Set(records.map((r) => linkIdAt(r, field.path)).filter((id): id is string => id !== undefined))];
      return this.driver(dataset).readMany(dataset, field.target!, ids, ctx);
    });
    const targetsByField = await Promise.all(reads);
    for (const [i, field] of expand.entries()) {
      const targets = new Map(targetsByField[i].map((t) => [t.id, t]));
      for (const record of records) {
        const target = targets.get(linkIdAt(record, field.path) ?? '');
        if (target) setAt(record, field.path, { id: target.id, version: target.version, ...target.data });
      }
    }
    return projection ? records.map((r) => project(r, projection)) : records;
  }

  private schemaOf(dataset: DatasetConfig, schema: string, path: string) {
    const def = schemaDefOf(dataset, schema);
    if (!def) throw new ApiError(404, 'SCHEMA_NOT_FOUND', `dataset "${dataset.id}" has no schema "${schema}"`, [{ path, message: 'unknown schema' }]);
    return def;
  }

  private expandFields(dataset: DatasetConfig, schema: string, names: string[], path: string): Field[] {
    if (!names.length) return NO_FIELDS;
    const links = new Map(fieldsOf(dataset.schemas[schema]).filter((f) => f.type === 'link').map((f) => [f.dotted, f]));
    return names.map((name) => {
      const field = links.get(name);
      if (!field) {
        throw badRequest('INVALID_EXPAND', `"${name}" is not a link of ${schema}; links: ${[...links.keys()].join(', ') || 'none'}`, [{ path, message: `unknown link "${name}"` }]);
      }
      return field;
    });
  }

  /** The driver for store calls: refused (503, as `dataset`) while the store says the dataset cannot be served. */
  private driver(dataset: DatasetConfig): LocationDriver {
    this.whenServed(dataset);
    return this.drivers(dataset);
  }

  /** What the driver declares (no store call): usable while the dataset is still being prepared. */
  private capabilitiesOf(dataset: DatasetConfig): LocationDriver {
    return this.drivers(dataset);
  }

  private whenServed(dataset: DatasetConfig): void {
    const state = this.configs.dataset(dataset.id);
    if (state && state.status !== 'ready') this.dataset(dataset.id);
  }

  /** Waits for ASYNC writes (retrying through an outage until the deadline); resolves with how many were not written. */
  drain(deadlineMs?: number): Promise<number> {
    return this.asyncWrites.drain(deadlineMs);
  }
}

function linkIdAt(record: Record<string, unknown>, path: string[]): string | undefined {
  let node: unknown = record;
  for (const key of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  const id = (node as { id?: unknown } | undefined)?.id;
  return typeof id === 'string' ? id : undefined;
}

type WriteAnswer = ApiRecord | { id: string; version: number; deleted: true };

/** Keeps `id`, `version` and the named (possibly dotted) properties. */
function project(record: ApiRecord, names: string[]): ApiRecord {
  const out: ApiRecord = { id: record.id, version: record.version };
  for (const name of names) {
    const path = name.split('.');
    let node: unknown = record;
    for (const key of path) node = node && typeof node === 'object' ? (node as Record<string, unknown>)[key] : undefined;
    if (node !== undefined) setAt(out, path, node);
  }
  return out;
}

export type { SingleAction };

/** Properties the service sets: refused in a write's data. */
const SYSTEM_PROPERTIES = ['id', 'version'] as const;

/** A stored record as the API shows it: id and version, then the data. */
const NO_FIELDS = Object.freeze([]) as unknown as Field[];

/** The record a read found, or its 404: none with that id (at that version), or a deleted one. */
function found(action: Omit<ReadAction, 'kind'>, stored: StoredRecord | undefined): StoredRecord {
  if (!stored) {
    const what = action.version === undefined ? '' : ` at version ${action.version}`;
    throw new ApiError(404, 'RECORD_NOT_FOUND', `no ${action.schema} record with id "${action.id}"${what}`);
  }
  if (stored.deleted) {
    throw new ApiError(404, 'RECORD_NOT_FOUND', `${action.schema} record "${action.id}" was deleted at version ${stored.version}; earlier versions stay readable`);
  }
  return stored;
}

function apiForm(stored: StoredRecord): ApiRecord {
  return { id: stored.id, version: stored.version, ...stored.data } as ApiRecord;
}
