import { DEFAULT_PIPELINING_LIMITS, type PipeliningLimits } from '../../model/pipelining.js';

/** Numeric process settings from the environment: absent means the default, anything but a whole number is a start-up error. */
export function wholeNumberSetting(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < min) throw new Error(`${name} must be a whole number${min > 0 ? ` of at least ${min}` : ''}, got ${JSON.stringify(raw)}`);
  return value;
}

/** The data plane's resource bounds (README, "Process environment"). */
export interface ServingLimits {
  bodyBudgetBytes: number;
  requestTimeoutMs: number;
  asyncQueueLimit: number;
}

export function servingLimits(env: NodeJS.ProcessEnv = process.env): ServingLimits {
  return {
    bodyBudgetBytes: wholeNumberSetting(env, 'DAS_BODY_BUDGET_BYTES', 64 * 1024 * 1024, 1),
    requestTimeoutMs: wholeNumberSetting(env, 'DAS_REQUEST_TIMEOUT_MS', 30_000, 1),
    asyncQueueLimit: wholeNumberSetting(env, 'DAS_ASYNC_QUEUE_LIMIT', 20_000, 1),
  };
}

/**
 * Per-connection bounds on pipelined requests and unread answers (model/pipelining.ts), for the
 * data plane and the function gateway: DAS_MAX_PIPELINED_REQUESTS, DAS_MAX_UNSENT_RESPONSE_BYTES,
 * DAS_SEND_TIMEOUT_MS.
 */
export function pipeliningLimits(env: NodeJS.ProcessEnv = process.env): PipeliningLimits {
  return {
    maxPipelinedRequests: wholeNumberSetting(env, 'DAS_MAX_PIPELINED_REQUESTS', DEFAULT_PIPELINING_LIMITS.maxPipelinedRequests, 1),
    maxUnsentResponseBytes: wholeNumberSetting(env, 'DAS_MAX_UNSENT_RESPONSE_BYTES', DEFAULT_PIPELINING_LIMITS.maxUnsentResponseBytes, 1),
    sendTimeoutMs: wholeNumberSetting(env, 'DAS_SEND_TIMEOUT_MS', DEFAULT_PIPELINING_LIMITS.sendTimeoutMs, 1),
  };
}
