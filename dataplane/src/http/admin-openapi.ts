/**
 * `GET /_admin/openapi`: the OpenAPI 3.1 document of the administrative API (admin/): Datasets
 * listed, created from a manifest, shown, deleted, paused and resumed, on the iam gateway for the
 * Environment's admin principals. Pure; `servers` from the data plane's own addresses like a dataset's.
 */
import { errorResponses, errorSchemas, HEADERS, json, operation, ref, schemaRef, type Json } from './openapi-parts.js';
import { OPENAPI_VERSION, type KnownAddresses, type ServerObject } from './openapi.js';

const ERRORS = [400, 401, 403, 404, 405, 408, 413, 415, 431, 503];
/** The admin API takes none of the dataset endpoints' conventional headers. */
const NO_HEADERS: string[] = [];

/** The admin API's base at the data plane's own addresses (never the request's Host): see serversFor. */
export function adminServers(known: KnownAddresses, domain?: string): ServerObject[] {
  // The iam gateway the Environment publishes (spec.domain) first, as for a dataset.
  const published: ServerObject[] = domain ? [{ url: `https://iam.${domain}/_admin`, description: 'iam gateway (spec.domain)' }] : [];
  if (known.inCluster || !known.listening) return [...published, { url: '/_admin', description: 'this host' }];
  const listening = new URL(known.listening);
  return [
    ...published,
    { url: `${listening.origin}/_admin`, description: 'where this data plane listens (send Authorization: Proxy <admin>)' },
    { url: `http://iam.localhost${listening.port ? `:${listening.port}` : ''}/_admin`, description: 'iam gateway (curl and browsers resolve *.localhost)' },
  ];
}

export function adminOpenApiDocument(servers: ServerObject[]): Json {
  const op = (o: Json, success: Record<string, Json>) => operation(o, success, ERRORS, NO_HEADERS);
  const id = { name: 'id', in: 'path', required: true, description: 'The Dataset’s name (a DNS label).', schema: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$' } };
  const paused = (value: boolean) => json(value ? 'Paused: data requests answer 503 DATASET_PAUSED until resumed.' : 'Resumed.', { type: 'object', required: ['id', 'paused'], properties: { id: { type: 'string' }, paused: { const: value } } });
  return {
    openapi: OPENAPI_VERSION,
    info: {
      title: 'Data Access Service: administrative API',
      version: '1',
      description: 'Datasets of this environment, on the iam gateway, for the principals in the Environment’s `spec.admin.principals` (`Authorization: Proxy <principal>`).',
    },
    jsonSchemaDialect: 'https://spec.openapis.org/oas/3.1/dialect/base',
    servers,
    security: [{ iam: [] }],
    tags: [{ name: 'datasets', description: 'Datasets: manifests locally, Dataset resources in a cluster.' }],
    paths: {
      '/datasets': {
        get: op({ tags: ['datasets'], operationId: 'listDatasets', summary: 'The datasets of this environment' }, { 200: json('Every dataset.', { type: 'object', required: ['items'], properties: { items: { type: 'array', items: schemaRef('DatasetState') } } }) }),
        post: op(
          {
            tags: ['datasets'],
            operationId: 'createDataset',
            summary: 'Create a dataset from a Dataset manifest (as JSON)',
            requestBody: { required: true, content: { 'application/json': { schema: schemaRef('DatasetManifest') } } },
          },
          {
            201: json('Created; served once prepared (status pending → ready).', schemaRef('DatasetCreated')),
            409: ref('responses', 'Conflict'),
          },
        ),
      },
      '/datasets/{id}': {
        get: op({ tags: ['datasets'], operationId: 'getDataset', summary: 'One dataset’s state', parameters: [id] }, { 200: json('The dataset.', schemaRef('DatasetState')) }),
        delete: op(
          { tags: ['datasets'], operationId: 'deleteDataset', summary: 'Delete a dataset the administrative API manages', parameters: [id] },
          {
            200: json('Deleted.', { type: 'object', required: ['id', 'deleted'], properties: { id: { type: 'string' }, deleted: { const: true } } }),
            409: ref('responses', 'Conflict'),
          },
        ),
      },
      '/datasets/{id}/pause': { post: op({ tags: ['datasets'], operationId: 'pauseDataset', summary: 'Pause: keep storage and config, answer data requests 503', parameters: [id] }, { 200: paused(true), 409: ref('responses', 'Conflict') }) },
      '/datasets/{id}/resume': { post: op({ tags: ['datasets'], operationId: 'resumeDataset', summary: 'Resume a paused dataset', parameters: [id] }, { 200: paused(false), 409: ref('responses', 'Conflict') }) },
      '/openapi': { get: op({ tags: ['datasets'], operationId: 'adminOpenapi', summary: 'This document' }, { 200: json('The OpenAPI 3.1 document of the administrative API.', { type: 'object', required: ['openapi', 'info', 'paths'] }) }) },
      '/docs': {
        get: operation(
          { tags: ['datasets'], operationId: 'adminDocs', summary: 'Swagger UI over this document (a browser page; it asks for the Authorization value)', security: [{}] },
          { 200: { description: 'The Swagger UI page.', content: { 'text/html': { schema: { type: 'string' } } } } },
          [404, 405],
          NO_HEADERS,
        ),
      },
    },
    components: {
      schemas: {
        DatasetState: {
          type: 'object',
          required: ['id', 'status', 'paused', 'managed'],
          properties: {
            id: { type: 'string' },
            status: { type: 'string', enum: ['pending', 'ready', 'failed'], description: 'As this data plane serves it.' },
            problem: { type: 'string', description: 'Why a failed dataset cannot be served.' },
            paused: { type: 'boolean' },
            managed: { type: 'boolean', description: 'Written by the administrative API (only those can be changed here).' },
            generation: { type: 'integer' },
            ready: { type: 'object', description: 'In a cluster: the Dataset’s Ready condition.', properties: { status: { type: 'string' }, reason: { type: 'string' } } },
          },
        },
        DatasetCreated: { type: 'object', required: ['id', 'status', 'managed'], properties: { id: { type: 'string' }, status: { const: 'pending' }, managed: { const: true } } },
        DatasetManifest: {
          type: 'object',
          description: 'A Dataset manifest as JSON (apiVersion and kind optional); `spec.environment` defaults to this environment. Checked like any manifest: 400 INVALID_MANIFEST names each problem.',
          required: ['metadata', 'spec'],
          properties: {
            apiVersion: { const: 'dataaccess.dev/v1alpha1' },
            kind: { const: 'Dataset' },
            metadata: { type: 'object', required: ['name'], properties: { name: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$' } } },
            spec: { type: 'object', description: 'The Dataset spec: location, schemas, auth… (docs/operator.md).' },
          },
        },
        ...errorSchemas(),
      },
      responses: errorResponses(),
      headers: Object.fromEntries(Object.values(HEADERS)),
      securitySchemes: {
        iam: { type: 'apiKey', in: 'header', name: 'Authorization', description: '`Proxy <principal>`: one of the Environment’s `spec.admin.principals`, on the iam gateway.' },
      },
    },
  };
}
