/**
 * The Mutation type of a dataset's GraphQL schema: per record schema `create_<Type>`,
 * `update_<Type>` and `delete_<Type>`, each returning `<Type>WriteResult`, with input types that
 * mirror the record types (nested objects as input objects, links as `LinkInput { id }`, inverse
 * links left out: they are not stored), the `Consistency` and `UpdateMode` enums and the `@batch`
 * operation directive. A resolver only turns its arguments into the body of the equivalent REST
 * request (`{"create": {schema, id, data, consistency}}`), parsed by REST's own parser and run by
 * the record engine: validation, messages, consistency rules and change feeds are REST's.
 * Under `@batch` the writes have already run as one REST batch (operation.ts): the resolvers then
 * answer from its results, by response name.
 */
import {
  DirectiveLocation,
  GraphQLBoolean,
  GraphQLDirective,
  GraphQLEnumType,
  GraphQLError,
  GraphQLFloat,
  GraphQLID,
  GraphQLInputObjectType,
  GraphQLInt,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLString,
  type GraphQLFieldConfigMap,
  type GraphQLInputFieldConfigMap,
  type GraphQLInputType,
  type GraphQLResolveInfo,
} from 'graphql';
import { CONSISTENCY_LEVELS, type Consistency, type DatasetConfig, type PropertyDef, type RecordSchemaDef } from '../../../model/types.js';
import { parseStructuredRequest } from '../engine/actions.js';
import type { ApiRecord, EngineResult } from '../engine/engine.js';
import { ApiError } from '../engine/errors.js';
import type { FieldReads } from './limits.js';
import { graphqlErrorOf } from './schema.js';

export type WriteKind = 'create' | 'update' | 'delete';

/** What a Mutation field writes (in its `extensions.write`): operation.ts builds a batch from it. */
export interface WriteField {
  kind: WriteKind;
  schema: string;
}

/** What `<Type>WriteResult` resolves from. */
export interface WriteResult {
  id: string;
  version: number | null;
  deleted: boolean;
  pending: boolean;
  record: ApiRecord | null;
}

/** A write's outcome per response name, when the operation ran as one batch (operation.ts). */
export type BatchOutcomes = ReadonlyMap<string, WriteResult | ApiError>;

export const ConsistencyEnum = new GraphQLEnumType({
  name: 'Consistency',
  description: 'How a write commits (docs/consistency.md); each location kind accepts some of them.',
  values: Object.fromEntries(CONSISTENCY_LEVELS.map((level) => [level, { value: level }])),
});

export const UpdateModeEnum = new GraphQLEnumType({
  name: 'UpdateMode',
  values: {
    REPLACE: { value: 'replace', description: 'The data replaces the record’s (the default).' },
    MERGE: { value: 'merge', description: 'The data is merged into the record’s; properties not given keep their values.' },
  },
});

export const BatchDirective = new GraphQLDirective({
  name: 'batch',
  description: 'Runs all root fields of this mutation as one batch, as a batch of `POST /{dataset}` does: at ATOMIC all or nothing; the response names (aliases) are the action names.',
  locations: [DirectiveLocation.MUTATION],
  args: { consistency: { type: ConsistencyEnum, description: 'The batch’s level; a field’s own `consistency` counts too (the weakest wins, as in REST).' } },
});

const LinkInput = new GraphQLInputObjectType({ name: 'LinkInput', description: 'A link to another record: its id.', fields: { id: { type: new GraphQLNonNull(GraphQLID) } } });

/** Names the Mutation part of the schema takes (type names of record schemas avoid them). */
export const MUTATION_TYPE_NAMES = ['Mutation', 'Consistency', 'UpdateMode', 'LinkInput'] as const;
/** Per record type: its input and write-result types. */
export const mutationTypeSuffixes = ['Input', 'WriteResult'] as const;

const INPUT_SCALARS: Record<string, (s: Record<string, GraphQLInputType>) => GraphQLInputType> = {
  string: () => GraphQLString,
  number: () => GraphQLFloat,
  boolean: () => GraphQLBoolean,
  integer: (s) => s.Long,
  date: (s) => s.Date,
  timestamp: (s) => s.DateTime,
};

export interface MutationBuild {
  dataset: DatasetConfig;
  names: ReadonlyMap<string, string>;
  typeOf: (schema: string) => GraphQLObjectType;
  uniqueName: (base: string) => string;
  /** The schema's custom scalars by name (Long, Date, DateTime). */
  scalars: Record<string, GraphQLInputType>;
}

interface MutationContext {
  engine: { execute(dataset: DatasetConfig, action: ReturnType<typeof parseStructuredRequest>, ctx?: unknown): Promise<EngineResult> };
  dataset: DatasetConfig;
  ctx?: unknown;
  batch?: BatchOutcomes;
}

/** The Mutation type's fields for every record schema. */
export function mutationFields(build: MutationBuild): GraphQLFieldConfigMap<unknown, MutationContext> {
  const fields: GraphQLFieldConfigMap<unknown, MutationContext> = {};
  const inputFields = (owner: string, props: Record<string, PropertyDef>): GraphQLInputFieldConfigMap => {
    const out: GraphQLInputFieldConfigMap = {};
    for (const [name, prop] of Object.entries(props)) {
      if (name.startsWith('__') || prop.type === 'links') continue; // introspection's names; inverse links are not stored
      if (prop.type === 'object') {
        const nested = new GraphQLInputObjectType({ name: build.uniqueName(`${owner}__${name}Input`), fields: () => inputFields(`${owner}__${name}`, prop.properties) });
        out[name] = { type: nested, description: prop.description };
      } else if (prop.type === 'link') out[name] = { type: LinkInput, description: prop.description ?? `The linked ${prop.schema} record.` };
      else out[name] = { type: INPUT_SCALARS[prop.type](build.scalars), description: prop.description };
    }
    return out;
  };

  for (const [schema, name] of build.names) {
    const def = build.dataset.schemas[schema] as RecordSchemaDef;
    const input = new GraphQLInputObjectType({ name: `${name}Input`, description: `The data of a ${schema} record (its properties; id and version are set by the service).`, fields: () => inputFields(name, def.properties) });
    const result = new GraphQLObjectType<WriteResult>({
      name: `${name}WriteResult`,
      description: `The outcome of a write of a ${schema} record.`,
      fields: {
        id: { type: new GraphQLNonNull(GraphQLID) },
        version: { type: GraphQLInt, description: 'The version written (after a delete: the deletion’s); null while pending.' },
        deleted: { type: new GraphQLNonNull(GraphQLBoolean), description: 'Whether this write deleted the record.' },
        pending: { type: new GraphQLNonNull(GraphQLBoolean), description: 'Accepted at ASYNC: written in the background, so version and record are null.' },
        record: { type: build.typeOf(schema), description: 'The record as written (null after a delete and while pending).' },
      },
    });
    const consistency = { type: ConsistencyEnum, description: 'The location’s default when omitted.' };
    const write = (kind: WriteKind) => ({ reads: 'write' satisfies FieldReads, write: { kind, schema } satisfies WriteField });
    fields[`create_${name}`] = {
      type: result,
      description: `Creates a ${schema} record (as \`POST /{dataset}\` \`create\`); a new id when none is given.`,
      args: { id: { type: GraphQLID }, data: { type: new GraphQLNonNull(input) }, consistency },
      extensions: write('create'),
      resolve: writeResolver('create', schema),
    };
    fields[`update_${name}`] = {
      type: result,
      description: `Replaces (or, with mode MERGE, merges into) a ${schema} record, as \`POST /{dataset}\` \`update\`.`,
      args: { id: { type: new GraphQLNonNull(GraphQLID) }, data: { type: new GraphQLNonNull(input) }, mode: { type: UpdateModeEnum, description: 'REPLACE when omitted.' }, consistency },
      extensions: write('update'),
      resolve: writeResolver('update', schema),
    };
    fields[`delete_${name}`] = {
      type: result,
      description: `Deletes a ${schema} record (its versions stay readable), as \`POST /{dataset}\` \`delete\`.`,
      args: { id: { type: new GraphQLNonNull(GraphQLID) }, consistency },
      extensions: write('delete'),
      resolve: writeResolver('delete', schema),
    };
  }
  return fields;
}

/** The REST action a Mutation field's arguments stand for (`{"create": {…}}`); `batchLevel` is @batch's consistency. */
export function restAction(write: WriteField, args: Record<string, unknown>, batchLevel?: Consistency): Record<string, unknown> {
  const action: Record<string, unknown> = { schema: write.schema };
  if (args.id !== undefined && args.id !== null) action.id = args.id;
  if (write.kind !== 'delete') action.data = args.data;
  if (write.kind === 'update' && args.mode) action.mode = args.mode;
  const consistency = (args.consistency as Consistency | null | undefined) ?? batchLevel;
  if (consistency) action.consistency = consistency;
  return { [write.kind]: action };
}

/** A write's engine result as `<Type>WriteResult`. */
export function writeResultOf(kind: WriteKind, result: EngineResult): WriteResult {
  const body = result.body as Record<string, unknown>;
  if (result.status === 202) return { id: String(body.id), version: null, deleted: false, pending: true, record: null };
  return resultOfBody(kind, body);
}

/** One action's entry of a REST batch answer (a record, `{id, version, deleted}`, or `{error, status}`) as a result or an error. */
export function batchEntryOf(kind: WriteKind, entry: Record<string, unknown>): WriteResult | ApiError {
  if ('error' in entry && typeof entry.status === 'number') {
    const error = entry.error as { code: string; message: string; details?: ApiError['details'] };
    return new ApiError(entry.status, error.code, error.message, error.details ?? []);
  }
  return resultOfBody(kind, entry);
}

function resultOfBody(kind: WriteKind, body: Record<string, unknown>): WriteResult {
  if (kind === 'delete') return { id: String(body.id), version: Number(body.version), deleted: true, pending: false, record: null };
  const record = body as ApiRecord;
  return { id: record.id, version: record.version, deleted: false, pending: false, record };
}

function writeResolver(kind: WriteKind, schema: string) {
  return async (_: unknown, args: Record<string, unknown>, context: MutationContext, info: GraphQLResolveInfo): Promise<WriteResult> => {
    try {
      if (context.batch) {
        const outcome = context.batch.get(String(info.path.key));
        if (!outcome) throw new GraphQLError('this field was not part of the batch');
        if (outcome instanceof ApiError) throw outcome;
        return outcome;
      }
      const action = parseStructuredRequest(restAction({ kind, schema }, args));
      return writeResultOf(kind, await context.engine.execute(context.dataset, action, context.ctx));
    } catch (err) {
      throw graphqlErrorOf(err);
    }
  };
}
