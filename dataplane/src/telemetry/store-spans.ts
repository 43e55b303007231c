/**
 * Child spans for the engine's store calls: the driver of each location kind wrapped once, when
 * tracing is on (server.ts); off, the engine calls the driver itself. Attributes name the store, the
 * operation and the record schema (`db.collection.name`), never a statement, an id or a value.
 */
import type { DatasetConfig, LocationKind } from '../../../model/types.js';
import type { BulkLoadStore, LocationDriver } from '../engine/contract.js';
import { inSpan, type SpanAttributes } from '../../../model/telemetry/tracing.js';
import { AttributeTemplate } from '../../../model/telemetry/attribute-template.js';

const DB_SYSTEM: Record<LocationKind, string> = { postgres: 'postgresql', dynamodb: 'dynamodb', snowflake: 'snowflake', iceberg: 'snowflake' };

/**
 * A store call's span: a child of the request's span only when that one is recorded (an unsampled
 * read builds nothing), unless `ownTrace` (bulk-load chunks, written by the background runner with
 * no request around them: each chunk starts a trace of its own then). Only writes run as the
 * current span (their change rows carry the write's trace context, change-log.ts); a read's span
 * is a leaf, so a read skips the context manager. Attributes are one object literal, no spreads: this
 * runs twice per traced read.
 */
function storeSpan<T>(kind: LocationKind, operation: string, dataset: DatasetConfig, collection: string | undefined, fn: () => Promise<T>, extra?: (attributes: SpanAttributes) => void, ownTrace = false): Promise<T> {
  const options = ownTrace ? OWN_TRACE : operation === 'write' ? CURRENT_CHILD : LEAF_CHILD;
  // Without per-call attributes (reads, lists, raw queries) the name and attributes are the same for every call: made once.
  if (!extra) {
    const { name, template } = sameEveryCall(kind, operation, dataset, collection);
    return inSpan(name, template ?? (() => attributesOf(kind, operation, dataset, collection)), fn, options);
  }
  return inSpan(
    collection ? `${operation} ${collection}` : operation,
    () => {
      const attributes = attributesOf(kind, operation, dataset, collection);
      extra(attributes);
      return attributes;
    },
    fn,
    options,
  );
}

/** The three ways a store call is traced (InSpanOptions), made once: a read's leaf, a write's current child, a bulk-load chunk's own trace. */
const LEAF_CHILD = Object.freeze({ kind: 'client', childOnly: true, current: false } as const);
const CURRENT_CHILD = Object.freeze({ kind: 'client', childOnly: true, current: true } as const);
const OWN_TRACE = Object.freeze({ kind: 'client', childOnly: false, current: true } as const);

function attributesOf(kind: LocationKind, operation: string, dataset: DatasetConfig, collection: string | undefined): SpanAttributes {
  const attributes: SpanAttributes = { 'db.system': DB_SYSTEM[kind], 'db.operation.name': operation, 'das.dataset': dataset.id };
  if (collection) attributes['db.collection.name'] = collection;
  return attributes;
}

interface MadeOnce {
  name: string;
  template: AttributeTemplate | undefined;
}

/**
 * Span names and attribute templates by dataset (a config generation's object: they go with it;
 * a dataset has one location kind), then operation, then schema ('' for none): no string built per call.
 */
const madeOnce = new WeakMap<DatasetConfig, Map<string, Map<string, MadeOnce>>>();

function sameEveryCall(kind: LocationKind, operation: string, dataset: DatasetConfig, collection: string | undefined): MadeOnce {
  let byOperation = madeOnce.get(dataset);
  if (!byOperation) madeOnce.set(dataset, (byOperation = new Map()));
  let bySchema = byOperation.get(operation);
  if (!bySchema) byOperation.set(operation, (bySchema = new Map()));
  let made = bySchema.get(collection ?? '');
  if (!made) {
    made = { name: collection ? `${operation} ${collection}` : operation, template: AttributeTemplate.of(attributesOf(kind, operation, dataset, collection)) };
    bySchema.set(collection ?? '', made);
  }
  return made;
}

/** `target` with `overrides` in place of some members; its other methods stay bound to `target` (their `this` is the real object). */
function withOwn<T extends object>(target: T, overrides: Partial<T>): T {
  const bound = new Map<PropertyKey, unknown>();
  return new Proxy(target, {
    get(object, property) {
      if (Object.hasOwn(overrides, property)) return overrides[property as keyof T];
      const value: unknown = Reflect.get(object, property, object);
      if (typeof value !== 'function') return value;
      let method = bound.get(property);
      if (!method) bound.set(property, (method = (value as (...args: unknown[]) => unknown).bind(object)));
      return method;
    },
  });
}

/** One schema name when every op is on it, else none (a batch across schemas). */
const oneSchema = (schemas: readonly { schema: string }[]): string | undefined => (schemas.every((s) => s.schema === schemas[0]?.schema) ? schemas[0]?.schema : undefined);

function tracedBulkLoad(kind: LocationKind, bulk: BulkLoadStore): BulkLoadStore {
  return withOwn(bulk, {
    loadChunk: (dataset, chunk) =>
      storeSpan(kind, 'bulk-load chunk', dataset, chunk.schema, () => bulk.loadChunk(dataset, chunk), (attributes) => {
        attributes['db.operation.batch.size'] = chunk.records.length;
        attributes['das.transaction.id'] = chunk.transaction;
        attributes['das.load.operation'] = chunk.operation;
      }, true),
  });
}

/** The driver with its record calls in spans; every other member is the driver's own. */
export function tracedDriver(driver: LocationDriver): LocationDriver {
  const { kind } = driver;
  const traced: Partial<LocationDriver> = {
    read: (dataset, key, ctx) => storeSpan(kind, 'read', dataset, key.schema, () => driver.read(dataset, key, ctx)),
    readMany: (dataset, schema, ids, ctx) => storeSpan(kind, 'readMany', dataset, schema, () => driver.readMany(dataset, schema, ids, ctx), (attributes) => {
      attributes['db.operation.batch.size'] = ids.length;
    }),
    write: (dataset, ops, consistency, ctx) =>
      storeSpan(kind, 'write', dataset, oneSchema(ops), () => driver.write(dataset, ops, consistency, ctx), (attributes) => {
        attributes['db.operation.batch.size'] = ops.length;
        attributes['das.consistency'] = consistency;
      }),
  };
  if (driver.list) traced.list = (dataset, schema, query, ctx) => storeSpan(kind, 'list', dataset, schema, () => driver.list!(dataset, schema, query, ctx));
  if (driver.rawQuery) traced.rawQuery = (dataset, query, options) => storeSpan(kind, 'rawQuery', dataset, undefined, () => driver.rawQuery!(dataset, query, options));
  if (driver.bulkLoad) traced.bulkLoad = tracedBulkLoad(kind, driver.bulkLoad);
  return withOwn(driver, traced);
}
