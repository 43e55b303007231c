/**
 * What every driver's bulk-load store does in its constructor: each BulkLoadStore method reports
 * what the store answered as a store outcome, never a bare client error. The driver says how an
 * error becomes an outcome (it may depend on the method and its arguments).
 */
import type { BulkLoadStore } from '../engine/contract.js';

export const BULK_LOAD_METHODS = ['create', 'get', 'list', 'claim', 'renew', 'advance', 'finish', 'loadChunk'] as const;
export type BulkLoadMethod = (typeof BULK_LOAD_METHODS)[number];

/** Replaces `store`'s methods with ones that throw `outcome(err, name, args)` for whatever the original throws. */
export function reportOutcomes(store: BulkLoadStore, outcome: (err: unknown, name: BulkLoadMethod, args: unknown[]) => unknown): void {
  for (const name of BULK_LOAD_METHODS) {
    const method = (store[name] as (...args: unknown[]) => Promise<unknown>).bind(store);
    (store as unknown as Record<string, unknown>)[name] = async (...args: unknown[]) => {
      try {
        return await method(...args);
      } catch (err) {
        throw outcome(err, name, args);
      }
    };
  }
}
