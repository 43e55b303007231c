/**
 * Connection reuse for client-node requests. client-node 1.x builds a new https.Agent for every
 * request, so every request pays a TLS handshake (~15 ms against a local API server). This
 * middleware swaps in one keep-alive agent with the same TLS settings; it is rebuilt when those
 * settings change (a rotated client certificate). Proxy agents are left alone.
 */
import { Agent } from 'node:https';
import type { Middleware, RequestContext, ResponseContext } from './object-client.js';

const TLS_KEYS = ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername'] as const;

/** The TLS settings as text (client-node reads certificates afresh for each request). */
function fingerprintOf(options: Record<string, unknown>): string {
  const text = (value: unknown): string => (Buffer.isBuffer(value) ? value.toString('base64') : Array.isArray(value) ? value.map(text).join(',') : String(value));
  return TLS_KEYS.map((key) => text(options[key])).join('|');
}

export function keepAliveAgents(): Middleware {
  let shared: { agent: Agent; fingerprint: string } | undefined;
  return {
    async pre(context: RequestContext): Promise<RequestContext> {
      const fresh = context.getAgent();
      if (!(fresh instanceof Agent) || fresh.constructor !== Agent) return context;
      const options = (fresh as Agent & { options: Record<string, unknown> }).options;
      const fingerprint = fingerprintOf(options);
      if (shared?.fingerprint !== fingerprint) {
        shared?.agent.destroy();
        shared = { agent: new Agent({ ...options, keepAlive: true, maxSockets: 16 }), fingerprint };
      }
      context.setAgent(shared.agent);
      return context;
    },
    async post(context: ResponseContext): Promise<ResponseContext> {
      return context;
    },
  };
}
