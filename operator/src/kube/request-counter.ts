/** Client middleware that counts every API request by verb and resource (the write-request budget). */
import type { Counter } from 'prom-client';
import { resourceOfPath } from '../metrics.js';
import type { Middleware, RequestContext, ResponseContext } from './object-client.js';

export function requestCounter(counter: Counter<'verb' | 'resource'>): Middleware {
  return {
    async pre(context: RequestContext): Promise<RequestContext> {
      const url = new URL(context.getUrl());
      counter.inc({ verb: context.getHttpMethod().toLowerCase(), resource: resourceOfPath(url.pathname) });
      return context;
    },
    async post(context: ResponseContext): Promise<ResponseContext> {
      return context;
    },
  };
}
