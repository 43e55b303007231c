/** graphql-ws clients for subscription tests: one that never retries, and taking the next events of a subscription. */
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';

export function wsUrl(dp: { url: string }, path = '/demo/graphql'): string {
  return dp.url.replace('http://', 'ws://') + path;
}

/** A graphql-ws client that does not retry (a close is what a test wants to see). */
export function gqlClient(dp: { url: string }, authorization: string | undefined = 'Proxy demo-admin', onClose?: (code: number, reason: string) => void): Client {
  return createClient({
    url: wsUrl(dp),
    webSocketImpl: WebSocket,
    connectionParams: authorization ? { Authorization: authorization } : undefined,
    retryAttempts: 0,
    lazy: false,
    onNonLazyError: () => undefined,
    on: { closed: (e) => onClose?.((e as { code: number }).code, String((e as { reason: string }).reason)) },
  });
}

/** The next `n` results of a subscription, or a failure after `ms`. */
export async function take<T>(iterator: AsyncIterator<T>, n: number, ms = 5000): Promise<T[]> {
  const out: T[] = [];
  const deadline = Date.now() + ms;
  while (out.length < n) {
    const left = deadline - Date.now();
    const next = await Promise.race([iterator.next(), new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), Math.max(left, 0)))]);
    if (next === 'timeout') throw new Error(`timed out after ${out.length} of ${n} events`);
    if (next.done) throw new Error(`ended after ${out.length} of ${n} events`);
    out.push(next.value);
  }
  return out;
}

