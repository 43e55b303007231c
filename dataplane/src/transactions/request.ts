/**
 * The `Transaction` record a caller creates: `{dataset: {id}, actions: [{locationUri, operation,
 * format, schema}], context}`. Every problem is a 400 naming its JSON path; locations are checked
 * here (import root, public https addresses) so a forbidden one never becomes a transaction.
 */
import type { DatasetConfig } from '../../../model/types.js';
import type { LoadOperation, StoredTransaction } from '../engine/contract.js';
import { badRequest } from '../engine/errors.js';
import { schemaDefOf } from '../engine/layout.js';
import { checkLocation, LocationError } from './locations.js';
import { FORMATS } from './readers.js';

export const OPERATIONS: readonly LoadOperation[] = ['UPSERT', 'INSERT', 'DELETE'];
export const MAX_ACTIONS = 100;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function onlyFields(value: Record<string, unknown>, allowed: string[], path: string): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) throw badRequest('UNKNOWN_FIELD', `a transaction has no field "${key}" here; accepted: ${allowed.join(', ')}`, [{ path: `${path}.${key}`, message: 'unknown field' }]);
  }
}

export async function parseTransaction(dataset: DatasetConfig, data: Record<string, unknown>, path: string, importRoot: string): Promise<StoredTransaction['spec']> {
  onlyFields(data, ['dataset', 'actions', 'context'], path);
  if (data.dataset !== undefined) {
    const id = isObject(data.dataset) ? data.dataset.id : undefined;
    if (id !== dataset.id) {
      throw badRequest('INVALID_FIELD', `"dataset" must be {"id": "${dataset.id}"}, the dataset addressed`, [{ path: `${path}.dataset`, message: 'another dataset' }]);
    }
  }
  if (data.context !== undefined && !isObject(data.context)) throw badRequest('INVALID_FIELD', '"context" must be an object', [{ path: `${path}.context`, message: 'must be an object' }]);
  const actions = data.actions;
  if (!Array.isArray(actions) || actions.length === 0 || actions.length > MAX_ACTIONS) {
    throw badRequest('INVALID_FIELD', `"actions" must be an array of 1 to ${MAX_ACTIONS} load actions`, [{ path: `${path}.actions`, message: 'must be a non-empty array' }]);
  }
  const parsed: StoredTransaction['spec']['actions'] = [];
  for (const [i, action] of actions.entries()) {
    const at = `${path}.actions[${i}]`;
    if (!isObject(action)) throw badRequest('INVALID_FIELD', 'each action must be an object', [{ path: at, message: 'not an object' }]);
    onlyFields(action, ['locationUri', 'operation', 'format', 'schema'], at);
    const text = (key: string, allowed?: readonly string[]) => {
      const value = action[key];
      if (typeof value !== 'string' || !value || value.length > 2048 || (allowed && !allowed.includes(value))) {
        throw badRequest('INVALID_FIELD', `"${key}" must be ${allowed ? `one of ${allowed.join(', ')}` : 'a non-empty string'}`, [
          { path: `${at}.${key}`, message: value === undefined ? 'required' : `invalid value ${JSON.stringify(value)?.slice(0, 100)}` },
        ]);
      }
      return value;
    };
    const schema = text('schema');
    if (!schemaDefOf(dataset, schema)) {
      throw badRequest('SCHEMA_NOT_FOUND', `dataset "${dataset.id}" has no schema "${schema}"`, [{ path: `${at}.schema`, message: 'unknown schema' }]);
    }
    const locationUri = text('locationUri');
    try {
      await checkLocation(locationUri, importRoot);
    } catch (err) {
      if (err instanceof LocationError) throw badRequest(err.code, err.message, [{ path: `${at}.locationUri`, message: err.code === 'LOCATION_FORBIDDEN' ? 'forbidden location' : 'invalid location' }]);
      throw err;
    }
    parsed.push({ locationUri, operation: text('operation', OPERATIONS) as LoadOperation, format: text('format', FORMATS), schema });
  }
  return { actions: parsed, context: (data.context as Record<string, unknown>) ?? {} };
}

/** A stored transaction as the API shows it (the `Transaction` record). */
export function transactionRecord(dataset: DatasetConfig, tx: StoredTransaction): Record<string, unknown> & { id: string } {
  return {
    id: tx.id,
    status: tx.status,
    dataset: { id: dataset.id },
    actions: tx.spec.actions.map((action, i) => ({ ...action, ...tx.progress[i] })),
    context: tx.spec.context,
    ...(tx.spec.executor ? { executor: { id: tx.spec.executor } } : {}),
    ...(tx.error ? { error: tx.error } : {}),
    createdAt: tx.createdAt,
    updatedAt: tx.updatedAt,
    ...(tx.startedAt ? { startedAt: tx.startedAt } : {}),
    ...(tx.finishedAt ? { finishedAt: tx.finishedAt } : {}),
    ...(tx.status === 'RUNNING' && tx.leaseOwner ? { lease: { owner: tx.leaseOwner, expiresAt: tx.leaseExpiresAt } } : {}),
  };
}
