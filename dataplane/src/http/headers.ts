/** The conventional request headers every endpoint accepts, checked against what was addressed. */
import type { DatasetConfig, EnvironmentConfig } from '../../../model/types.js';
import { ApiError, badRequest } from '../engine/errors.js';
import type { StatementContext } from '../engine/contract.js';

type Headers = Record<string, string | string[] | undefined>;

const single = (headers: Headers, name: string): string | undefined => {
  const value = headers[name];
  if (Array.isArray(value)) throw badRequest('INVALID_HEADER', `header ${name} must be given once`, [{ path: `header:${name}`, message: 'repeated' }]);
  return value;
};

const DOMAIN_HEADERS = ['x-domain', 'x-base-domain'] as const;

/** `X-Domain`, `X-Base-Domain` must name the addressed dataset; `X-Environment-Uri` this environment. */
export function checkAddressingHeaders(headers: Headers, env: EnvironmentConfig, dataset: DatasetConfig): void {
  for (const name of DOMAIN_HEADERS) {
    const value = single(headers, name);
    if (value !== undefined && value.trim() !== dataset.id) {
      throw badRequest('DOMAIN_MISMATCH', `${name} names dataset "${value.slice(0, 100)}" but the request addresses "${dataset.id}"`, [{ path: `header:${name}`, message: 'does not match the dataset' }]);
    }
  }
  const uri = single(headers, 'x-environment-uri');
  if (uri !== undefined && uri.trim() !== env.uri) {
    throw new ApiError(421, 'ENVIRONMENT_MISMATCH', `X-Environment-Uri names "${uri.slice(0, 200)}" but this data plane serves "${env.uri}"`, [
      { path: 'header:x-environment-uri', message: 'another environment' },
    ]);
  }
}

export const MAX_TAGS_HEADER = 4096;

/** The context of a request without `executor-name` or `tags` (most): shared and frozen, not built per request. */
const NO_CONTEXT: StatementContext = Object.freeze({});

/** `executor-name` routes to a named executor of the environment; `tags` is a JSON object. */

export function statementContext(headers: Headers, env: EnvironmentConfig): StatementContext {
  if (headers['executor-name'] === undefined && headers.tags === undefined) return NO_CONTEXT;
  const ctx: StatementContext = {};
  const executor = single(headers, 'executor-name');
  if (executor !== undefined) {
    const chosen = env.executors.find((e) => e.name === executor);
    if (!chosen) {
      const known = env.executors.map((e) => e.name).join(', ') || 'none';
      throw badRequest('UNKNOWN_EXECUTOR', `no executor "${executor.slice(0, 100)}" in this environment (executors: ${known})`, [{ path: 'header:executor-name', message: 'unknown executor' }]);
    }
    ctx.executor = executor;
    if (chosen.warehouse) ctx.warehouse = chosen.warehouse;
  }
  const tags = single(headers, 'tags');
  if (tags !== undefined) {
    if (tags.length > MAX_TAGS_HEADER) throw badRequest('INVALID_TAGS', `the tags header is longer than ${MAX_TAGS_HEADER} characters`, [{ path: 'header:tags', message: 'too long' }]);
    let parsed: unknown;
    try {
      parsed = JSON.parse(tags);
    } catch {
      throw badRequest('INVALID_TAGS', 'the tags header must be a JSON object', [{ path: 'header:tags', message: 'not valid JSON' }]);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw badRequest('INVALID_TAGS', 'the tags header must be a JSON object', [{ path: 'header:tags', message: 'not an object' }]);
    }
    ctx.tags = parsed as Record<string, unknown>;
  }
  return ctx;
}
