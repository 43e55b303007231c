/**
 * `GET /{dataset}/openapi`: an OpenAPI 3.1 document of one dataset's REST API, generated from its
 * config. Pure: the same dataset and environment config give the same document, key for key, so
 * the body is built once per config generation (cachedOpenApiBody) and `servers` (the data
 * plane's own addresses, never the request's Host) is added per request.
 *
 * Paths are relative to a server URL that already addresses the dataset (`http://iam.host/demo`
 * or `http://demo.iam.host`), so one document fits both addressing forms, and each record schema
 * gets its own paths (`/demo.Person/{id}`) with typed answers. Schema names always contain a dot
 * (model/json-schema.ts SCHEMA_NAME_PATTERN), so `/echo`, `/openapi` and `/raw-query` never clash
 * with a schema's path.
 */
import { CONSISTENCY_LEVELS, isSqlQuery, type DatasetConfig, type EnvironmentConfig, type PropertyDef, type QueryDef, type RecordSchemaDef } from '../../../model/types.js';
import { MAX_BATCH_ACTIONS, MAX_VERSION } from '../engine/actions.js';
import { fieldsOf } from '../engine/layout.js';
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from '../engine/lists.js';
import { recordJsonSchema } from '../engine/record-validation.js';
import { SCALAR_TYPE_NAMES } from '../engine/sql/scalar-types.js';
import { graphqlPaths, graphqlSchemas } from './openapi-graphql.js';
import { transactionPaths, transactionSchemas } from './openapi-transactions.js';
import { errorResponses, errorSchemas, GET_ERRORS, headerParameters, HEADERS, json, operation, POST_ERRORS, RAW_ERRORS, ref, schemaRef, type Json } from './openapi-parts.js';
import type { Authkind, GatewayRoute } from '../front-door/gateway.js';

export interface ServerObject {
  url: string;
  description?: string;
}

export interface OpenApiOptions {
  /** Where the dataset's API is reached (see serversFor). */
  servers: ServerObject[];
}

export const OPENAPI_VERSION = '3.1.0';
const DIALECT = 'https://spec.openapis.org/oas/3.1/dialect/base';
const MAX_ID_LENGTH = 512;
/** Longest filter, sort or nextToken text accepted (engine/actions.ts). */
const MAX_PAGE_TEXT = 8192;

/** What the dataset's location can do beyond records (its driver's capabilities). */
export interface DocumentFeatures {
  /** Bulk loads: the `Transaction` schema and paths. */
  transactions?: boolean;
}

export function openApiDocument(dataset: DatasetConfig, env: EnvironmentConfig, options: OpenApiOptions, features: DocumentFeatures = {}): Json {
  return withServers(openApiBody(dataset, env, features), options.servers);
}

/** The document with `servers` in its place (after `jsonSchemaDialect`), the body left untouched. */
export function withServers(body: Json, servers: ServerObject[]): Json {
  const { openapi, info, jsonSchemaDialect, ...rest } = body;
  return { openapi, info, jsonSchemaDialect, servers, ...rest };
}

const bodies = new WeakMap<DatasetConfig, { env: EnvironmentConfig; transactions: boolean; body: Json }>();

/**
 * The body for a dataset config object, generated once: a new generation is a new config object.
 * The environment (gateways, executors) is part of the document, so a new one regenerates it.
 */
export function cachedOpenApiBody(dataset: DatasetConfig, env: EnvironmentConfig, features: DocumentFeatures = {}): Json {
  const cached = bodies.get(dataset);
  const transactions = Boolean(features.transactions);
  if (cached && cached.env === env && cached.transactions === transactions) return cached.body;
  const body = openApiBody(dataset, env, features);
  bodies.set(dataset, { env, transactions, body });
  return body;
}

// ---------------------------------------------------------------------------------------------
// servers

/** What the data plane knows of its own addresses; never the request's Host (anyone can send any). */
export interface KnownAddresses {
  /** The URL it listens on, as a client on this machine opens it (`http://127.0.0.1:8080`). */
  listening?: string;
  /** Running in a cluster (KUBERNETES_SERVICE_HOST is set): the internal Service's DNS name is known. */
  inCluster?: boolean;
}

/**
 * The server URLs of a dataset's document, from the data plane's own configuration only: a
 * foreign `Host: evil.example` must not become the address a generated client talks to.
 *
 * First the gateways the Environment publishes under `spec.domain` (`https://iam.<domain>`,
 * `https://public.<domain>`), when it names one. Then an address every client resolves, where the Authorization scheme picks the gateway
 * (gateway.ts): in a cluster, an internal environment's internal Service; on a machine, the
 * listening address. Then, on a machine, `iam.localhost` / `public.localhost` on the same port
 * for the gateways that serve the dataset (curl and browsers resolve `*.localhost`; node, Python
 * and most generators do not, and generators take the first server). Nothing known: a relative URL.
 */
export function serversFor(known: KnownAddresses, dataset: DatasetConfig, env: EnvironmentConfig): ServerObject[] {
  const datasetPath = `/${encodeURIComponent(dataset.id)}`;
  // The Environment's published names first (spec.domain), then where this data plane is reached.
  const published: ServerObject[] = env.domain
    ? (['iam', 'public'] as const).filter((kind) => gatewayServes(kind, dataset, env)).map((kind) => ({ url: `https://${kind}.${env.domain}${datasetPath}`, description: `${kind} gateway (spec.domain)` }))
    : [];
  return [...published, ...ownAddresses(known, dataset, env, datasetPath)];
}

/** Where this data plane itself is reached: the listening address (with *.localhost) or, in a cluster, the internal Service. */
function ownAddresses(known: KnownAddresses, dataset: DatasetConfig, env: EnvironmentConfig, datasetPath: string): ServerObject[] {
  if (known.inCluster) {
    return env.type === 'internal'
      ? [{ url: `http://${env.id}-internal.${env.namespace}.svc.cluster.local${datasetPath}`, description: UNLABELLED('the internal load balancer, inside the cluster') }]
      : [{ url: datasetPath, description: 'this host' }];
  }
  const listening = known.listening ? new URL(known.listening) : undefined;
  if (!listening) return [{ url: datasetPath, description: 'this host' }];
  const servers: ServerObject[] = [{ url: `${listening.origin}${datasetPath}`, description: UNLABELLED('where this data plane listens') }];
  const port = listening.port ? `:${listening.port}` : '';
  for (const kind of ['iam', 'public'] as const) {
    if (gatewayServes(kind, dataset, env)) servers.push({ url: `http://${kind}.localhost${port}${datasetPath}`, description: `${kind} gateway (curl and browsers resolve *.localhost)` });
  }
  return servers;
}

/** The addresses the data plane knows itself by (AppDeps.listeningAddress, KUBERNETES_SERVICE_HOST). */
export function knownAddresses(deps: { listeningAddress?: () => string | undefined; inCluster?: boolean }): KnownAddresses {
  return { listening: deps.listeningAddress?.(), inCluster: deps.inCluster ?? false };
}

/** Cache headers of a document whose `servers` are the data plane's own: the same for every Host, private to the caller. */
export const DOCUMENT_CACHE_HEADERS = { 'cache-control': 'private, no-cache', vary: 'Authorization' } as const;

const UNLABELLED = (where: string) => `${where}; no gateway label, so the Authorization scheme picks the gateway (Proxy: iam, otherwise public)`;

function gatewayServes(kind: Authkind, dataset: DatasetConfig, env: EnvironmentConfig): boolean {
  if (!env.gateways[kind].enabled) return false;
  return kind === 'iam' ? dataset.auth.iam.principals.length > 0 : dataset.auth.public.enabled;
}

// ---------------------------------------------------------------------------------------------
// names


/**
 * Component names for record schemas: dots become `_` (`demo.Person` → `demo_Person`). Two names
 * that collide that way (`a.b_c`, `a_b.c`) are told apart by a `-2` suffix in sorted order; the
 * derived components use `-` (`demo_Person-Data`), which no schema name contains.
 */
function componentNames(schemaNames: string[]): Map<string, string> {
  const names = new Map<string, string>();
  const taken = new Set<string>();
  for (const schema of schemaNames) {
    const base = schema.replaceAll('.', '_');
    let name = base;
    for (let n = 2; taken.has(name); n++) name = `${base}-${n}`;
    taken.add(name);
    names.set(schema, name);
  }
  return names;
}

/** `demo.Person` + `address.owner` → `demo_Person_address_owner`, for operation ids. */
const opId = (...parts: string[]) => parts.join('_').replaceAll('.', '_');

// ---------------------------------------------------------------------------------------------
// record schemas

interface Names {
  component: Map<string, string>;
  /** The location takes bulk loads (the `Transaction` schema). */
  transactions: boolean;
}

/** A record as the API answers it: id, version, properties (links as `{id}` or the expanded record). */
function recordComponent(schema: string, def: RecordSchemaDef, names: Names): Json {
  const stored = recordJsonSchema(def, false).properties as Record<string, Json>;
  const inverse = Object.entries(def.properties).filter(([, p]) => p.type === 'links');
  const notes = [
    def.description,
    `A ${schema} record. Properties that are not set are left out; \`projection\` returns a subset.`,
    inverse.length
      ? `Inverse links (not part of the record; follow them with GET /${schema}/{id}/<link>): ${inverse.map(([name, p]) => `${name} → ${(p as { schema: string }).schema}.${(p as { property: string }).property}`).join(', ')}.`
      : undefined,
  ].filter(Boolean);
  return {
    type: 'object',
    description: notes.join(' '),
    ...(inverse.length
      ? {
          'x-inverse-links': Object.fromEntries(
            inverse.map(([name, p]) => [name, { schema: (p as { schema: string }).schema, property: (p as { property: string }).property, path: `/${schema}/{id}/${name}` }]),
          ),
        }
      : {}),
    required: ['id', 'version'],
    properties: {
      id: schemaRef('Id'),
      version: schemaRef('Version'),
      ...outputProperties(def.properties, stored, names),
    },
  };
}

/** The stored properties' JSON Schemas (recordJsonSchema), with links widened to `{id}` | record. */
function outputProperties(props: Record<string, PropertyDef>, stored: Record<string, Json>, names: Names): Json {
  const out: Json = {};
  for (const [name, prop] of Object.entries(props)) {
    if (prop.type === 'links') continue;
    const described = prop.description ? { description: prop.description } : {};
    if (prop.type === 'link') {
      out[name] = {
        ...described,
        description: prop.description ?? `Link to a ${prop.schema}: \`{id}\`, or the whole record when expanded.`,
        anyOf: [schemaRef('Link'), schemaRef(names.component.get(prop.schema)!), { type: 'null' }],
      };
    } else if (prop.type === 'object') {
      const { additionalProperties: _closed, properties, ...rest } = stored[name] as Json;
      out[name] = { ...described, ...rest, properties: outputProperties(prop.properties, properties as Record<string, Json>, names) };
    } else out[name] = { ...described, ...stored[name] };
  }
  return out;
}

/** The names `expand` takes for a schema: its link fields, dotted when nested. */
const linkFields = (def: RecordSchemaDef) => fieldsOf(def).filter((f) => f.type === 'link');


function pageParameters(): Json {
  return {
    id: { name: 'id', in: 'path', required: true, description: 'The record id.', schema: schemaRef('Id') },
    version: { name: 'version', in: 'query', description: 'Read this past version instead of the current one.', schema: schemaRef('Version') },
    filter: {
      name: 'filter',
      in: 'query',
      description:
        "A filter such as `address.postcode == 'N1' and age >= 30`: comparisons (`==`, `!=`, `<`, `<=`, `>`, `>=`), `in (…)`, `is [not] null`, `and`, `or`, `not`, parentheses; nested paths and a link's `employer.id`; literals are converted to the property's type. Errors name the position.",
      schema: { type: 'string', maxLength: MAX_PAGE_TEXT },
    },
    sort: {
      name: 'sort',
      in: 'query',
      description: 'Comma-separated keys `field[:asc|:desc][:nulls-first|:nulls-last]` (shorthand `:first`/`:last`); binary order; the id breaks ties. Default: by id.',
      schema: { type: 'string', maxLength: MAX_PAGE_TEXT },
    },
    limit: { name: 'limit', in: 'query', description: 'Records per page.', schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE_LIMIT, default: DEFAULT_PAGE_LIMIT } },
    nextToken: {
      name: 'nextToken',
      in: 'query',
      description: 'The previous page’s `nextToken`, with the same filter and sort (else 400 INVALID_NEXT_TOKEN).',
      schema: { type: 'string', maxLength: MAX_PAGE_TEXT },
    },
  };
}

function fixedSchemas(dataset: DatasetConfig, names: Names): Json {
  const records = [...names.component.values()];
  const nameList = (what: string) => ({
    description: `${what}: an array of names, or one comma-separated string.`,
    oneOf: [{ type: 'array', items: { type: 'string', minLength: 1 } }, { type: 'string' }],
  });
  return {
    Id: { type: 'string', minLength: 1, maxLength: MAX_ID_LENGTH, description: 'A record id: 1–512 characters, no NUL (U+0000).' },
    Version: { type: 'integer', minimum: 1, maximum: MAX_VERSION, description: 'A record version: 1 on create, one more on each update.' },
    Link: { type: 'object', description: 'A link to another record.', required: ['id'], additionalProperties: false, properties: { id: schemaRef('Id') } },
    Consistency: {
      type: 'string',
      enum: [...CONSISTENCY_LEVELS],
      description: `Atomicity asked of the store; default ${dataset.location.defaultConsistency} for this dataset.`,
    },
    SchemaName: { type: 'string', enum: Object.keys(dataset.schemas).sort(), description: 'A record schema of this dataset.' },
    Expand: nameList('Link properties to expand (dotted when nested)'),
    Projection: nameList('Properties to return besides id and version (dotted when nested)'),
    ...errorSchemas(),
    DeleteResult: {
      type: 'object',
      required: ['id', 'version', 'deleted'],
      properties: { id: schemaRef('Id'), version: schemaRef('Version'), deleted: { const: true } },
    },
    Accepted: {
      type: 'object',
      description: 'An ASYNC write, accepted and written in the background.',
      required: ['accepted', 'consistency'],
      properties: {
        accepted: { const: true },
        consistency: { const: 'ASYNC' },
        id: schemaRef('Id'),
        actions: { type: 'object', additionalProperties: { type: 'object', required: ['id'], properties: { id: schemaRef('Id') } } },
      },
    },
    BatchFailure: {
      type: 'object',
      description: 'A batch action that failed while the others were committed (QUORUM, EVENTUAL).',
      required: ['error', 'status'],
      properties: { error: schemaRef('ErrorBody'), status: { type: 'integer', minimum: 400, maximum: 599 } },
    },
    BatchResult: {
      type: 'object',
      description: 'One entry per action name.',
      additionalProperties: { anyOf: [...records.map(schemaRef), schemaRef('DeleteResult'), schemaRef('BatchFailure')] },
    },
    Echo: {
      type: 'object',
      required: ['path', 'headers', 'requestId', 'caller', 'method', 'query', 'contentType', 'accept'],
      properties: {
        path: { type: 'string' },
        headers: { type: 'object', required: ['empty'], properties: { empty: { type: 'boolean', description: 'True when only transport headers came.' } } },
        requestId: { type: 'string', format: 'uuid' },
        caller: {
          type: 'object',
          required: ['anon', 'schema', 'id', 'claims', 'super'],
          properties: {
            anon: { type: 'boolean' },
            schema: { type: 'string', description: '`iam` or `public`.' },
            id: { type: 'string', description: 'The principal or token subject.' },
            claims: { type: 'object', description: 'The token’s claims (public gateway).' },
            super: { type: 'boolean' },
          },
        },
        method: { type: 'string', description: 'Lower case, e.g. `get`.' },
        query: { type: 'object', required: ['empty'], properties: { empty: { type: 'boolean' } } },
        contentType: { type: 'string', description: 'Short form, e.g. `json`.' },
        accept: { type: 'string', description: 'Short form, e.g. `json`.' },
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// structured requests (POST /{dataset})

const pageFields = (): Json => ({
  filter: { type: 'string', minLength: 1, maxLength: MAX_PAGE_TEXT, description: 'See the `filter` query parameter.' },
  sort: { type: 'string', minLength: 1, maxLength: MAX_PAGE_TEXT, description: 'See the `sort` query parameter.' },
  limit: { type: 'integer', minimum: 1, maximum: MAX_PAGE_LIMIT, default: DEFAULT_PAGE_LIMIT },
  nextToken: { type: 'string', minLength: 1, maxLength: MAX_PAGE_TEXT },
  expand: schemaRef('Expand'),
});

const wrapper = (key: string, action: Json): Json => ({ type: 'object', required: [key], additionalProperties: false, properties: { [key]: action } });

function structuredSchemas(dataset: DatasetConfig, names: Names): Json {
  const schemaNames = Object.keys(dataset.schemas).sort();
  const perSchema = (suffix: string) => ({ oneOf: schemaNames.map((s) => schemaRef(`${names.component.get(s)}-${suffix}`)) });
  const out: Json = {
    ReadAction: {
      type: 'object',
      required: ['schema', 'id'],
      additionalProperties: false,
      properties: { schema: schemaRef('SchemaName'), id: schemaRef('Id'), version: schemaRef('Version'), expand: schemaRef('Expand'), projection: schemaRef('Projection'), consistency: schemaRef('Consistency') },
    },
    CreateAction: names.transactions ? { oneOf: [...perSchema('Create').oneOf, schemaRef('Transaction-Create')] } : perSchema('Create'),
    UpdateAction: perSchema('Update'),
    DeleteAction: {
      type: 'object',
      required: ['schema', 'id'],
      additionalProperties: false,
      properties: { schema: schemaRef('SchemaName'), id: schemaRef('Id'), consistency: schemaRef('Consistency') },
    },
    ListAction: { type: 'object', required: ['schema'], additionalProperties: false, properties: { schema: schemaRef('SchemaName'), ...pageFields() } },
    LinkAction: {
      type: 'object',
      required: ['schema', 'id', 'link'],
      additionalProperties: false,
      properties: { schema: schemaRef('SchemaName'), id: schemaRef('Id'), link: { type: 'string', minLength: 1, maxLength: 255, description: 'A link or inverse link of the schema.' }, ...pageFields() },
    },
    ReadRequest: wrapper('read', schemaRef('ReadAction')),
    CreateRequest: wrapper('create', schemaRef('CreateAction')),
    UpdateRequest: wrapper('update', schemaRef('UpdateAction')),
    DeleteRequest: wrapper('delete', schemaRef('DeleteAction')),
    BatchRequest: wrapper('batch', {
      type: 'object',
      required: ['actions'],
      additionalProperties: false,
      properties: {
        actions: {
          type: 'object',
          description: 'Action name → one create, update or delete.',
          minProperties: 1,
          maxProperties: MAX_BATCH_ACTIONS,
          additionalProperties: { oneOf: [schemaRef('CreateRequest'), schemaRef('UpdateRequest'), schemaRef('DeleteRequest')] },
        },
      },
    }),
    ListRequest: wrapper('list', schemaRef('ListAction')),
    LinkRequest: wrapper('link', schemaRef('LinkAction')),
    StructuredRequest: {
      description: 'Exactly one action key.',
      oneOf: ['Read', 'Create', 'Update', 'Delete', 'Batch', 'List', 'Link', ...(hasQueries(dataset) ? ['Query'] : [])].map((a) => schemaRef(`${a}Request`)),
    },
  };
  if (hasQueries(dataset)) {
    out.QueryAction = {
      description: 'A named query of the dataset (`spec.queries`) with its arguments.',
      oneOf: Object.entries(dataset.queries!)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([name, def]) => ({
          type: 'object',
          required: ['schema', ...(Object.values(def.arguments ?? {}).some((a) => a.required) ? ['arguments'] : [])],
          additionalProperties: false,
          properties: {
            schema: { const: name },
            arguments: argumentsSchema(def),
            limit: { type: 'integer', minimum: 1, maximum: MAX_PAGE_LIMIT },
            ...(isSqlQuery(def) ? {} : { nextToken: { type: 'string' } }),
          },
        })),
    };
    out.QueryRequest = wrapper('query', schemaRef('QueryAction'));
  }
  return out;
}

/** Per record schema: the record, its create/replace data, its merge data, its page and its write actions. */
function recordSchemas(dataset: DatasetConfig, names: Names): Json {
  const out: Json = {};
  for (const schema of Object.keys(dataset.schemas).sort()) {
    const def = dataset.schemas[schema];
    const name = names.component.get(schema)!;
    const common = { expand: schemaRef('Expand'), projection: schemaRef('Projection'), consistency: schemaRef('Consistency') };
    out[name] = recordComponent(schema, def, names);
    out[`${name}-Data`] = { description: `${schema} data for create and replace: every required property, no id or version.`, ...recordJsonSchema(def, true) };
    out[`${name}-Patch`] = { description: `${schema} data for a merge update: only the properties to change.`, ...recordJsonSchema(def, false) };
    out[`${name}-Page`] = {
      type: 'object',
      required: ['items'],
      properties: { items: { type: 'array', items: schemaRef(name) }, nextToken: { type: 'string', description: 'Absent on the last page.' } },
    };
    out[`${name}-Create`] = {
      type: 'object',
      required: ['schema', 'data'],
      additionalProperties: false,
      properties: { schema: { const: schema }, id: { ...schemaRef('Id'), description: 'Default: a new UUID.' }, data: schemaRef(`${name}-Data`), ...common },
    };
    out[`${name}-Update`] = {
      type: 'object',
      required: ['schema', 'id', 'data'],
      additionalProperties: false,
      properties: {
        schema: { const: schema },
        id: schemaRef('Id'),
        mode: { enum: ['replace', 'merge'], default: 'replace', description: '`replace`: unset properties become null; `merge`: only the given properties change.' },
        data: schemaRef(`${name}-Patch`),
        ...common,
      },
      // replace (the default) needs the full data.
      if: { required: ['mode'], properties: { mode: { const: 'merge' } } },
      else: { properties: { data: schemaRef(`${name}-Data`) } },
    };
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// paths


const expandParameter = (def: RecordSchemaDef, what: string): Json[] => {
  const links = linkFields(def).map((f) => f.dotted);
  if (!links.length) return [];
  return [{ name: 'expand', in: 'query', description: `Link properties to expand in ${what}, comma-separated.`, style: 'form', explode: false, schema: { type: 'array', items: { enum: links } } }];
};

function recordPaths(dataset: DatasetConfig, names: Names): Json {
  const paths: Json = {};
  for (const schema of Object.keys(dataset.schemas).sort()) {
    const def = dataset.schemas[schema];
    const name = names.component.get(schema)!;
    const pageParams = ['filter', 'sort', 'limit', 'nextToken'].map((p) => ref('parameters', p));
    paths[`/${schema}`] = {
      get: operation(
        { tags: [schema], operationId: opId('list', schema), summary: `A page of ${schema} records`, parameters: [...pageParams, ...expandParameter(def, 'each record')] },
        { 200: json('The page; `nextToken` when more records follow.', schemaRef(`${name}-Page`)) },
        GET_ERRORS,
      ),
    };
    const properties = fieldsOf(def).map((f) => f.dotted);
    paths[`/${schema}/{id}`] = {
      get: operation(
        {
          tags: [schema],
          operationId: opId('read', schema),
          summary: `Read one ${schema} record`,
          parameters: [
            ref('parameters', 'id'),
            ...expandParameter(def, 'the record'),
            ref('parameters', 'version'),
            {
              name: 'projection',
              in: 'query',
              description: 'Properties to return besides id and version, comma-separated (dotted when nested).',
              style: 'form',
              explode: false,
              schema: { type: 'array', items: { type: 'string', ...(properties.length ? { examples: [properties[0]] } : {}) } },
            },
          ],
        },
        { 200: json(`The ${schema} record.`, schemaRef(name)) },
        GET_ERRORS,
      ),
    };
    const links: { link: string; target: string; summary: string }[] = [
      ...linkFields(def).map((f) => ({ link: f.dotted, target: f.target!, summary: `The ${f.target} this ${schema} links to through ${f.dotted} (a page of at most one record)` })),
      ...Object.entries(def.properties).flatMap(([link, p]) =>
        p.type === 'links' ? [{ link, target: p.schema, summary: `The ${p.schema} records whose ${p.property} links to this ${schema}` }] : [],
      ),
    ];
    for (const { link, target, summary } of links) {
      const targetDef = dataset.schemas[target];
      if (!targetDef) continue; // the model cross-checks targets; a dangling one is no path
      paths[`/${schema}/{id}/${link}`] = {
        get: operation(
          { tags: [schema], operationId: opId('link', schema, link), summary, parameters: [ref('parameters', 'id'), ...pageParams, ...expandParameter(targetDef, 'each record')] },
          { 200: json(`A page of ${target} records.`, schemaRef(`${names.component.get(target)}-Page`)) },
          GET_ERRORS,
        ),
      };
    }
  }
  return paths;
}

function datasetPaths(dataset: DatasetConfig, names: Names): Json {
  const records = [...names.component.values()];
  const pages = records.map((n) => schemaRef(`${n}-Page`));
  const paths: Json = {
    '/': {
      post: operation(
        {
          tags: ['dataset'],
          operationId: 'structured',
          summary: 'One structured action: read, create, update, delete, batch, list or link',
          requestBody: { required: true, content: { 'application/json': { schema: schemaRef('StructuredRequest') } } },
        },
        {
          200: json('read / update: the record; delete: `{id, version, deleted}`; list / link: a page; batch: one result per action.', {
            anyOf: [...records.map(schemaRef), schemaRef('DeleteResult'), ...pages, schemaRef('BatchResult')],
          }),
          201: json('create: the new record, version 1.', { anyOf: records.map(schemaRef) }),
          202: json(
            names.transactions ? 'ASYNC: accepted, written in the background; a Transaction create: the transaction, PENDING (follow it at GET /Transaction/{id}).' : 'ASYNC: accepted, written in the background.',
            names.transactions ? { anyOf: [schemaRef('Accepted'), schemaRef('Transaction')] } : schemaRef('Accepted'),
          ),
          207: json('batch at QUORUM or EVENTUAL where some actions failed: each action’s result or `{error, status}`.', schemaRef('BatchResult')),
        },
        POST_ERRORS,
      ),
    },
    '/echo': {
      get: operation(
        { tags: ['dataset'], operationId: 'echo', summary: 'What the service saw of the request and the caller' },
        { 200: json('The caller and the request.', schemaRef('Echo')) },
        GET_ERRORS,
      ),
    },
    '/openapi': {
      get: operation(
        { tags: ['dataset'], operationId: 'openapi', summary: 'This document' },
        { 200: json('The OpenAPI 3.1 document of this dataset’s REST API.', { type: 'object', required: ['openapi', 'info', 'paths'] }) },
        GET_ERRORS,
      ),
    },
  };
  if (dataset.auth.iam.rawSqlEndpointEnabled) {
    paths['/raw-query'] = {
      post: operation(
        {
          tags: ['dataset'],
          operationId: 'rawQuery',
          summary: 'A read-only SQL query (iam gateway only; other gateways get 403 RAW_SQL_IAM_ONLY)',
          security: [{ iam: [] }],
          requestBody: { required: true, content: { 'application/json': { schema: schemaRef('RawQueryRequest') } } },
        },
        { 200: json('The rows, one object per row: column name → value.', schemaRef('RawQueryRows')) },
        RAW_ERRORS,
      ),
    };
  }
  return { ...paths, ...graphqlPaths(dataset), ...queryPaths(dataset, names), ...(names.transactions ? transactionPaths() : {}), ...recordPaths(dataset, names) };
}

const hasQueries = (dataset: DatasetConfig) => Object.keys(dataset.queries ?? {}).length > 0;

/** The JSON Schema of an argument's value, by its declared type (sql/scalar-types.ts accepts these). */
function argumentValueSchema(type: string): Json {
  switch (type) {
    case 'integer':
    case 'long':
      return { type: 'integer' };
    case 'float':
    case 'double':
    case 'number':
      return { type: 'number' };
    case 'decimal':
      return { type: ['number', 'string'] };
    case 'boolean':
      return { type: 'boolean' };
    case 'date':
      return { type: 'string', format: 'date' };
    case 'timestamp':
      return { type: 'string', format: 'date-time' };
    case 'uuid':
      return { type: 'string', format: 'uuid' };
    case 'json':
      return {};
    default:
      return { type: 'string' };
  }
}

function argumentsSchema(def: QueryDef): Json {
  const args = Object.entries(def.arguments ?? {});
  return {
    type: 'object',
    additionalProperties: false,
    required: args.filter(([, a]) => a.required).map(([n]) => n),
    properties: Object.fromEntries(args.map(([n, a]) => [n, { ...argumentValueSchema(a.type), ...(a.description ? { description: a.description } : {}) }])),
  };
}

/** `GET /queries/{name}`: each argument a query parameter; filter-based queries page like lists. */
function queryPaths(dataset: DatasetConfig, names: Names): Json {
  const paths: Json = {};
  for (const [name, def] of Object.entries(dataset.queries ?? {}).sort(([a], [b]) => (a < b ? -1 : 1))) {
    const parameters: Json[] = Object.entries(def.arguments ?? {}).map(([arg, a]) => ({
      name: arg,
      in: 'query',
      required: Boolean(a.required),
      description: a.description ?? `Argument "${arg}" (${a.type}).`,
      schema: argumentValueSchema(a.type),
    }));
    parameters.push(ref('parameters', 'limit'));
    const sql = isSqlQuery(def);
    if (!sql) parameters.push(ref('parameters', 'nextToken'));
    const component = sql ? undefined : names.component.get(def.schema);
    paths[`/queries/${name}`] = {
      get: operation(
        { tags: ['dataset'], operationId: opId('query', name), summary: def.description ?? `The named query ${name}`, parameters },
        {
          200: json(
            sql ? 'The rows (one page; SQL queries take no nextToken).' : 'A page of records; `nextToken` when more follow.',
            component ? schemaRef(`${component}-Page`) : { type: 'object', required: ['items'], properties: { items: { type: 'array', items: { type: 'object' } } } },
          ),
        },
        GET_ERRORS,
      ),
    };
  }
  return paths;
}

function rawQuerySchemas(): Json {
  return {
    RawQueryRequest: {
      type: 'object',
      required: ['sql'],
      additionalProperties: false,
      properties: {
        sql: { type: 'string', minLength: 1, maxLength: 100_000, description: 'SQL with `@{alias}` / `@{alias.property}` tokens and `${name}` bind placeholders.' },
        using: { type: 'object', description: 'Alias → schema name.', additionalProperties: schemaRef('SchemaName') },
        arguments: { type: 'object', description: 'Placeholder name → typed value.', additionalProperties: schemaRef('RawQueryArgument') },
      },
    },
    RawQueryRows: {
      type: 'array',
      description: 'At most the row limit of the dataset; values as the store returns them (numbers, strings, booleans, null; JSON columns as JSON).',
      items: { type: 'object', additionalProperties: { type: ['string', 'number', 'integer', 'boolean', 'null', 'object', 'array'] } },
    },
    RawQueryArgument: {
      type: 'object',
      required: ['value', 'type'],
      additionalProperties: false,
      properties: { value: { description: 'The value to bind (null binds NULL).' }, type: { type: 'string', enum: [...SCALAR_TYPE_NAMES] } },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// the document

/** Everything but `servers`, in a fixed key order. */
export function openApiBody(dataset: DatasetConfig, env: EnvironmentConfig, features: DocumentFeatures = {}): Json {
  const schemaNames = Object.keys(dataset.schemas).sort();
  const names: Names = { component: componentNames(schemaNames), transactions: Boolean(features.transactions) };
  const iam = gatewayServes('iam', dataset, env);
  const bearer = gatewayServes('public', dataset, env);
  const security = [...(iam ? [{ iam: [] }] : []), ...(bearer ? [{ bearer: [] }] : []), ...(dataset.caller.anon ? [{}] : [])];
  return {
    openapi: OPENAPI_VERSION,
    info: {
      title: `Data Access Service: dataset ${dataset.id}`,
      version: String(dataset.generation),
      description: [
        `The REST API of dataset \`${dataset.id}\` (environment \`${env.id}\`, ${dataset.location.kind} location), generated from its config generation ${dataset.generation}.`,
        'Paths are relative to a server URL that addresses the dataset: `http://iam.<domain>/<dataset>` or `http://<dataset>.iam.<domain>` (likewise `public`).',
        'Every GET also answers HEAD. Every response carries `x-request-id`; every error is the `Error` shape.',
      ].join(' '),
    },
    jsonSchemaDialect: DIALECT,
    // Gateways that do not serve this dataset keep their scheme out of `security`: their answer is 403.
    security: security.length ? security : [{ iam: [] }],
    tags: [
      { name: 'dataset', description: 'Dataset-wide endpoints.' },
      { name: 'graphql', description: 'GraphQL queries over HTTP; subscriptions over WebSocket at the same path.' },
      ...(names.transactions ? [{ name: 'Transaction', description: 'Bulk loads: create with POST / {"create": {"schema": "Transaction", "data": …}}, then follow their progress.' }] : []),
      ...schemaNames.map((s) => ({ name: s, description: dataset.schemas[s].description ?? `${s} records.` })),
    ],
    paths: datasetPaths(dataset, names),
    components: {
      schemas: {
        ...fixedSchemas(dataset, names),
        ...structuredSchemas(dataset, names),
        ...(dataset.auth.iam.rawSqlEndpointEnabled ? rawQuerySchemas() : {}),
        ...graphqlSchemas(),
        ...(names.transactions ? transactionSchemas(dataset) : {}),
        ...recordSchemas(dataset, names),
      },
      responses: errorResponses(),
      parameters: { ...pageParameters(), ...headerParameters(env) },
      headers: Object.fromEntries(Object.values(HEADERS)),
      securitySchemes: {
        iam: { type: 'apiKey', in: 'header', name: 'Authorization', description: 'IAM gateway: `Authorization: Proxy <principal>`; the principal must match the dataset’s auth.iam.principals.' },
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'API (public) gateway: a JWT from the environment’s identity provider.' },
      },
    },
  };
}
