/**
 * The pieces every OpenAPI document of the data plane shares (openapi.ts for a dataset,
 * openapi-transactions.ts, admin-openapi.ts): `$ref`s, the error answers, the response headers,
 * the conventional request headers and the operation wrapper that adds them.
 */
import type { EnvironmentConfig } from '../../../model/types.js';
import { DEFAULT_BODY_LIMIT } from './body.js';

export type Json = Record<string, unknown>;

export const ref = (section: string, name: string) => ({ $ref: `#/components/${section}/${name}` });
export const schemaRef = (name: string) => ref('schemas', name);
// ---------------------------------------------------------------------------------------------
// the shared components

export const ERROR_STATUSES: Record<number, { name: string; description: string; headers?: string[] }> = {
  400: {
    name: 'BadRequest',
    description:
      'The request cannot be served as sent: malformed JSON (MALFORMED_JSON), invalid UTF-8 (INVALID_UTF8), nesting over 64 levels (JSON_TOO_DEEP), text that cannot be stored (INVALID_TEXT), unknown or missing fields, data that does not fit the schema (INVALID_RECORD), a bad filter, sort, limit or nextToken (INVALID_FILTER, INVALID_SORT, INVALID_LIMIT, INVALID_NEXT_TOKEN), an unknown query parameter, a conventional header that does not match (DOMAIN_MISMATCH). `details` name each problem by JSON path (`$.create.data.age`, `query:filter`).',
  },
  401: { name: 'Unauthorized', description: 'Missing or malformed credentials.', headers: ['WWW-Authenticate'] },
  403: { name: 'Forbidden', description: 'The principal or token subject is not allowed on this dataset, the gateway is disabled, or the endpoint is not open to this gateway.' },
  404: { name: 'NotFound', description: 'Unknown dataset, schema, record, link or endpoint (DATASET_NOT_FOUND, SCHEMA_NOT_FOUND, RECORD_NOT_FOUND, LINK_NOT_FOUND, NOT_FOUND).' },
  405: { name: 'MethodNotAllowed', description: 'The method is not served at this path; `Allow` lists the ones that are.', headers: ['Allow'] },
  406: { name: 'NotAcceptable', description: 'GET /graphql serves only the GraphiQL page (Accept: text/html); send queries with POST (NOT_ACCEPTABLE).' },
  408: { name: 'RequestTimeout', description: 'The request was not received in time.' },
  409: { name: 'Conflict', description: 'A record with this id exists (RECORD_EXISTS).' },
  413: { name: 'PayloadTooLarge', description: `The body is larger than ${DEFAULT_BODY_LIMIT} bytes (BODY_TOO_LARGE).` },
  415: { name: 'UnsupportedMediaType', description: 'The body is not `application/json`, not UTF-8, or compressed.' },
  421: { name: 'MisdirectedRequest', description: '`X-Environment-Uri` names another environment (ENVIRONMENT_MISMATCH).' },
  431: { name: 'HeadersTooLarge', description: 'The request headers are larger than 32 KiB.' },
  503: {
    name: 'ServiceUnavailable',
    description:
      'Retry after `Retry-After` seconds: the store cannot be reached (STORE_UNAVAILABLE), the dataset is being prepared (DATASET_NOT_READY) or its config cannot be served (DATASET_UNAVAILABLE), the server is busy (SERVER_BUSY), the ASYNC queue is full (ASYNC_QUEUE_FULL), raw SQL is busy or its database unreachable (RAW_SQL_BUSY, DATABASE_UNAVAILABLE), no environment config yet (NOT_READY).',
    headers: ['Retry-After'],
  },
};

/** Response headers: header name → [component name, header object]. */
export const HEADERS: Record<string, [string, Json]> = {
  'x-request-id': ['RequestId', { description: 'The request id: the caller’s UUID if it sent one, otherwise a new one. Quote it when reporting a problem.', schema: { type: 'string', format: 'uuid' } }],
  'Retry-After': ['RetryAfter', { description: 'Seconds to wait before retrying.', required: true, schema: { type: 'integer', minimum: 0 } }],
  'WWW-Authenticate': ['WWWAuthenticate', { description: 'The scheme the gateway expects.', schema: { type: 'string' } }],
  Allow: ['Allow', { description: 'The methods served at this path.', required: true, schema: { type: 'string' } }],
};

export function responseHeaders(extra: string[] = []): Json {
  return Object.fromEntries(['x-request-id', ...extra].map((name) => [name, ref('headers', HEADERS[name][0])]));
}

export function errorResponses(): Json {
  const out: Json = {};
  for (const { name, description, headers } of Object.values(ERROR_STATUSES)) {
    out[name] = { description, headers: responseHeaders(headers), content: { 'application/json': { schema: schemaRef('Error') } } };
  }
  out.Error = { description: 'Any other error: 500 INTERNAL (quote the request id), 501 NOT_AVAILABLE.', headers: responseHeaders(), content: { 'application/json': { schema: schemaRef('Error') } } };
  return out;
}

/** The conventional headers every endpoint accepts (README "Gateways and authentication"). */
export function headerParameters(env: EnvironmentConfig): Json {
  const executors = env.executors.map((e) => e.name);
  return {
    XDomain: { name: 'X-Domain', in: 'header', description: 'Must name the addressed dataset (else 400 DOMAIN_MISMATCH).', schema: { type: 'string' } },
    XBaseDomain: { name: 'X-Base-Domain', in: 'header', description: 'Must name the addressed dataset (else 400 DOMAIN_MISMATCH).', schema: { type: 'string' } },
    XEnvironmentUri: { name: 'X-Environment-Uri', in: 'header', description: 'Must name this environment (else 421 ENVIRONMENT_MISMATCH).', schema: { type: 'string' } },
    ExecutorName: {
      name: 'executor-name',
      in: 'header',
      description: 'A named executor of the environment (unknown: 400).',
      schema: executors.length ? { type: 'string', enum: executors } : { type: 'string' },
    },
    Tags: { name: 'tags', in: 'header', description: 'A JSON object (its text) passed to the store for observability, e.g. {"team":"billing"}.', schema: { type: 'string' }, example: '{"team":"billing"}' },
    XRequestId: { name: 'x-request-id', in: 'header', description: 'A UUID to use as the request id (anything else is replaced by a new one).', schema: { type: 'string' } },
  };
}
export const HEADER_PARAMETERS = ['XDomain', 'XBaseDomain', 'XEnvironmentUri', 'ExecutorName', 'Tags', 'XRequestId'];

export const GET_ERRORS = [400, 401, 403, 404, 405, 408, 421, 431, 503];
export const POST_ERRORS = [400, 401, 403, 404, 405, 408, 409, 413, 415, 421, 431, 503];
export const RAW_ERRORS = POST_ERRORS.filter((s) => s !== 409);

export function json(description: string, schema: Json, extraHeaders?: string[]): Json {
  return { description, headers: responseHeaders(extraHeaders), content: { 'application/json': { schema } } };
}

/** The error answers' schemas (`Error` is what every 4xx and 5xx carries). */
export function errorSchemas(): Json {
  return {
    Error: {
      type: 'object',
      description: 'Every error answer.',
      required: ['error', 'requestId'],
      properties: { error: schemaRef('ErrorBody'), requestId: { type: 'string', description: 'The x-request-id of the request.' } },
    },
    ErrorBody: {
      type: 'object',
      required: ['code', 'message', 'details'],
      properties: {
        code: { type: 'string', pattern: '^[A-Z][A-Z0-9_]*$', description: 'UPPER_SNAKE reason, e.g. INVALID_RECORD.' },
        message: { type: 'string' },
        details: { type: 'array', items: schemaRef('ErrorDetail') },
      },
    },
    ErrorDetail: {
      type: 'object',
      required: ['message'],
      properties: {
        path: { type: 'string', description: 'Where: a JSON path into the body (`$.create.data.age`) or `query:<name>`.' },
        message: { type: 'string' },
        position: { type: 'integer', description: 'For filters and sorts: the 1-based character position.' },
        action: { type: 'string', description: 'For batches: the failed action’s name.' },
      },
    },
  };
}

/** An operation with its error answers and the conventional header parameters (none for the admin API). */
export function operation(op: Json, success: Record<string, Json>, errors: number[], headerParameters: string[] = HEADER_PARAMETERS): Json {
  const responses: Json = { ...success };
  for (const status of errors) responses[String(status)] = ref('responses', ERROR_STATUSES[status].name);
  responses.default = ref('responses', 'Error');
  const parameters = [...((op.parameters as Json[] | undefined) ?? []), ...headerParameters.map((p) => ref('parameters', p))];
  return { ...op, parameters, responses };
}
