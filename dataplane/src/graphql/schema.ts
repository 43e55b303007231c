/**
 * The GraphQL schema of a dataset, generated from its config (docs/architecture.md "Subscriptions"): an object
 * type per record schema (dots become `_`: `demo_Person`), nested objects as their own types, links
 * as fields resolved through the engine, inverse links as paged fields; `Query.<Type>(id, version)`,
 * `Query.list_<Type>(filter, sort, limit, nextToken)`, and `Subscription.<Type>(filter, ids, after)`
 * returning `<Type>Event {op, cursor, record}`; `Mutation.create_/update_/delete_<Type>` and the
 * `@batch` directive (mutation-schema.ts). Resolvers call the record engine only; the
 * subscription source comes from the context (the replica's dispatcher, dispatcher.ts).
 * Built once per config object (a hot reload brings a new object, so a new schema).
 */
import {
  GraphQLBoolean,
  GraphQLEnumType,
  GraphQLError,
  GraphQLFloat,
  GraphQLID,
  GraphQLInt,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLScalarType,
  GraphQLSchema,
  GraphQLString,
  Kind,
  specifiedDirectives,
  type GraphQLFieldConfig,
  type GraphQLFieldConfigMap,
  type GraphQLOutputType,
} from 'graphql';
import type { DatasetConfig, PropertyDef, RecordSchemaDef } from '../../../model/types.js';
import type { StatementContext } from '../engine/contract.js';
import type { ApiRecord, RecordEngine } from '../engine/engine.js';
import { ApiError } from '../engine/errors.js';
import type { FieldReads } from './limits.js';
import { BatchDirective, MUTATION_TYPE_NAMES, mutationFields, mutationTypeSuffixes, type BatchOutcomes } from './mutation-schema.js';

/** What a subscription asks for: a schema's changes, narrowed by filter and ids, from a cursor. */
export interface SubscriptionRequest {
  schema: string;
  filter?: string;
  ids?: string[];
  after?: string;
}

/** One delivery to a subscriber: what `<Type>Event` resolves from. */
export interface ChangeEvent {
  op: 'CREATE' | 'UPDATE' | 'DELETE';
  cursor: string;
  record: ApiRecord | null;
}

/** Per operation: the engine, the dataset as served, and (for subscriptions) where events come from. */
export interface GraphQLContext {
  engine: RecordEngine;
  dataset: DatasetConfig;
  ctx?: StatementContext;
  subscribe?: (request: SubscriptionRequest) => AsyncIterable<ChangeEvent> | Promise<AsyncIterable<ChangeEvent>>;
  /** Set while an `@batch` mutation's fields are resolved: the batch's outcome per response name (operation.ts). */
  batch?: BatchOutcomes;
}

/** Record properties that are 64-bit integers (bigint columns): GraphQL's Int is 32-bit. */
const Long = new GraphQLScalarType({
  name: 'Long',
  description: 'A 64-bit integer (JSON number; exact up to 2^53).',
  serialize: (v) => v,
  parseValue: (v) => {
    if (typeof v !== 'number' || !Number.isInteger(v)) throw new GraphQLError('Long must be an integer');
    return v;
  },
  parseLiteral: (ast) => {
    if (ast.kind !== Kind.INT) throw new GraphQLError('Long must be an integer');
    return Number(ast.value);
  },
});
const textScalar = (name: string, description: string) =>
  new GraphQLScalarType({
    name,
    description,
    serialize: (v) => v,
    parseValue: (v) => {
      if (typeof v !== 'string') throw new GraphQLError(`${name} must be a string`);
      return v;
    },
    parseLiteral: (ast) => {
      if (ast.kind !== Kind.STRING) throw new GraphQLError(`${name} must be a string`);
      return ast.value;
    },
  });
const DateScalar = textScalar('Date', 'A calendar date, YYYY-MM-DD.');
const DateTime = textScalar('DateTime', 'An instant, RFC 3339 with an offset.');

const SCALARS: Record<string, GraphQLOutputType> = { string: GraphQLString, integer: Long, number: GraphQLFloat, boolean: GraphQLBoolean, date: DateScalar, timestamp: DateTime };

export const ChangeOpEnum = new GraphQLEnumType({
  name: 'ChangeOp',
  values: { CREATE: { description: 'The record was created.' }, UPDATE: { description: 'The record was replaced or merged.' }, DELETE: { description: 'The record was deleted; `record` holds only id and version.' } },
});

/** The types each record schema brings besides its own. */
const TYPE_SUFFIXES = ['Page', 'Event', ...mutationTypeSuffixes];

/** Type names: dots become `_`; a name two schemas would share gets a `_2` suffix (sorted order). */
export function typeNames(schemaNames: readonly string[]): Map<string, string> {
  const names = new Map<string, string>();
  const taken = new Set<string>(['Query', 'Subscription', 'Long', 'Date', 'DateTime', 'ChangeOp', ...MUTATION_TYPE_NAMES]);
  const derived = (name: string) => [name, ...TYPE_SUFFIXES.map((suffix) => `${name}${suffix}`)];
  for (const schema of [...schemaNames].sort()) {
    const base = schema.replaceAll('.', '_');
    let name = base;
    for (let n = 2; derived(name).some((d) => taken.has(d)); n++) name = `${base}_${n}`;
    for (const n of derived(name)) taken.add(n);
    names.set(schema, name);
  }
  return names;
}

/** An ApiError as a GraphQL error: its code, status and details in `extensions`. */
export function graphqlErrorOf(err: unknown): GraphQLError {
  if (err instanceof GraphQLError) return err;
  if (err instanceof ApiError) return new GraphQLError(err.message, { extensions: { code: err.code, status: err.status, details: err.details } });
  return new GraphQLError('internal error', { extensions: { code: 'INTERNAL' }, originalError: err as Error });
}

const guard =
  <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
  async (...args: A): Promise<R> => {
    try {
      return await fn(...args);
    } catch (err) {
      throw graphqlErrorOf(err);
    }
  };

const pageArgs = {
  filter: { type: GraphQLString, description: 'The filter language of list (e.g. `address.postcode == \'N1\'`).' },
  sort: { type: GraphQLString, description: 'Sort keys, e.g. `name:asc,age:desc:nulls-last`.' },
  limit: { type: GraphQLInt, description: 'Records per page (default 100, at most 1,000).' },
  nextToken: { type: GraphQLString, description: 'The previous page’s nextToken.' },
};

const cache = new WeakMap<DatasetConfig, GraphQLSchema>();

/** The dataset's schema, built once per config object. */
export function datasetSchema(dataset: DatasetConfig): GraphQLSchema {
  let schema = cache.get(dataset);
  if (!schema) {
    schema = buildDatasetSchema(dataset);
    cache.set(dataset, schema);
  }
  return schema;
}

export function buildDatasetSchema(dataset: DatasetConfig): GraphQLSchema {
  const names = typeNames(Object.keys(dataset.schemas));
  const types = new Map<string, GraphQLObjectType>();
  const pages = new Map<string, GraphQLObjectType>();
  const taken = new Set<string>([...names.values()].flatMap((n) => [n, ...TYPE_SUFFIXES.map((suffix) => `${n}${suffix}`)]));
  const uniqueName = (base: string) => {
    let name = base;
    for (let n = 2; taken.has(name); n++) name = `${base}_${n}`;
    taken.add(name);
    return name;
  };

  const pageOf = (schema: string): GraphQLObjectType => {
    let page = pages.get(schema);
    if (!page) {
      page = new GraphQLObjectType({
        name: `${names.get(schema)}Page`,
        fields: () => ({ items: { type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(typeOf(schema)))) }, nextToken: { type: GraphQLString } }),
      });
      pages.set(schema, page);
    }
    return page;
  };

  const propertyFields = (owner: string, schema: string, props: Record<string, PropertyDef>, topLevel: boolean): GraphQLFieldConfigMap<Record<string, unknown>, GraphQLContext> => {
    const fields: GraphQLFieldConfigMap<Record<string, unknown>, GraphQLContext> = {};
    for (const [name, prop] of Object.entries(props)) {
      if (name.startsWith('__')) continue; // reserved for introspection in GraphQL
      const description = prop.description;
      if (prop.type === 'object') {
        const nested = new GraphQLObjectType({ name: uniqueName(`${owner}__${name}`), fields: () => propertyFields(`${owner}__${name}`, schema, prop.properties, false) });
        fields[name] = { type: nested, description };
      } else if (prop.type === 'link') {
        const target = prop.schema;
        fields[name] = {
          type: typeOf(target),
          description: description ?? `The linked ${target} (null when none, or when it no longer exists).`,
          extensions: { reads: 'record' satisfies FieldReads },
          resolve: guard(async (parent: Record<string, unknown>, _args: unknown, context: GraphQLContext) => {
            const link = parent[name] as { id?: string } | null | undefined;
            if (!link || typeof link.id !== 'string') return null;
            // An expanded link (subscription images are not expanded) or one to read.
            if ('version' in link) return link;
            return readOrNull(context, target, link.id);
          }),
        };
      } else if (prop.type === 'links') {
        if (!topLevel) continue;
        fields[name] = {
          type: new GraphQLNonNull(pageOf(prop.schema)),
          description: description ?? `The ${prop.schema} records whose ${prop.property} links here, a page at a time.`,
          args: pageArgs,
          extensions: { reads: 'page' satisfies FieldReads },
          resolve: guard(async (parent: Record<string, unknown>, args: PageArgs, context: GraphQLContext) =>
            context.engine.link(context.dataset, { schema, id: String(parent.id), link: name, ...pageRequest(args) }, context.ctx, (f) => `$.${name}.${f}`),
          ),
        };
      } else fields[name] = { type: SCALARS[prop.type], description };
    }
    return fields;
  };

  const typeOf = (schema: string): GraphQLObjectType => {
    let type = types.get(schema);
    if (!type) {
      const def = dataset.schemas[schema] as RecordSchemaDef;
      const name = names.get(schema)!;
      type = new GraphQLObjectType({
        name,
        description: def.description ?? `A ${schema} record.`,
        fields: () => ({
          id: { type: new GraphQLNonNull(GraphQLID) },
          version: { type: new GraphQLNonNull(GraphQLInt) },
          ...propertyFields(name, schema, def.properties, true),
        }),
      });
      types.set(schema, type);
    }
    return type;
  };

  const query: GraphQLFieldConfigMap<unknown, GraphQLContext> = {};
  const subscription: GraphQLFieldConfigMap<unknown, GraphQLContext> = {};
  for (const [schema, name] of names) {
    const type = typeOf(schema);
    query[name] = {
      type,
      description: `One ${schema} record (a past version with \`version\`); null when there is none.`,
      args: { id: { type: new GraphQLNonNull(GraphQLID) }, version: { type: GraphQLInt } },
      extensions: { reads: 'record' satisfies FieldReads },
      // readOrNull answers GraphQL errors itself: no guard (two async frames less per read by id).
      resolve: (_: unknown, args: { id: string; version?: number | null }, context: GraphQLContext) => readOrNull(context, schema, args.id, args.version ?? undefined),
    };
    query[`list_${name}`] = {
      type: new GraphQLNonNull(pageOf(schema)),
      description: `A page of ${schema} records.`,
      args: pageArgs,
      extensions: { reads: 'page' satisfies FieldReads },
      resolve: guard(async (_: unknown, args: PageArgs, context: GraphQLContext) => context.engine.list(context.dataset, { schema, ...pageRequest(args) }, context.ctx, (f) => `$.${f}`)),
    };
    const event = new GraphQLObjectType<ChangeEvent, GraphQLContext>({
      name: `${name}Event`,
      description: `A change of a ${schema} record.`,
      fields: {
        op: { type: new GraphQLNonNull(ChangeOpEnum) },
        cursor: { type: new GraphQLNonNull(GraphQLString), description: 'Pass as `after` to resume after this change.' },
        record: { type, description: 'The record as written; after a delete, only id and version.' },
      },
    });
    const field: GraphQLFieldConfig<ChangeEvent, GraphQLContext> = {
      type: event,
      description: `Changes of ${schema} records, as they commit, from any replica.`,
      args: {
        filter: { type: GraphQLString, description: 'Only changes whose record matches (a delete: the record as it was).' },
        ids: { type: new GraphQLList(new GraphQLNonNull(GraphQLID)), description: 'Only these records.' },
        after: { type: GraphQLString, description: 'Replay the changes after this cursor first (within the retention).' },
      },
      subscribe: guard(async (_: unknown, args: { filter?: string | null; ids?: string[] | null; after?: string | null }, context: GraphQLContext) => {
        if (!context.subscribe) throw new ApiError(400, 'SUBSCRIPTION_OVER_HTTP', 'subscriptions are served over WebSocket on this path');
        return context.subscribe({ schema, filter: args.filter ?? undefined, ids: args.ids ?? undefined, after: args.after ?? undefined });
      }) as GraphQLFieldConfig<ChangeEvent, GraphQLContext>['subscribe'],
      resolve: (event: ChangeEvent) => event,
    };
    subscription[name] = field as GraphQLFieldConfig<unknown, GraphQLContext>;
  }
  const mutation = mutationFields({ dataset, names, typeOf, uniqueName, scalars: { Long, Date: DateScalar, DateTime } });
  return new GraphQLSchema({
    query: new GraphQLObjectType({ name: 'Query', fields: query }),
    mutation: new GraphQLObjectType({ name: 'Mutation', description: 'Writes, through the same engine as REST; `@batch` runs them as one batch.', fields: mutation as GraphQLFieldConfigMap<unknown, GraphQLContext> }),
    subscription: new GraphQLObjectType({ name: 'Subscription', fields: subscription }),
    directives: [...specifiedDirectives, BatchDirective],
  });
}

interface PageArgs {
  filter?: string | null;
  sort?: string | null;
  limit?: number | null;
  nextToken?: string | null;
}

const pageRequest = (args: PageArgs) => ({
  filter: args.filter ?? undefined,
  sort: args.sort ?? undefined,
  limit: args.limit ?? undefined,
  nextToken: args.nextToken ?? undefined,
  expand: [],
});

/** The record, or null when there is none; any other failure as a GraphQL error (what `guard` would make of it). */
async function readOrNull(context: GraphQLContext, schema: string, id: string, version?: number): Promise<ApiRecord | null> {
  try {
    return await context.engine.read(context.dataset, { schema, id, version, expand: [] }, context.ctx, '$');
  } catch (err) {
    if (err instanceof ApiError && err.code === 'RECORD_NOT_FOUND') return null;
    throw graphqlErrorOf(err);
  }
}
