/**
 * The `Transaction` part of a dataset's OpenAPI document: bulk loads are records of the system
 * schema `Transaction`, created with the structured POST (`{"create": {"schema": "Transaction",
 * "data": …}}` → 202), read at `/Transaction/{id}` and listed at `/Transaction` (filter on
 * `status`, sort on `createdAt`). Pure; only for datasets whose location takes bulk loads.
 */
import type { DatasetConfig } from '../../../model/types.js';
import { FORMATS } from '../transactions/readers.js';
import { MAX_ACTIONS, OPERATIONS } from '../transactions/request.js';
import { GET_ERRORS, json, operation, ref, schemaRef, type Json } from './openapi-parts.js';

/** Transactions list at most this many per page (transactions/service.ts). */
const MAX_TRANSACTION_PAGE = 1000;
const STATUSES = ['PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED'];

export function transactionSchemas(dataset: DatasetConfig): Json {
  const schemaNames = Object.keys(dataset.schemas).sort();
  const counters = {
    rowsRead: { type: 'integer', minimum: 0, description: 'Rows read from the files so far.' },
    rowsWritten: { type: 'integer', minimum: 0, description: 'Rows written (created, replaced or deleted).' },
    rowsRejected: { type: 'integer', minimum: 0, description: 'Rows refused (invalid, or INSERT of an existing id); the first are in `errors`.' },
    bytesRead: { type: 'integer', minimum: 0 },
  };
  const action = {
    locationUri: { type: 'string', minLength: 1, maxLength: 2048, description: '`s3://bucket/key-or-prefix`, `file://` under the import root, or a public `https://` address.' },
    operation: { type: 'string', enum: [...OPERATIONS] },
    format: { type: 'string', enum: [...FORMATS] },
    schema: { type: 'string', enum: schemaNames, description: 'The record schema the rows load into; columns map to properties by name.' },
  };
  return {
    'Transaction-Action': { type: 'object', required: Object.keys(action), additionalProperties: false, properties: action },
    'Transaction-Data': {
      type: 'object',
      description: 'A bulk load: its actions run in order; rows are validated like any write.',
      required: ['actions'],
      additionalProperties: false,
      properties: {
        dataset: { type: 'object', required: ['id'], additionalProperties: false, properties: { id: { const: dataset.id } } },
        actions: { type: 'array', minItems: 1, maxItems: MAX_ACTIONS, items: schemaRef('Transaction-Action') },
        context: { type: 'object', description: 'Kept with the transaction, for the caller.' },
      },
    },
    'Transaction-Create': {
      type: 'object',
      required: ['schema', 'data'],
      additionalProperties: false,
      properties: { schema: { const: 'Transaction' }, id: { ...schemaRef('Id'), description: 'Default: a new UUID.' }, data: schemaRef('Transaction-Data') },
    },
    'Transaction-Progress': {
      type: 'object',
      description: 'An action with its progress (the counters appear once the action has started).',
      required: Object.keys(action),
      properties: {
        ...action,
        ...counters,
        errors: {
          type: 'array',
          description: 'The first problems, each with the row it came from.',
          items: {
            type: 'object',
            required: ['row', 'message'],
            properties: { row: { type: 'integer', description: '1-based row or line of the file.' }, source: { type: 'string', description: 'The file.' }, message: { type: 'string' }, path: { type: 'string' } },
          },
        },
      },
    },
    Transaction: {
      type: 'object',
      description: 'A bulk load and its progress.',
      required: ['id', 'status', 'dataset', 'actions', 'context', 'createdAt', 'updatedAt'],
      properties: {
        id: schemaRef('Id'),
        status: { type: 'string', enum: STATUSES },
        dataset: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } },
        actions: { type: 'array', items: schemaRef('Transaction-Progress') },
        context: { type: 'object' },
        executor: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } },
        error: { type: 'string', description: 'Why a FAILED transaction failed.' },
        createdAt: { type: 'string', format: 'date-time' },
        updatedAt: { type: 'string', format: 'date-time' },
        startedAt: { type: 'string', format: 'date-time' },
        finishedAt: { type: 'string', format: 'date-time' },
        lease: { type: 'object', description: 'RUNNING: the replica loading it.', properties: { owner: { type: 'string' }, expiresAt: { type: 'string', format: 'date-time' } } },
      },
    },
    'Transaction-Page': {
      type: 'object',
      required: ['items'],
      properties: { items: { type: 'array', items: schemaRef('Transaction') }, nextToken: { type: 'string', description: 'Absent on the last page.' } },
    },
  };
}

export function transactionPaths(): Json {
  return {
    '/Transaction': {
      get: operation(
        {
          tags: ['Transaction'],
          operationId: 'list_Transaction',
          summary: 'A page of transactions (bulk loads); create one with POST / {"create": {"schema": "Transaction", …}}',
          parameters: [
            { name: 'filter', in: 'query', description: "Only `status == 'PENDING'` (or RUNNING, SUCCEEDED, FAILED).", schema: { type: 'string' }, examples: { running: { value: "status == 'RUNNING'" } } },
            { name: 'sort', in: 'query', description: '`createdAt` (default) or `createdAt:desc`.', schema: { type: 'string', enum: ['createdAt', 'createdAt:asc', 'createdAt:desc'] } },
            { name: 'limit', in: 'query', description: 'Transactions per page.', schema: { type: 'integer', minimum: 1, maximum: MAX_TRANSACTION_PAGE, default: 100 } },
            ref('parameters', 'nextToken'),
          ],
        },
        { 200: json('The page; `nextToken` when more follow.', schemaRef('Transaction-Page')) },
        GET_ERRORS,
      ),
    },
    '/Transaction/{id}': {
      get: operation(
        { tags: ['Transaction'], operationId: 'read_Transaction', summary: 'A transaction: its status and each action’s progress', parameters: [ref('parameters', 'id')] },
        { 200: json('The transaction.', schemaRef('Transaction')) },
        GET_ERRORS,
      ),
    },
  };
}
